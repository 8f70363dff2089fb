// The OAuth module as flowgate plugs it in: migration 0003_oauth, the provider under /oauth2,
// OAuth access tokens as Bearer credentials, and the staff CLI (`flowgate clients ...`,
// `flowgate keys rotate-signing`). Enabling it is one line in src/modules/index.ts.
import type { Command } from 'commander';
import type { FlowgateModule, CliTools } from '../module.ts';
import type { AppContext } from '../../context.ts';
import type { Principal } from '../access/principal.ts';
import { parseScope, type ScopeGrant } from '../access/scopes.ts';
import type { UserRow } from '../identity/tables.ts';
import * as migration0003 from '../../db/migrations/0003_oauth.ts';
import { createOAuthAdmin, OAuthClientError, registerOAuth, type OAuthAccount, type OAuthService } from './index.ts';
import { ID_TOKEN_ALGS, type IdTokenAlg } from './clients.ts';

declare module '../../context.ts' {
  interface Services {
    /** Set once the provider is mounted (buildApp); absent in the CLI. */
    oauth?: OAuthService;
  }
}

/** Accounts for the provider, through the identity store (company names cached for a minute). */
export function accountsFrom(ctx: AppContext) {
  const identity = ctx.services.identity;
  const companies = new Map<string, { name: string; at: number }>();
  async function companyName(id: string): Promise<string | null> {
    const hit = companies.get(id);
    if (hit && Date.now() - hit.at < 60_000) return hit.name;
    const c = await identity.companyById(id);
    if (!c) return null;
    if (companies.size > 10_000) companies.clear();
    companies.set(id, { name: c.name, at: Date.now() });
    return c.name;
  }
  async function toAccount(row: UserRow | undefined): Promise<OAuthAccount | null> {
    if (!row) return null;
    const name = await companyName(row.company_id);
    if (name === null) return null;
    return {
      id: row.id, email: row.email, companyId: row.company_id, companyName: name,
      disabled: row.disabled === 1, passwordHash: row.password_hash, role: row.role,
    };
  }
  return {
    findById: async (id: string) => toAccount(await identity.userByIdAnyCompany(id)),
    findByEmail: async (email: string) => toAccount(await identity.userByEmail(email)),
  };
}

/** An OAuth access token as a Principal: the user's full rights, or its API scopes like a PAT. */
export async function oauthPrincipal(service: OAuthService, token: string): Promise<Principal | null> {
  const v = await service.verifyAccessToken(token);
  if (!v) return null;
  const scopes = v.scopes === null ? null : v.scopes.map(parseScope).filter((g): g is ScopeGrant => g !== null);
  return {
    kind: 'oauth',
    userId: v.userId,
    companyId: v.account.companyId,
    email: v.account.email,
    role: v.account.role ?? 'member',
    scopes,
    credentialId: v.grantId,
    // Access tokens may create PATs without the PAT no-escalation expiry limit (issue 4).
    credentialExpiresAt: null,
  };
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function clientCli(program: Command, tools: CliTools): void {
  const admin = (ctx: AppContext) => createOAuthAdmin({ db: ctx.database.db, keyring: ctx.keyring, config: ctx.config });
  const guard = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof OAuthClientError) tools.fail(err.message);
      throw err;
    }
  };

  const clients = program.command('clients').description('OAuth 2.0 clients of the identity provider');
  clients.command('create').description('create a client; prints client_id and client_secret (shown only now)')
    .requiredOption('--name <name>', 'display name (shown on the login page)')
    .requiredOption('--redirect-uri <url>', 'exact redirect URI (repeat for several)', collect, [] as string[])
    .option('--public', 'a public client (no secret; PKCE required)')
    .option('--id-token-alg <alg>', `ID token signature: ${ID_TOKEN_ALGS.join(' or ')}`, 'ES256')
    .action(async (o: { name: string; redirectUri: string[]; public?: boolean; idTokenAlg: string }) => tools.withContext(async (ctx) => {
      if (!ID_TOKEN_ALGS.includes(o.idTokenAlg as IdTokenAlg)) tools.fail(`--id-token-alg must be ${ID_TOKEN_ALGS.join(' or ')}`);
      const r = await guard(() => admin(ctx).clients.create({
        name: o.name, redirectUris: o.redirectUri, public: Boolean(o.public), idTokenAlg: o.idTokenAlg as IdTokenAlg,
      }));
      tools.out(
        { client_id: r.clientId, client_secret: r.clientSecret },
        `client_id:     ${r.clientId}\n` +
          (r.clientSecret ? `client_secret: ${r.clientSecret}\n(the secret is shown only now; store it safely)` : '(public client: no secret; PKCE is required)'),
      );
    }));
  clients.command('list').description('list clients (never their secrets)')
    .action(async () => tools.withContext(async (ctx) => {
      const list = await admin(ctx).clients.list();
      tools.out(list.map((c) => ({ client_id: c.clientId, name: c.name, redirect_uris: c.redirectUris, public: c.public, id_token_alg: c.idTokenAlg, created_at: c.createdAt })),
        list.length ? list.map((c) => `${c.clientId}  ${c.name}  ${c.public ? 'public' : 'confidential'}  ${c.redirectUris.join(' ')}`).join('\n') : '(no clients)');
    }));
  clients.command('rotate-secret').description('issue a new client secret (the old one stops working); prints it once')
    .argument('<client_id>')
    .action(async (clientId: string) => tools.withContext(async (ctx) => {
      const r = await guard(() => admin(ctx).clients.rotateSecret(clientId));
      tools.out({ client_id: clientId, client_secret: r.clientSecret }, `client_secret: ${r.clientSecret}\n(shown only now)`);
    }));
  clients.command('delete').description('delete a client and every grant and token issued to it')
    .argument('<client_id>')
    .action(async (clientId: string) => tools.withContext(async (ctx) => {
      if (!(await admin(ctx).clients.delete(clientId))) tools.fail(`no client ${clientId}`);
      tools.out({ client_id: clientId, deleted: true }, `deleted ${clientId}`);
    }));

  const keys = program.commands.find((c) => c.name() === 'keys') ?? program.command('keys').description('keys');
  keys.command('rotate-signing').description('publish new ID-token signing keys; they sign after an hour (--now: at once)')
    .option('--now', 'sign with the new keys at once (e.g. after a leak); the old keys stay published until their tokens expired')
    .action(async (o: { now?: boolean }) => tools.withContext(async (ctx) => {
      const r = await admin(ctx).keys.rotate({ immediate: Boolean(o.now) });
      tools.out({ kids: r.kids, activates_at: r.activatesAt }, `published ${r.kids.join(', ')}; signing from ${r.activatesAt}`);
    }));
  keys.command('signing').description('list ID-token signing keys and their state')
    .action(async () => tools.withContext(async (ctx) => {
      const list = await admin(ctx).keys.list();
      tools.out(list, list.map((k) => `${k.kid}  ${k.alg}  ${k.status.padEnd(8)}  activates ${k.activatesAt}${k.publishedUntil ? `  published until ${k.publishedUntil}` : ''}`).join('\n'));
    }));
}

export const oauthModule: FlowgateModule = {
  name: 'oauth',
  migrations: { '0003_oauth': migration0003 },
  bearer(ctx) {
    return async (token) => (ctx.services.oauth ? oauthPrincipal(ctx.services.oauth, token) : null);
  },
  async routes(app, ctx) {
    ctx.services.oauth = await registerOAuth(app, {
      config: ctx.config,
      db: ctx.database.db,
      keyring: ctx.keyring,
      logger: app.log,
      accounts: accountsFrom(ctx),
    });
  },
  cli: clientCli,
  async stop(ctx) {
    await ctx.services.oauth?.close();
  },
};
