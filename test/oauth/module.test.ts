// The module as flowgate wires it: accounts through the identity store, Bearer access tokens
// becoming Principals, and the staff CLI (clients, rotate-signing).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { Command } from 'commander';
import { loadConfig } from '../../src/config.ts';
import { createContext } from '../../src/context.ts';
import { oauthModule } from '../../src/modules/oauth/module.ts';
import {
  Browser, decodeJwt, ensureOAuthTables, freePort, fullFlow, MASTER_KEY, makeTestStore, oidc, PASSWORD, REDIRECT_URI, type TestClient,
} from './helpers.ts';

test('oauthModule: CLI-issued client, login through identity, Bearer principal, rotate-signing', async () => {
  const store = makeTestStore();
  const port = await freePort();
  const config = loadConfig({
    FLOWGATE_BASE_URL: `http://127.0.0.1:${port}`,
    FLOWGATE_DATA_DIR: store.dataDir,
    FLOWGATE_ENCRYPTION_KEY: MASTER_KEY,
    FLOWGATE_LOG_LEVEL: 'silent',
    ...(store.databaseUrl ? { DATABASE_URL: store.databaseUrl, FLOWGATE_PG_SCHEMA: store.pgSchema } : {}),
  });
  const ctx = await createContext(config);
  await ensureOAuthTables(ctx.database);
  const app = Fastify();
  try {
    await oauthModule.routes!(app, ctx);
    await app.listen({ host: '127.0.0.1', port });
    const company = await ctx.services.companies.create(null, 'Module Co');
    const user = await ctx.services.users.create(null, company.id, { email: 'api-user@example.com', name: 'API user', role: 'admin', password: PASSWORD });

    const printed: Array<Record<string, any>> = [];
    const program = new Command().exitOverride();
    program.command('keys');
    oauthModule.cli!(program, {
      withContext: (fn) => fn(ctx),
      out: (json) => { printed.push(json as Record<string, any>); },
      fail: (message) => { throw new Error(message); },
    });
    const run = (...args: string[]) => program.parseAsync(args, { from: 'user' });

    await run('clients', 'create', '--name', 'Seed tool', '--redirect-uri', REDIRECT_URI, '--redirect-uri', 'https://tool.example/cb');
    const { client_id: clientId, client_secret: clientSecret } = printed.pop()!;
    assert.match(clientId, /^fgc_/);
    assert.match(clientSecret, /^fgcs_/);
    await assert.rejects(run('clients', 'create', '--name', 'bad', '--redirect-uri', 'http://tool.example/cb'), /https/);

    const config2 = await oidc.discovery(new URL(`${config.baseUrl}/oauth2`), clientId, undefined, oidc.ClientSecretBasic(clientSecret), { execute: [oidc.allowInsecureRequests] });
    const client: TestClient = { clientId, clientSecret, config: config2 };
    const { tokens } = await fullFlow(client, user.email, {}, new Browser());
    assert.equal(tokens.claims()!.sub, user.id);

    const bearer = oauthModule.bearer!(ctx)!;
    const p = await bearer(tokens.access_token);
    assert.ok(p);
    assert.equal(p.kind, 'oauth');
    assert.equal(p.userId, user.id);
    assert.equal(p.companyId, company.id);
    assert.equal(p.email, user.email);
    assert.equal(p.role, 'admin');
    assert.equal(p.scopes, null);
    assert.equal(p.credentialExpiresAt, null);
    assert.equal(await bearer('garbage'), null);

    const narrow = await fullFlow(client, user.email, { scope: 'openid email connector_auth:view automation' });
    assert.deepEqual((await bearer(narrow.tokens.access_token))?.scopes, [
      { scope: 'connector_auth', level: 'view' }, { scope: 'automation', level: 'full' },
    ]);

    await ctx.services.identity.updateUser(company.id, user.id, { disabled: 1 });
    assert.equal(await bearer(tokens.access_token), null);
    await ctx.services.identity.updateUser(company.id, user.id, { disabled: 0 });

    await run('clients', 'list');
    const list = printed.pop() as unknown as Array<Record<string, unknown>>;
    assert.ok(list.some((c) => c.client_id === clientId));
    assert.ok(!JSON.stringify(list).includes(clientSecret));

    await run('keys', 'rotate-signing', '--now');
    const { kids } = printed.pop()!;
    await ctx.services.oauth!.signingKeys.reload();
    const refreshed = await oidc.refreshTokenGrant(config2, tokens.refresh_token!);
    assert.equal(decodeJwt(refreshed.id_token!).header.kid, kids[0]);
    await run('keys', 'signing');
    assert.ok((printed.pop() as unknown as Array<{ status: string }>).some((k) => k.status === 'retired'));

    await run('clients', 'rotate-secret', clientId);
    assert.match(printed.pop()!.client_secret, /^fgcs_/);
    await run('clients', 'delete', clientId);
    assert.equal(printed.pop()!.deleted, true);
    await assert.rejects(run('clients', 'delete', clientId), /no client/);
  } finally {
    await app.close();
    await oauthModule.stop!(ctx);
    await ctx.close();
    await store.destroy();
  }
});
