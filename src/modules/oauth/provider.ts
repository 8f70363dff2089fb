// The oidc-provider configuration: what flowgate's identity provider offers and how.
import crypto from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { Provider, interactionPolicy } from 'oidc-provider';
import type { Config } from '../../config.ts';
import { VALID_SCOPES } from '../access/scopes.ts';
import { messagePage } from './html.ts';
import type { OAuthAccount } from './index.ts';

export const OIDC_SCOPES = ['openid', 'email', 'offline_access'] as const;
/** Every scope a client may request: OIDC scopes plus the API scopes of the seed's table. */
export const SUPPORTED_SCOPES: readonly string[] = [...OIDC_SCOPES, ...VALID_SCOPES];
export const API_SCOPES: ReadonlySet<string> = new Set(VALID_SCOPES);

export const ROUTES = {
  authorization: '/authorize',
  token: '/token',
  userinfo: '/userinfo',
  jwks: '/jwks',
  revocation: '/revoke',
  introspection: '/introspect',
  pushed_authorization_request: '/par',
  end_session: '/logout',
} as const;

/** Endpoints that only answer POST (RFC 6749 3.2, RFC 7009, RFC 7662, RFC 9126). */
const POST_ONLY = new Set<string>([ROUTES.token, ROUTES.revocation, ROUTES.introspection, ROUTES.pushed_authorization_request]);

export const CLOCK_TOLERANCE_SECONDS = 5;
export const AUTHORIZATION_CODE_TTL = 60;
export const INTERACTION_TTL = 30 * 60;
export const SESSION_TTL = 24 * 3600;

export interface BuildProviderOptions {
  issuer: string;
  /** Path of the interaction pages as the browser sees them, without the uid. */
  interactionPath: string;
  config: Config;
  adapter: new (name: string) => unknown;
  jwks: { keys: Array<Record<string, unknown>> };
  cookieKeys: string[];
  /** HMAC key deriving a refresh token's successor id from its own id. */
  successorKey: Buffer;
  accounts: { findById(id: string): Promise<OAuthAccount | null> };
  logger: FastifyBaseLogger;
}

/**
 * The id of the refresh token that replaces `predecessorId` on rotation. Derived, not random,
 * so that every repeat of a refresh inside the grace window (on any instance) yields the same
 * successor, and a grant's chain of refresh tokens never forks.
 */
export function successorId(key: Buffer | crypto.KeyObject, predecessorId: string): string {
  return crypto.createHmac('sha256', key).update('flowgate refresh successor v1\0').update(predecessorId).digest('base64url');
}

function oauthJsonError(ctx: { status: number; body: unknown; set(k: string, v: string): void; type: string }, status: number, error: string, description: string): void {
  ctx.status = status;
  ctx.set('cache-control', 'no-store');
  ctx.type = 'application/json; charset=utf-8';
  ctx.body = { error, error_description: description };
}

function loginPolicy() {
  const policy = interactionPolicy.base();
  // A browser session whose account was disabled (or deleted) since: sign in again
  // (login_required for prompt=none) instead of carrying on without an account.
  policy.get('login')!.checks.push(new interactionPolicy.Check(
    'account_unavailable',
    'the signed-in account is not available',
    'login_required',
    (ctx) => Boolean(ctx.oidc.session?.accountId) && !ctx.oidc.account,
  ));
  return policy;
}

export function buildProvider(o: BuildProviderOptions): Provider {
  const { config, accounts, logger } = o;
  const supported = new Set(SUPPORTED_SCOPES);

  const configuration: Record<string, unknown> = {
    adapter: o.adapter,
    jwks: o.jwks,
    clients: [],
    async findAccount(_ctx: unknown, sub: string) {
      const account = await accounts.findById(sub);
      if (!account || account.disabled) return undefined;
      return {
        accountId: account.id,
        async claims() {
          return { sub: account.id, email: account.email, email_verified: true };
        },
      };
    },
    claims: { acr: null, auth_time: null, iss: null, sid: null, openid: ['sub'], email: ['email', 'email_verified'] },
    scopes: [...SUPPORTED_SCOPES],
    // ID tokens carry the claims of their scopes (email) even when an access token is issued.
    conformIdTokenClaims: false,
    responseTypes: ['code'],
    clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'ES256',
    },
    allowOmittingSingleRegisteredRedirectUri: false,
    clockTolerance: CLOCK_TOLERANCE_SECONDS,
    pkce: {
      // S256 only (oidc-provider 9 has no "plain"); required for public clients.
      required: (_ctx: unknown, client: { clientAuthMethod: string }) => client.clientAuthMethod === 'none',
    },
    routes: ROUTES,
    features: {
      devInteractions: { enabled: false },
      userinfo: { enabled: true },
      revocation: {
        enabled: true,
        async allowedPolicy(_ctx: unknown, client: { clientId: string }, token: { clientId?: string }) {
          // Another client's token is not revoked, and not told apart from an unknown one.
          return token.clientId === client.clientId;
        },
      },
      introspection: {
        enabled: true,
        async allowedPolicy(_ctx: unknown, client: { clientId: string }, token: { clientId?: string }) {
          return token.clientId === client.clientId;
        },
      },
      resourceIndicators: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      dPoP: { enabled: false },
      pushedAuthorizationRequests: { enabled: true },
      registration: { enabled: false },
      claimsParameter: { enabled: false },
    },
    enabledJWA: {
      idTokenSigningAlgValues: ['ES256', 'RS256'],
      userinfoSigningAlgValues: ['ES256', 'RS256'],
      introspectionSigningAlgValues: ['ES256', 'RS256'],
      authorizationSigningAlgValues: ['ES256', 'RS256'],
      requestObjectSigningAlgValues: ['ES256', 'RS256'],
      clientAuthSigningAlgValues: ['ES256', 'RS256'],
    },
    ttl: {
      AccessToken: config.oauthAccessTokenTtl,
      IdToken: config.oauthAccessTokenTtl,
      AuthorizationCode: AUTHORIZATION_CODE_TTL,
      Interaction: INTERACTION_TTL,
      Session: SESSION_TTL,
      // A grant lives as long as the longest refresh-token chain it may carry.
      Grant: config.oauthRefreshTokenAbsoluteTtl + 3600,
      RefreshToken(_ctx: unknown, token: { iiat?: number }) {
        // Sliding lifetime per rotation, capped by the absolute ceiling counted from the first
        // refresh token of the grant (iiat is copied along the chain).
        const now = Math.floor(Date.now() / 1000);
        const first = typeof token.iiat === 'number' ? token.iiat : now;
        const left = config.oauthRefreshTokenAbsoluteTtl - (now - first);
        return Math.max(1, Math.min(config.oauthRefreshTokenTtl, left));
      },
    },
    // The seed asks for a refresh token with scope "email openid", without offline_access.
    async issueRefreshToken(_ctx: unknown, client: { grantTypeAllowed(g: string): boolean }) {
      return client.grantTypeAllowed('refresh_token');
    },
    rotateRefreshToken: true,
    // Tokens do not end with the browser session at the provider.
    async expiresWithSession() {
      return false;
    },
    // Consent is implied for clients created by staff: every authorization gets a fresh grant
    // holding the requested (supported) scopes. One grant = one authorization = one refresh
    // token chain, so revoking a grant (refresh-token reuse, code reuse) ends exactly that.
    async loadExistingGrant(ctx: any) {
      const { oidc } = ctx;
      const accountId: string | undefined = oidc.session?.accountId;
      if (!accountId || !oidc.client) return undefined;
      const grant = new oidc.provider.Grant({ accountId, clientId: oidc.client.clientId });
      const scopes = [...(oidc.requestParamScopes as Set<string>)].filter((s) => supported.has(s));
      if (scopes.length) grant.addOIDCScope(scopes.join(' '));
      await grant.save();
      return grant;
    },
    interactions: {
      policy: loginPolicy(),
      url: (_ctx: unknown, interaction: { uid: string }) => `${o.interactionPath}/${encodeURIComponent(interaction.uid)}`,
    },
    cookies: {
      names: { session: '_fg_session', interaction: '_fg_interaction', resume: '_fg_resume' },
      long: { httpOnly: true, sameSite: 'lax', signed: true },
      short: { httpOnly: true, sameSite: 'lax', signed: true },
      keys: o.cookieKeys,
    },
    clientBasedCORS(ctx: any, origin: string, client: { redirectUris: string[]; clientAuthMethod: string }) {
      if (origin === 'null') return false;
      if (ctx.oidc.route !== 'userinfo' && client.clientAuthMethod !== 'none') return false;
      return client.redirectUris.some((uri) => URL.parse(uri)?.origin === origin);
    },
    async renderError(ctx: any, out: { error?: string; error_description?: string }) {
      ctx.type = 'html';
      ctx.set('cache-control', 'no-store');
      ctx.set('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'");
      ctx.body = messagePage(
        'Sign-in failed',
        'The application sent a sign-in request that flowgate cannot accept.',
        `${out.error ?? 'error'}${out.error_description ? `: ${out.error_description}` : ''}`,
      );
    },
  };

  const provider = new Provider(o.issuer, configuration);
  // Request URLs are rewritten to the configured base URL before they reach the provider (see
  // index.ts), so X-Forwarded-* set there are trusted; nothing else sets them.
  provider.proxy = true;

  // Rotated refresh tokens get a derived id (see successorId). The key as a KeyObject, made
  // once: createHmac with a Buffer imports the key on every call, which is most of the cost of
  // the HMAC (about 11 us against 2 us; visible in the refresh benchmark's profile).
  const successorKey = crypto.createSecretKey(o.successorKey);
  const RefreshToken = provider.RefreshToken;
  const randomId = RefreshToken.prototype.generateTokenId as (this: unknown) => string;
  Object.defineProperty(RefreshToken.prototype, 'generateTokenId', {
    configurable: true,
    writable: true,
    value: function generateTokenId(this: unknown): string {
      const rotated = Provider.ctx?.oidc?.entities?.RotatedRefreshToken as { jti?: string } | undefined;
      if (rotated?.jti) return successorId(successorKey, rotated.jti);
      return randomId.call(this);
    },
  });

  provider.use(async (ctx, next) => {
    if (POST_ONLY.has(ctx.path) && ctx.method !== 'POST' && ctx.method !== 'OPTIONS') {
      ctx.set('allow', 'POST');
      oauthJsonError(ctx, 405, 'invalid_request', `${ctx.path.slice(1)} endpoint only accepts POST`);
      return;
    }
    await next();
    if (ctx.status === 404 && (ctx.body === undefined || ctx.body === null)) {
      oauthJsonError(ctx, 404, 'not_found', 'unknown endpoint');
    }
  });

  // Logging: event names and identifiers only, never a token, secret or password.
  provider.on('server_error', (_ctx: unknown, err: Error) => {
    logger.error({ err: { name: err?.name, message: err?.message, stack: err?.stack } }, 'oauth provider server error');
  });
  provider.on('grant.error', (ctx: any, err: { error?: string; error_detail?: string; error_description?: string }) => {
    const rt = ctx?.oidc?.entities?.RefreshToken;
    if (err?.error_detail === 'refresh token already used' || err?.error_description === 'refresh token already used') {
      logger.warn({ clientId: ctx?.oidc?.client?.clientId, grantId: rt?.grantId }, 'oauth refresh token reuse: grant revoked');
    } else {
      logger.debug({ clientId: ctx?.oidc?.client?.clientId, error: err?.error, detail: err?.error_detail }, 'oauth token request refused');
    }
  });
  provider.on('grant.revoked', (ctx: any, grantId: string) => {
    logger.info({ clientId: ctx?.oidc?.client?.clientId, grantId }, 'oauth grant revoked');
  });
  provider.on('error', (err: Error) => {
    logger.error({ err: { name: err?.name, message: err?.message } }, 'oauth provider error');
  });
  return provider;
}
