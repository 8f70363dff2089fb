// Secrets never leave: not in logs, not in the database (only digests and ciphertext).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  authUrl, Browser, fullFlow, makeClient, makeTestStore, oidc, PASSWORD, seedRefresh, seedUser, startServer, submitLogin,
} from './helpers.ts';
import { TEST_DB } from '../support/db.ts';

test('tokens, client secrets and passwords appear neither in logs nor in the database', async () => {
  const store = makeTestStore();
  const server = await startServer(store);
  try {
    const user = await seedUser(server.handle);
    const client = await makeClient(server);
    const { tokens, callbackUrl } = await fullFlow(client, user.email);
    const code = new URL(callbackUrl).searchParams.get('code')!;
    const refreshed = await oidc.refreshTokenGrant(client.config, tokens.refresh_token!);
    const seeded = await (await seedRefresh(server, client.clientId, client.clientSecret!, refreshed.refresh_token!)).json() as Record<string, string>;
    // Failures log too: a wrong secret, a wrong password.
    await seedRefresh(server, client.clientId, 'fgcs_wrong-secret-canary', seeded.refresh_token);
    const { url } = await authUrl(client);
    const b = new Browser();
    const page = await b.follow(url, () => false);
    await submitLogin(b, page.url, await page.res.text(), user.email, 'wrong-password-canary');
    await (await fetch(`${server.issuer}/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).text();

    const secrets: Record<string, string> = {
      'client secret': client.clientSecret!,
      'access token': tokens.access_token,
      'refresh token': tokens.refresh_token!,
      'rotated refresh token': refreshed.refresh_token!,
      'seed refresh token': seeded.refresh_token,
      'seed access token': seeded.access_token,
      code,
      password: PASSWORD,
      'wrong password': 'wrong-password-canary',
      'wrong secret': 'fgcs_wrong-secret-canary',
    };
    assert.ok(server.logs.length > 5, 'something was logged');
    const logs = server.logs.join('\n');
    for (const [what, value] of Object.entries(secrets)) {
      assert.ok(!logs.includes(value), `${what} found in the logs`);
    }

    // Database: every row of every OAuth table.
    const dump: string[] = [];
    for (const table of ['oauth_models', 'oauth_clients', 'oauth_signing_keys']) {
      const rows = await server.handle.db.selectFrom(table as never).selectAll().execute();
      dump.push(JSON.stringify(rows));
    }
    const text = dump.join('\n');
    for (const [what, value] of Object.entries(secrets)) {
      assert.ok(!text.includes(value), `${what} found in the database`);
    }
    // And the SQLite files on disk.
    if (TEST_DB === 'sqlite') {
      for (const f of fs.readdirSync(store.dataDir).filter((n) => n.startsWith('flowgate.db'))) {
        const bytes = fs.readFileSync(path.join(store.dataDir, f));
        for (const [what, value] of Object.entries(secrets)) {
          assert.ok(!bytes.includes(Buffer.from(value)), `${what} found in ${f}`);
        }
      }
    }
  } finally {
    await server.stop();
    await store.destroy();
  }
});

test('expired rows are cleaned up', async () => {
  const store = makeTestStore();
  const server = await startServer(store);
  try {
    const user = await seedUser(server.handle);
    const client = await makeClient(server);
    await fullFlow(client, user.email);
    const db = server.handle.db;
    const count = async () => Number(((await db.selectFrom('oauth_models' as never).select((eb) => eb.fn.countAll().as('n')).executeTakeFirst()) as { n: unknown }).n);
    const before = await count();
    assert.ok(before > 0);
    await db.updateTable('oauth_models' as never).set({ expires_at: '2000-01-01T00:00:00.000Z' } as never).execute();
    const { models } = await server.service.cleanup();
    assert.equal(models, before);
    assert.equal(await count(), 0);
  } finally {
    await server.stop();
    await store.destroy();
  }
});
