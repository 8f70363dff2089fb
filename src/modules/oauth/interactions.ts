// The login pages of the authorization endpoint (Fastify routes, plain HTML forms).
//
//   GET  /oauth2/interaction/:uid   the form (or, for a consent prompt, implied consent)
//   POST /oauth2/interaction/:uid   email + password + csrf
//
// CSRF: double submit bound to the interaction. GET sets a random nonce in an HttpOnly,
// SameSite=Strict cookie scoped to this interaction's path; the form carries
// HMAC(key, uid.nonce); POST recomputes it from the cookie. (The provider's own interaction
// cookie is SameSite=Lax as well, so a cross-site POST finds no interaction at all.)
import crypto from 'node:crypto';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Provider } from 'oidc-provider';
import { verifyPassword } from '../identity/password.ts';
import { loginPage, messagePage, PRODUCT_NAME } from './html.ts';
import { FailureLimiter } from './rate-limit.ts';
import type { OAuthAccount } from './index.ts';

export const BAD_CREDENTIALS = 'E-mail or password is incorrect.';
const CSRF_COOKIE = '_fg_login_csrf';
const WINDOW_MS = 15 * 60 * 1000;

export interface LoginLimits {
  perAccount: number;
  perIp: number;
  windowMs: number;
}
export const DEFAULT_LOGIN_LIMITS: LoginLimits = { perAccount: 5, perIp: 20, windowMs: WINDOW_MS };

export interface InteractionDeps {
  provider(): Provider;
  accounts: {
    findById(id: string): Promise<OAuthAccount | null>;
    findByEmail(email: string): Promise<OAuthAccount | null>;
  };
  csrfKey: Buffer;
  /** The interaction pages' path as the browser sees it (base path + /oauth2/interaction). */
  externalPath: string;
  secureCookies: boolean;
  limits: LoginLimits;
  logger: FastifyBaseLogger;
}

const HTML_HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  // No scripts at all. (No form-action: after the POST the browser follows redirects to the
  // client's redirect URI, which form-action would block in some browsers.)
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
};

function sendHtml(reply: FastifyReply, status: number, html: string): FastifyReply {
  return reply.code(status).headers(HTML_HEADERS).send(html);
}

function single(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function readCookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i < 0) continue;
    if (part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

function sameText(a: string, b: string): boolean {
  const x = crypto.createHash('sha256').update(a).digest();
  const y = crypto.createHash('sha256').update(b).digest();
  return crypto.timingSafeEqual(x, y);
}

const expiredPage = () => messagePage(
  'Sign-in expired',
  'This sign-in page has expired or was already used.',
  'Go back to the application and start signing in again.',
);

export function registerInteractionRoutes(scope: FastifyInstance, deps: InteractionDeps): void {
  const byAccount = new FailureLimiter(deps.limits.perAccount, deps.limits.windowMs);
  const byIp = new FailureLimiter(deps.limits.perIp, deps.limits.windowMs);
  const sweep = setInterval(() => {
    byAccount.sweep();
    byIp.sweep();
  }, 60_000);
  sweep.unref();
  scope.addHook('onClose', async () => clearInterval(sweep));

  const csrfToken = (uid: string, nonce: string) =>
    crypto.createHmac('sha256', deps.csrfKey).update(`${uid}.${nonce}`).digest('base64url');

  function csrfCookie(uid: string, nonce: string, maxAge: number): string {
    const path = `${deps.externalPath}/${encodeURIComponent(uid)}`;
    return `${CSRF_COOKIE}=${nonce}; Path=${path}; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${deps.secureCookies ? '; Secure' : ''}`;
  }

  async function details(request: FastifyRequest, reply: FastifyReply, uid: string): Promise<any | null> {
    try {
      const d = await deps.provider().interactionDetails(request.raw, reply.raw);
      return d?.uid === uid ? d : null;
    } catch {
      return null;
    }
  }

  async function clientName(clientId: unknown): Promise<string> {
    if (typeof clientId !== 'string') return 'the application';
    try {
      const client = await deps.provider().Client.find(clientId);
      return client?.clientName || clientId;
    } catch {
      return 'the application';
    }
  }

  async function companyOfSession(d: any): Promise<string | null> {
    const accountId = d?.session?.accountId;
    if (typeof accountId !== 'string') return null;
    const account = await deps.accounts.findById(accountId);
    return account && !account.disabled ? account.companyName : null;
  }

  /** Implied consent for clients created by staff: grant what the prompt says is missing. */
  async function impliedConsent(request: FastifyRequest, reply: FastifyReply, d: any): Promise<FastifyReply> {
    const provider = deps.provider();
    const accountId = d.session?.accountId;
    let grant = d.grantId ? await provider.Grant.find(d.grantId) : undefined;
    grant ??= new provider.Grant({ accountId, clientId: d.params.client_id });
    const det = d.prompt.details ?? {};
    if (Array.isArray(det.missingOIDCScope) && det.missingOIDCScope.length) grant.addOIDCScope(det.missingOIDCScope.join(' '));
    if (Array.isArray(det.missingOIDCClaims) && det.missingOIDCClaims.length) grant.addOIDCClaims(det.missingOIDCClaims);
    if (det.missingResourceScopes && typeof det.missingResourceScopes === 'object') {
      for (const [indicator, scopes] of Object.entries(det.missingResourceScopes)) {
        if (Array.isArray(scopes)) grant.addResourceScope(indicator, scopes.join(' '));
      }
    }
    const grantId = await grant.save();
    const returnTo = await provider.interactionResult(request.raw, reply.raw, { consent: { grantId } }, { mergeWithLastSubmission: true });
    return reply.code(303).header('location', returnTo).header('cache-control', 'no-store').send();
  }

  async function renderForm(reply: FastifyReply, request: FastifyRequest, d: any, uid: string, status: number, extra: {
    error?: string; email?: string; companyName?: string | null;
  } = {}): Promise<FastifyReply> {
    let nonce = readCookie(request, CSRF_COOKIE);
    if (!nonce || !/^[A-Za-z0-9_-]{22}$/.test(nonce)) nonce = crypto.randomBytes(16).toString('base64url');
    reply.header('set-cookie', csrfCookie(uid, nonce, 30 * 60));
    return sendHtml(reply, status, loginPage({
      action: `${deps.externalPath}/${encodeURIComponent(uid)}`,
      csrfToken: csrfToken(uid, nonce),
      clientName: await clientName(d.params?.client_id),
      email: extra.email,
      error: extra.error,
      companyName: extra.companyName !== undefined ? extra.companyName : await companyOfSession(d),
    }));
  }

  scope.get<{ Params: { uid: string } }>('/oauth2/interaction/:uid', async (request, reply) => {
    const { uid } = request.params;
    const d = await details(request, reply, uid);
    if (!d) return sendHtml(reply, 400, expiredPage());
    if (d.prompt?.name === 'consent' && d.session?.accountId) return impliedConsent(request, reply, d);
    if (d.prompt?.name !== 'login') return sendHtml(reply, 400, expiredPage());
    return renderForm(reply, request, d, uid, 200);
  });

  scope.post<{ Params: { uid: string } }>('/oauth2/interaction/:uid', async (request, reply) => {
    const { uid } = request.params;
    const d = await details(request, reply, uid);
    if (!d) return sendHtml(reply, 400, expiredPage());
    if (d.prompt?.name !== 'login') return sendHtml(reply, 400, expiredPage());

    const body = (request.body && typeof request.body === 'object' ? request.body : {}) as Record<string, unknown>;
    const email = single(body.email)?.trim() ?? '';
    const password = single(body.password) ?? '';
    const csrf = single(body.csrf) ?? '';
    const nonce = readCookie(request, CSRF_COOKIE);

    if (!nonce || !csrf || !sameText(csrf, csrfToken(uid, nonce))) {
      return renderForm(reply, request, d, uid, 403, {
        email, error: 'This sign-in form has expired. Please enter your e-mail and password again.',
      });
    }

    const ip = request.ip ?? 'unknown';
    const accountKey = email.toLowerCase();
    const wait = Math.max(byIp.retryAfter(ip), accountKey ? byAccount.retryAfter(accountKey) : 0);
    if (wait > 0) {
      reply.header('retry-after', String(wait));
      const minutes = Math.ceil(wait / 60);
      return sendHtml(reply, 429, messagePage(
        'Too many attempts',
        'Too many failed sign-in attempts.',
        `Please wait ${minutes} minute${minutes === 1 ? '' : 's'} before trying again.`,
      ));
    }

    if (!email || !password) {
      return renderForm(reply, request, d, uid, 400, { email, error: 'Enter your e-mail and password.' });
    }

    const account = email.length <= 320 ? await deps.accounts.findByEmail(email) : null;
    const ok = await verifyPassword(account?.passwordHash ?? null, password);
    if (!account || !ok) {
      byIp.fail(ip);
      byAccount.fail(accountKey);
      deps.logger.info({ reason: 'bad_credentials' }, 'oauth login failed');
      return renderForm(reply, request, d, uid, 401, { email, error: BAD_CREDENTIALS, companyName: null });
    }
    if (account.disabled) {
      deps.logger.info({ userId: account.id, reason: 'disabled' }, 'oauth login refused');
      return renderForm(reply, request, d, uid, 403, {
        email,
        error: `This account is disabled. Ask an administrator of ${account.companyName} to enable it.`,
        companyName: account.companyName,
      });
    }
    byAccount.reset(accountKey);

    const returnTo = await deps.provider().interactionResult(request.raw, reply.raw, {
      login: { accountId: account.id, remember: false },
    }, { mergeWithLastSubmission: false });
    deps.logger.info({ userId: account.id, clientId: d.params?.client_id }, 'oauth login');
    return reply.code(303)
      .header('set-cookie', csrfCookie(uid, '', 0))
      .header('location', returnTo)
      .header('cache-control', 'no-store')
      .send();
  });
}

export { PRODUCT_NAME };
