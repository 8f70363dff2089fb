// A whole flowgate (context + Fastify app) on a fresh store, driven with app.inject.
// Log lines are captured so tests can prove no secret reaches them.
import { Writable } from 'node:stream';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { loadConfig, type Config } from '../../src/config.ts';
import { createContext, bootstrap, type AppContext } from '../../src/context.ts';
import { buildApp } from '../../src/app.ts';
import { makeTestStore, type TestStore } from './db.ts';

export interface Tenant {
  companyId: string;
  admin: { id: string; email: string; password: string };
  /** A full-rights PAT of the admin (every scope, no expiry). */
  token: string;
}

export interface TestApp {
  app: FastifyInstance;
  ctx: AppContext;
  store: TestStore;
  config: Config;
  logs: string[];
  tenant: Tenant;
  /** app.inject with a bearer token (or none) and a JSON body. */
  call(method: string, url: string, opts?: { token?: string | null; body?: unknown; headers?: Record<string, string> }): Promise<LightMyRequestResponse>;
  /** Another company with its own admin and token: the foreign tenant of isolation tests. */
  newTenant(name?: string): Promise<Tenant>;
  /** A user of a company and a PAT with the given scopes. */
  newUser(companyId: string, opts?: { role?: 'admin' | 'member'; scopes?: string[]; email?: string; expiration?: number | null }): Promise<{ id: string; email: string; token: string; tokenId: string }>;
  close(): Promise<void>;
}

export const ALL_SCOPES = ['automation', 'company', 'connector_auth', 'connectors', 'dashboard', 'embed'];

let seq = 0;

export async function startTestApp(env: Record<string, string> = {}, reuse?: TestStore): Promise<TestApp> {
  const store = reuse ?? makeTestStore();
  const config = loadConfig({
    FLOWGATE_DATA_DIR: store.dataDir,
    ...(store.databaseUrl ? { DATABASE_URL: store.databaseUrl } : {}),
    FLOWGATE_LOG_LEVEL: 'info',
    FLOWGATE_BASE_URL: 'http://localhost:8080',
    ...env,
  });
  const ctx = await createContext(config, { pgSchema: store.pgSchema });
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _enc, cb) { logs.push(String(chunk)); cb(); },
  });
  const app = await buildApp(ctx, { logStream });
  await app.ready();

  const newUser: TestApp['newUser'] = async (companyId, opts = {}) => {
    const email = opts.email ?? `user${++seq}-${Date.now()}@example.com`;
    const user = await ctx.services.users.create(null, companyId, { email, name: 'Test User', role: opts.role ?? 'member', password: 'correct horse battery' });
    const t = await ctx.services.tokens.create(null, { companyId, userId: user.id },
      { expiration: opts.expiration ?? config.patMaxDays, scopes: opts.scopes ?? ALL_SCOPES, note: 'test' });
    return { id: user.id, email, token: t.token, tokenId: t.id };
  };
  const newTenant = async (name = `Company ${++seq} ${Date.now()}`): Promise<Tenant> => {
    const company = await ctx.services.companies.create(null, name);
    const u = await newUser(company.id, { role: 'admin' });
    return { companyId: company.id, admin: { id: u.id, email: u.email, password: 'correct horse battery' }, token: u.token };
  };

  let tenant: Tenant;
  const boot = await bootstrap(ctx);
  if (boot) {
    const admin = (await ctx.services.identity.userByEmail(boot.email))!;
    const t = await ctx.services.tokens.create(null, { companyId: admin.company_id, userId: admin.id }, { expiration: config.patMaxDays, scopes: ALL_SCOPES, note: 'test admin' });
    tenant = { companyId: admin.company_id, admin: { id: admin.id, email: boot.email, password: boot.password }, token: t.token };
  } else {
    tenant = await newTenant();
  }

  return {
    app, ctx, store, config, logs, tenant, newTenant, newUser,
    call(method, url, opts = {}) {
      const token = opts.token === undefined ? tenant.token : opts.token;
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      if (token) headers.authorization = `Bearer ${token}`;
      return app.inject({ method: method as 'GET', url, headers, ...(opts.body !== undefined ? { payload: opts.body as object } : {}) });
    },
    async close() {
      await app.close();
      await ctx.close();
      if (!reuse) await store.destroy();
    },
  };
}

/** Asserts the response is a problem+json with the given status and code, and returns its body. */
export function problem(res: LightMyRequestResponse, status: number, code: string): Record<string, any> {
  const body = res.json();
  if (res.statusCode !== status || body.code !== code || !String(res.headers['content-type']).startsWith('application/problem+json')) {
    throw new Error(`expected ${status} ${code} problem+json, got ${res.statusCode} ${res.headers['content-type']} ${res.body}`);
  }
  return body;
}
