// Test harness for the OAuth provider: a minimal Fastify app on 127.0.0.1 with the provider
// mounted, a seeded company and users, a cookie-carrying "browser" on fetch, and openid-client.
import crypto from 'node:crypto';
import net from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import formbody from '@fastify/formbody';
import middie from '@fastify/middie';
import * as oidc from 'openid-client';
import { sql } from 'kysely';
import { loadConfig, type Config } from '../../src/config.ts';
import type { DatabaseHandle } from '../../src/db/index.ts';
import { Keyring } from '../../src/crypto/keyring.ts';
import { hashPassword } from '../../src/modules/identity/password.ts';
import * as m0003 from '../../src/db/migrations/0003_oauth.ts';
import { registerOAuth, type OAuthAccount, type OAuthOptions, type OAuthService } from '../../src/modules/oauth/index.ts';
import { makeTestStore, type TestStore } from '../support/db.ts';

export { oidc };
export const MASTER_KEY = Buffer.alloc(32, 7).toString('base64');
export const PASSWORD = 'correct horse battery staple';
export const REDIRECT_URI = 'http://127.0.0.1:9/callback';

/** Applies the OAuth migration when the store's migration list does not (yet) include it. */
export async function ensureOAuthTables(handle: DatabaseHandle): Promise<void> {
  try {
    await sql`select 1 from oauth_models limit 1`.execute(handle.db);
  } catch {
    await m0003.up(handle.db as never);
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export interface SeededUser { id: string; email: string; companyId: string; companyName: string }

export async function seedUser(handle: DatabaseHandle, opts: { email?: string; company?: string; disabled?: boolean; password?: string } = {}): Promise<SeededUser> {
  const now = new Date().toISOString();
  const companyName = opts.company ?? `Acme ${crypto.randomBytes(3).toString('hex')}`;
  let company = await handle.db.selectFrom('companies').select(['id']).where('name', '=', companyName).executeTakeFirst();
  if (!company) {
    company = { id: crypto.randomUUID() };
    await handle.db.insertInto('companies').values({ id: company.id, name: companyName, created_at: now }).execute();
  }
  const email = opts.email ?? `user-${crypto.randomBytes(4).toString('hex')}@example.com`;
  const id = crypto.randomUUID();
  await handle.db.insertInto('users').values({
    id, company_id: company.id, email, email_lower: email.toLowerCase(), name: email, role: 'member',
    disabled: opts.disabled ? 1 : 0, password_hash: await hashPassword(opts.password ?? PASSWORD), created_at: now, updated_at: now,
  }).execute();
  return { id, email, companyId: company.id, companyName };
}

export async function setDisabled(handle: DatabaseHandle, userId: string, disabled: boolean): Promise<void> {
  await handle.db.updateTable('users').set({ disabled: disabled ? 1 : 0 }).where('id', '=', userId).execute();
}

function accountsOn(handle: DatabaseHandle) {
  const q = () => handle.db.selectFrom('users').innerJoin('companies', 'companies.id', 'users.company_id')
    .select(['users.id as id', 'users.email as email', 'users.company_id as companyId', 'companies.name as companyName',
      'users.disabled as disabled', 'users.password_hash as passwordHash']);
  const map = (r: { id: string; email: string; companyId: string; companyName: string; disabled: number; passwordHash: string | null } | undefined): OAuthAccount | null =>
    r ? { ...r, disabled: r.disabled === 1 } : null;
  return {
    async findById(id: string) { return map(await q().where('users.id', '=', id).executeTakeFirst()); },
    async findByEmail(email: string) { return map(await q().where('users.email_lower', '=', email.toLowerCase()).executeTakeFirst()); },
  };
}

export interface Server {
  store: TestStore;
  handle: DatabaseHandle;
  app: FastifyInstance;
  service: OAuthService;
  config: Config;
  port: number;
  baseUrl: string;
  issuer: string;
  logs: string[];
  /** Stops the app and the database handle (the store stays). */
  stop(): Promise<void>;
}

export interface StartOptions {
  port?: number;
  env?: Record<string, string>;
  options?: OAuthOptions;
  /** Register @fastify/middie at the root before the provider (as another part of an app might). */
  rootMiddie?: boolean;
}

export async function startServer(store: TestStore, opts: StartOptions = {}): Promise<Server> {
  const port = opts.port ?? await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const config = loadConfig({
    FLOWGATE_BASE_URL: baseUrl,
    FLOWGATE_DATA_DIR: store.dataDir,
    FLOWGATE_ENCRYPTION_KEY: MASTER_KEY,
    FLOWGATE_OAUTH_REFRESH_GRACE_SECONDS: '1',
    ...opts.env,
  });
  const handle = await store.open();
  await ensureOAuthTables(handle);
  const keyring = await Keyring.open({ db: handle.db, dataDir: store.dataDir, masterKeyB64: MASTER_KEY });
  const logs: string[] = [];
  const app = Fastify({ logger: { level: 'trace', stream: { write: (line: string) => { logs.push(line); } } } });
  // A root-level urlencoded parser (as the rest of the app may have) must not disturb the provider.
  await app.register(formbody);
  if (opts.rootMiddie) {
    await app.register(middie);
    app.use('/elsewhere', (_req: unknown, _res: unknown, next: () => void) => next());
  }
  app.post('/echo', async (request) => ({ body: request.body }));
  const service = await registerOAuth(app, {
    config, db: handle.db, keyring, logger: app.log, accounts: accountsOn(handle),
    options: { loginLimits: { perAccount: 5, perIp: 1000, windowMs: 15 * 60_000 }, ...opts.options },
  });
  await app.listen({ host: '127.0.0.1', port });
  return {
    store, handle, app, service, config, port, baseUrl, issuer: service.issuer, logs,
    async stop() {
      await app.close();
      await handle.close();
    },
  };
}

// ------------------------------------------------------------------ a small browser

interface Cookie { name: string; value: string; path: string }

export class Browser {
  cookies: Cookie[] = [];

  #store(res: Response) {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const i = pair.indexOf('=');
      const name = pair.slice(0, i).trim();
      const value = pair.slice(i + 1).trim();
      let path = '/';
      let expired = false;
      for (const a of attrs) {
        const [k, v] = a.split('=').map((s) => s?.trim());
        if (k.toLowerCase() === 'path' && v) path = v;
        if (k.toLowerCase() === 'max-age' && Number(v) <= 0) expired = true;
        if (k.toLowerCase() === 'expires' && v && Date.parse(v) < Date.now()) expired = true;
      }
      this.cookies = this.cookies.filter((c) => !(c.name === name && c.path === path));
      if (!expired) this.cookies.push({ name, value, path });
    }
  }

  #header(url: URL): string {
    return this.cookies
      .filter((c) => url.pathname === c.path || url.pathname.startsWith(c.path.endsWith('/') ? c.path : c.path + '/'))
      .map((c) => `${c.name}=${c.value}`).join('; ');
  }

  async request(url: string | URL, init: RequestInit = {}): Promise<Response> {
    const u = new URL(url);
    const headers = new Headers(init.headers);
    const cookie = this.#header(u);
    if (cookie) headers.set('cookie', cookie);
    const res = await fetch(u, { ...init, headers, redirect: 'manual' });
    this.#store(res);
    return res;
  }

  /** GETs `url` and follows redirects until `stop(url)` matches a Location or a non-redirect answers. */
  async follow(url: string, stop: (location: string) => boolean): Promise<{ res: Response; url: string; stopped: boolean }> {
    let current = url;
    for (let i = 0; i < 10; i++) {
      const res = await this.request(current);
      const loc = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && loc) {
        const next = new URL(loc, current).href;
        if (stop(next)) return { res, url: next, stopped: true };
        current = next;
        continue;
      }
      return { res, url: current, stopped: false };
    }
    throw new Error('too many redirects');
  }
}

export function formFields(html: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of html.matchAll(/<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"/g)) out[m[1]] = m[2];
  return out;
}

export function formAction(html: string): string {
  const m = /<form[^>]*action="([^"]+)"/.exec(html);
  if (!m) throw new Error('no form in page');
  return m[1].replace(/&#38;/g, '&');
}

export async function submitLogin(browser: Browser, pageUrl: string, html: string, email: string, password: string): Promise<Response> {
  const fields = formFields(html);
  const body = new URLSearchParams({ csrf: fields.csrf ?? '', email, password });
  return browser.request(new URL(formAction(html), pageUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: body.toString(),
  });
}

// ------------------------------------------------------------------ clients and flows

export interface TestClient { clientId: string; clientSecret: string | null; config: oidc.Configuration }

export async function makeClient(server: Server, opts: { public?: boolean; redirectUris?: string[]; post?: boolean; idTokenAlg?: 'ES256' | 'RS256' } = {}): Promise<TestClient> {
  const { clientId, clientSecret } = await server.service.clients.create({
    name: `Test client <${crypto.randomBytes(2).toString('hex')}>`,
    redirectUris: opts.redirectUris ?? [REDIRECT_URI],
    public: opts.public,
    idTokenAlg: opts.idTokenAlg,
  });
  const auth = opts.public ? oidc.None() : opts.post ? oidc.ClientSecretPost(clientSecret!) : oidc.ClientSecretBasic(clientSecret!);
  const config = await oidc.discovery(new URL(server.issuer), clientId,
    opts.idTokenAlg ? { id_token_signed_response_alg: opts.idTokenAlg } : undefined, auth,
    { execute: [oidc.allowInsecureRequests] });
  return { clientId, clientSecret, config };
}

export interface FlowResult {
  tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers;
  callbackUrl: string;
  verifier: string;
  browser: Browser;
}

/** Authorization URL with PKCE and state. */
export async function authUrl(client: TestClient, params: Record<string, string> = {}) {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(client.config, {
    redirect_uri: REDIRECT_URI,
    scope: 'email openid',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    ...params,
  });
  return { url: url.href, verifier, state };
}

/** Runs the browser part: authorize, log in, and return the callback URL (with code). */
export async function loginAndGetCallback(browser: Browser, url: string, email: string, password = PASSWORD): Promise<string> {
  const isCallback = (l: string) => l.startsWith(REDIRECT_URI);
  const first = await browser.follow(url, isCallback);
  if (first.stopped) return first.url;
  if (first.res.status !== 200) throw new Error(`expected the login page, got ${first.res.status}: ${await first.res.text()}`);
  const html = await first.res.text();
  const posted = await submitLogin(browser, first.url, html, email, password);
  if (posted.status !== 303) throw new Error(`login failed with ${posted.status}: ${await posted.text()}`);
  const done = await browser.follow(new URL(posted.headers.get('location')!, first.url).href, isCallback);
  if (!done.stopped) throw new Error(`no redirect to the client: ${done.res.status} ${await done.res.text()}`);
  return done.url;
}

export async function fullFlow(client: TestClient, email: string, params: Record<string, string> = {}, browser = new Browser()): Promise<FlowResult> {
  const { url, verifier, state } = await authUrl(client, params);
  const callbackUrl = await loginAndGetCallback(browser, url, email);
  const tokens = await oidc.authorizationCodeGrant(client.config, new URL(callbackUrl), { pkceCodeVerifier: verifier, expectedState: state });
  return { tokens, callbackUrl, verifier, browser };
}

/** The seed's refresh request, byte for byte. */
export async function seedRefresh(server: Server, clientId: string, clientSecret: string, refreshToken: string): Promise<Response> {
  return fetch(`${server.issuer}/token`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      Authorization: 'Basic ' + Buffer.from(`${clientId}:${clientSecret}`).toString('base64'),
    },
    body: `grant_type=refresh_token&client_id=${encodeURIComponent(clientId)}&refresh_token=${encodeURIComponent(refreshToken)}`,
  });
}

export function decodeJwt(jwt: string): { header: Record<string, any>; payload: Record<string, any> } {
  const [h, p] = jwt.split('.');
  return { header: JSON.parse(Buffer.from(h, 'base64url').toString()), payload: JSON.parse(Buffer.from(p, 'base64url').toString()) };
}

export async function liveRefreshTokens(server: Server, grantId: string): Promise<number> {
  const rows = await server.handle.db.selectFrom('oauth_models' as never)
    .select(sql<number>`count(*)`.as('n'))
    .where(sql`model`, '=', 'RefreshToken')
    .where(sql`grant_id`, '=', grantId)
    .where(sql`consumed_at`, 'is', null)
    .executeTakeFirst() as { n: number | string } | undefined;
  return Number(rows?.n ?? 0);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export { makeTestStore };
