// flowgate as its own OAuth 2.0 / OpenID Connect identity provider (issue 4).
//
// oidc-provider (panva) mounted with @fastify/middie under /oauth2 (issuer `${baseUrl}/oauth2`),
// storage on flowgate's database (adapter.ts), clients from `flowgate clients` (clients.ts),
// signing keys from the database (keys.ts), login pages as Fastify routes (interactions.ts).
import querystring from 'node:querystring';
import type { IncomingMessage, ServerResponse } from 'node:http';
import middie from '@fastify/middie';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { PostgresAdapter, sql } from 'kysely';
import type { Provider } from 'oidc-provider';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/index.ts';
import type { Keyring } from '../../crypto/keyring.ts';
import { compiledOnce } from './db.ts';
import { deleteExpired, hashTokenId, makeAdapter } from './adapter.ts';
import { ClientStore, type ClientInfo, type CreateClientInput } from './clients.ts';
import { SigningKeys, type SigningKeyInfo } from './keys.ts';
import { API_SCOPES, buildProvider, CLOCK_TOLERANCE_SECONDS, ROUTES } from './provider.ts';
import { DEFAULT_LOGIN_LIMITS, registerInteractionRoutes, type LoginLimits } from './interactions.ts';

export { OAuthClientError, validateRedirectUri } from './clients.ts';
export { BAD_CREDENTIALS } from './interactions.ts';
export { SUPPORTED_SCOPES, ROUTES } from './provider.ts';
export type { ClientInfo, CreateClientInput, SigningKeyInfo };

export interface OAuthAccount {
  id: string;
  email: string;
  companyId: string;
  companyName: string;
  disabled: boolean;
  passwordHash: string | null;
  /** For the Principal of the /v1 API (verifyAccessToken passes the account through). */
  role?: 'admin' | 'member';
}

export interface OAuthOptions {
  /** Seconds between publishing a rotated signing key and signing with it (default 3600). */
  signingKeyActivationDelaySeconds?: number;
  /** Failed-login limits (default 5 per account and 20 per IP in 15 minutes). */
  loginLimits?: LoginLimits;
  /** How often expired rows are deleted (default 10 minutes). */
  cleanupIntervalMs?: number;
  /** How often the signing-key table is checked for changes by other processes (default 30 s). */
  keyCheckIntervalMs?: number;
  /** How long client metadata is cached in-process (default 5000 ms; changes by this process apply at once). */
  clientCacheMs?: number;
}

export interface OAuthDeps {
  config: Config;
  db: Db;
  keyring: Keyring;
  logger: FastifyBaseLogger;
  /** flowgate's users (tables users and companies, which verifyAccessToken also reads directly). */
  accounts: {
    findById(id: string): Promise<OAuthAccount | null>;
    findByEmail(email: string): Promise<OAuthAccount | null>;
  };
  options?: OAuthOptions;
}

export interface VerifiedAccessToken {
  userId: string;
  clientId: string;
  grantId: string;
  /** API scopes granted, or null: no API scope requested = the user's full rights. */
  scopes: string[] | null;
  expiresAt: string;
  /** The user (checked: exists, company exists, not disabled), read with the token from users and companies. */
  account: OAuthAccount;
}

export interface OAuthService {
  readonly issuer: string;
  /** Validates an opaque access token for the /v1 API; null when unknown, expired, revoked, grant revoked or account disabled. */
  verifyAccessToken(token: string): Promise<VerifiedAccessToken | null>;
  clients: {
    create(input: CreateClientInput): Promise<{ clientId: string; clientSecret: string | null }>;
    list(): Promise<ClientInfo[]>;
    rotateSecret(clientId: string): Promise<{ clientSecret: string }>;
    delete(clientId: string): Promise<boolean>;
  };
  signingKeys: {
    /** Publishes a new ES256 and RS256 key, signing from activatesAt on (immediate: now). */
    rotate(opts?: { immediate?: boolean }): Promise<{ kid: string; kids: string[]; activatesAt: string }>;
    list(): Promise<SigningKeyInfo[]>;
    /** Rebuilds the provider if the key set changed (done periodically on its own). */
    reload(): Promise<boolean>;
  };
  /** Deletes expired rows and unpublished keys now (also runs periodically). */
  cleanup(): Promise<{ models: number; keys: number }>;
  /** The current oidc-provider instance (replaced when the signing keys change). */
  provider(): Provider;
  close(): Promise<void>;
}

/** The service without the HTTP part: for the CLI (clients, key rotation) on a separate process. */
export function createOAuthAdmin(deps: Pick<OAuthDeps, 'db' | 'keyring' | 'config'> & { options?: OAuthOptions }) {
  const db = deps.db;
  const clients = new ClientStore(db, deps.keyring, { cacheMs: deps.options?.clientCacheMs });
  const keys = new SigningKeys(db, deps.keyring, {
    signedTokenTtlSeconds: deps.config.oauthAccessTokenTtl,
    clockToleranceSeconds: CLOCK_TOLERANCE_SECONDS,
    activationDelaySeconds: deps.options?.signingKeyActivationDelaySeconds ?? 3600,
  });
  return { clients, keys };
}

/** Provider paths (below /oauth2) as metric route labels: known endpoints, else one catch-all. */
const METRIC_ROUTES = new Set<string>([...Object.values(ROUTES), '/.well-known/openid-configuration']);
export function metricsRoute(url: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (METRIC_ROUTES.has(path)) return `/oauth2${path}`;
  // Resumed authorizations after the login page: /authorize/<uid>.
  if (path.startsWith(`${ROUTES.authorization}/`)) return `/oauth2${ROUTES.authorization}/:uid`;
  return '/oauth2/*';
}

const ACCESS_TOKEN_RE = /^[A-Za-z0-9_-]{20,256}$/;

/** Registers the provider under /oauth2 (issuer `${baseUrl}/oauth2`) plus the login interaction pages. */
export async function registerOAuth(app: FastifyInstance, deps: OAuthDeps): Promise<OAuthService> {
  const { config, keyring, logger } = deps;
  const options = deps.options ?? {};
  const db = deps.db;
  const base = new URL(config.baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');
  const issuer = `${config.baseUrl.replace(/\/+$/, '')}/oauth2`;
  const { clients, keys } = createOAuthAdmin({ db: deps.db, keyring, config, options });

  await keys.ensure();
  const [cookieKey, successorKey, csrfKey] = await Promise.all([
    keyring.namedSecret('oauth-cookie-key'),
    keyring.namedSecret('oauth-refresh-successor-key'),
    keyring.namedSecret('oauth-login-csrf-key'),
  ]);
  const Adapter = makeAdapter({ db, clients, graceMs: config.oauthRefreshGraceSeconds * 1000 });

  interface Current { provider: Provider; handler: (req: IncomingMessage, res: ServerResponse) => void; signature: string; nextChangeAt: number | null }
  const build = async (): Promise<Current> => {
    const loaded = await keys.load();
    const provider = buildProvider({
      issuer,
      interactionPath: `${basePath}/oauth2/interaction`,
      config,
      adapter: Adapter,
      jwks: loaded.jwks,
      cookieKeys: [cookieKey.toString('base64url')],
      successorKey,
      accounts: deps.accounts,
      logger,
    });
    return { provider, handler: provider.callback(), signature: loaded.signature, nextChangeAt: loaded.nextChangeAt };
  };
  let current = await build();
  clients.validate = (metadata) => current.provider.Client.validate(metadata);
  clients.onDecryptError = (clientId, err) => logger.error({ clientId, err: { name: err.name, message: err.message } }, 'oauth client secret cannot be decrypted');

  let tableSignature = await keys.tableSignature();
  let reloading: Promise<boolean> | null = null;
  const reload = (): Promise<boolean> => {
    reloading ??= (async () => {
      try {
        const sig = await keys.tableSignature();
        const due = current.nextChangeAt !== null && Date.now() >= current.nextChangeAt;
        if (sig === tableSignature && !due) return false;
        const next = await build();
        tableSignature = sig;
        const changed = next.signature !== current.signature;
        current = next;
        if (changed) logger.info({ keys: next.signature }, 'oauth signing keys reloaded');
        return changed;
      } finally {
        reloading = null;
      }
    })();
    return reloading;
  };

  const cleanup = async () => {
    const models = await deleteExpired(db);
    const pruned = await keys.prune();
    return { models, keys: pruned };
  };
  await cleanup();

  const timers: NodeJS.Timeout[] = [];
  const every = (ms: number, what: string, fn: () => Promise<unknown>) => {
    const t = setInterval(() => {
      fn().catch((err: Error) => logger.error({ err: { name: err?.name, message: err?.message } }, `oauth ${what} failed`));
    }, ms);
    t.unref();
    timers.push(t);
  };
  every(options.cleanupIntervalMs ?? 10 * 60_000, 'cleanup', cleanup);
  every(options.keyCheckIntervalMs ?? 30_000, 'signing key check', reload);

  // The app's HTTP metrics (src/http/observability.ts), when it has them: provider responses
  // skip Fastify's onResponse hook, so they are counted here.
  const recordRequest = app.hasDecorator('recordRequest') ? app.recordRequest.bind(app) : null;

  await app.register(async (scope) => {
    // Encapsulated: middie's onRequest hook runs only for the routes below, before any body
    // parser, so the provider reads its request bodies itself.
    // (Unless the app registered middie already: then `use` is inherited, per context.)
    if (!scope.hasDecorator('use')) await scope.register(middie);
    if (!scope.hasContentTypeParser('application/x-www-form-urlencoded')) {
      scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 16 * 1024 },
        (_req, body, done) => done(null, querystring.parse(String(body))));
    }
    scope.use('/oauth2', (req: IncomingMessage & { ip?: string; originalUrl?: string }, res: ServerResponse, next: (err?: unknown) => void) => {
      if (req.url === '/interaction' || req.url?.startsWith('/interaction/')) {
        next();
        return;
      }
      // Every URL the provider builds comes from the configured base URL, whatever Host or
      // X-Forwarded-* the request carried.
      req.headers.host = base.host;
      req.headers['x-forwarded-host'] = base.host;
      req.headers['x-forwarded-proto'] = base.protocol.slice(0, -1);
      req.headers['x-forwarded-for'] = req.ip ?? req.socket.remoteAddress ?? '';
      if (basePath && req.originalUrl) req.originalUrl = basePath + req.originalUrl;
      // Fastify never sends this reply (the provider writes the response itself), so its
      // onSend/onResponse hooks do not run: keep the request id and the completion log line.
      const raw = req as IncomingMessage & { id?: string; log?: FastifyBaseLogger };
      if (raw.id) res.setHeader('x-request-id', String(raw.id));
      const started = process.hrtime.bigint();
      const route = metricsRoute(req.url ?? '/');
      const method = req.method ?? 'GET';
      res.once('finish', () => {
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        raw.log?.info({ res: { statusCode: res.statusCode }, responseTime: ms }, 'request completed');
        recordRequest?.(method, route, res.statusCode, ms / 1000);
      });
      current.handler(req, res);
    });
    registerInteractionRoutes(scope, {
      provider: () => current.provider,
      accounts: deps.accounts,
      csrfKey,
      externalPath: `${basePath}/oauth2/interaction`,
      secureCookies: base.protocol === 'https:',
      limits: options.loginLimits ?? DEFAULT_LOGIN_LIMITS,
      logger,
    });
    // Gives middie's hook a route to run on; the provider answers before this handler.
    scope.all('/oauth2/*', async (_request, reply) => reply.code(404).header('cache-control', 'no-store')
      .send({ error: 'not_found', error_description: 'unknown endpoint' }));
  });

  const close = async () => {
    for (const t of timers.splice(0)) clearInterval(t);
  };

  // The access token with its grant and its user, in one query compiled once: every /v1
  // request with an OAuth token runs it. (The user is joined on the payload's accountId rather
  // than read with accounts.findById afterwards: a second query per request cost about a
  // quarter of the Bearer request's throughput in the benchmark.) Same rows as accounts.findById.
  const accountIdOf = db.getExecutor().adapter instanceof PostgresAdapter
    ? sql.raw(`("a"."payload"::json ->> 'accountId')`)
    : sql.raw(`json_extract("a"."payload", '$.accountId')`);
  const accessTokenRow = compiledOnce(db, (grantModel: string, model: string, id: string) => db.selectFrom('oauth_models as a')
    .leftJoin('oauth_models as g', (join) => join.on('g.model', '=', grantModel).onRef('g.id', '=', 'a.grant_id'))
    .leftJoin('users as u', (join) => join.on('u.id', '=', accountIdOf as never))
    .leftJoin('companies as c', 'c.id', 'u.company_id')
    .select([
      'a.payload as payload', 'g.id as grantRowId', 'g.expires_at as grantExpiresAt',
      'u.id as userId', 'u.email as email', 'u.company_id as companyId', 'u.role as role', 'u.disabled as disabled',
      'c.name as companyName',
    ])
    .where('a.model', '=', model)
    .where('a.id', '=', id), ['$grant', '$model', '$id']);
  app.addHook('onClose', close);

  return {
    issuer,
    async verifyAccessToken(token: string): Promise<VerifiedAccessToken | null> {
      if (typeof token !== 'string' || !ACCESS_TOKEN_RE.test(token)) return null;
      const [row] = (await accessTokenRow('Grant', 'AccessToken', hashTokenId(token))).rows as Array<{
        payload: string; grantRowId: string | null; grantExpiresAt: string | null;
        userId: string | null; email: string | null; companyId: string | null; role: 'admin' | 'member' | null;
        disabled: number | string | null; companyName: string | null;
      }>;
      if (!row || !row.grantRowId) return null;
      const now = Date.now();
      if (row.grantExpiresAt && Date.parse(row.grantExpiresAt) <= now) return null;
      let p: Record<string, any>;
      try {
        p = JSON.parse(row.payload) as Record<string, any>;
      } catch {
        return null;
      }
      if (p.kind !== 'AccessToken' || typeof p.accountId !== 'string' || typeof p.grantId !== 'string') return null;
      if (typeof p.exp !== 'number' || p.exp * 1000 <= now) return null;
      // Sender-constrained tokens (DPoP, mTLS: not enabled) are never accepted as plain bearer.
      if (p.jkt || p['x5t#S256']) return null;
      // The user: exists, belongs to an existing company, not disabled.
      if (row.userId !== p.accountId || row.companyId === null || row.companyName === null || row.email === null) return null;
      if (Number(row.disabled) !== 0) return null;
      const account: OAuthAccount = {
        id: row.userId, email: row.email, companyId: row.companyId, companyName: row.companyName,
        disabled: false, passwordHash: null, role: row.role ?? 'member',
      };
      const api = String(p.scope ?? '').split(' ').filter((s) => API_SCOPES.has(s));
      return {
        userId: account.id,
        clientId: String(p.clientId),
        grantId: p.grantId,
        scopes: api.length ? api : null,
        expiresAt: new Date(p.exp * 1000).toISOString(),
        account,
      };
    },
    clients: {
      create: (input) => clients.create(input),
      list: () => clients.list(),
      rotateSecret: (clientId) => clients.rotateSecret(clientId),
      delete: (clientId) => clients.delete(clientId),
    },
    signingKeys: {
      async rotate(opts) {
        const r = await keys.rotate(opts);
        await reload();
        return r;
      },
      list: () => keys.list(),
      reload,
    },
    cleanup,
    provider: () => current.provider,
    close,
  };
}
