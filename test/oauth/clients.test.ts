// Clients issued by staff: secret shown once, stored encrypted, rotatable, deletable.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  fullFlow, makeClient, makeTestStore, REDIRECT_URI, seedRefresh, seedUser, startServer,
  type SeededUser, type Server,
} from './helpers.ts';
import { OAuthClientError } from '../../src/modules/oauth/index.ts';

let server: Server;
let user: SeededUser;

before(async () => {
  server = await startServer(makeTestStore());
  user = await seedUser(server.handle);
});
after(async () => {
  await server.stop();
  await server.store.destroy();
});

test('create returns the secret once; list never shows it; the table holds only ciphertext', async () => {
  const { clientId, clientSecret } = await server.service.clients.create({ name: 'Zapier-like', redirectUris: [REDIRECT_URI, 'https://app.example/cb'] });
  assert.match(clientId, /^fgc_[A-Za-z0-9_-]{22}$/);
  assert.match(clientSecret!, /^fgcs_[A-Za-z0-9_-]{43}$/);
  const listed = (await server.service.clients.list()).find((c) => c.clientId === clientId)!;
  assert.deepEqual(listed.redirectUris, [REDIRECT_URI, 'https://app.example/cb']);
  assert.equal(listed.name, 'Zapier-like');
  assert.ok(!JSON.stringify(listed).includes(clientSecret!));
  assert.ok(!('clientSecret' in listed));
  const row = await server.handle.db.selectFrom('oauth_clients' as never).selectAll().where('client_id' as never, '=', clientId as never).executeTakeFirstOrThrow() as Record<string, string>;
  assert.match(row.client_secret, /^fg1:/);
  assert.ok(!row.client_secret.includes(clientSecret!));
});

test('a secret copied onto another client does not decrypt (AAD binds the client id)', async () => {
  const a = await server.service.clients.create({ name: 'A', redirectUris: [REDIRECT_URI] });
  const b = await server.service.clients.create({ name: 'B', redirectUris: [REDIRECT_URI] });
  const rowA = await server.handle.db.selectFrom('oauth_clients' as never).selectAll().where('client_id' as never, '=', a.clientId as never).executeTakeFirstOrThrow() as Record<string, string>;
  await server.handle.db.updateTable('oauth_clients' as never).set({ client_secret: rowA.client_secret } as never).where('client_id' as never, '=', b.clientId as never).execute();
  const res = await seedRefresh(server, b.clientId, a.clientSecret!, 'x'.repeat(43));
  assert.equal(res.status, 401);
  assert.equal((await res.json() as Record<string, string>).error, 'invalid_client');
});

test('rotate-secret: the old secret stops working, the new one works, tokens survive', async () => {
  const client = await makeClient(server);
  const { tokens } = await fullFlow(client, user.email);
  const { clientSecret } = await server.service.clients.rotateSecret(client.clientId);
  assert.notEqual(clientSecret, client.clientSecret);
  const old = await seedRefresh(server, client.clientId, client.clientSecret!, tokens.refresh_token!);
  assert.equal(old.status, 401);
  const fresh = await seedRefresh(server, client.clientId, clientSecret, tokens.refresh_token!);
  assert.equal(fresh.status, 200);
});

test('delete: the client and everything issued to it are gone', async () => {
  const client = await makeClient(server);
  const { tokens } = await fullFlow(client, user.email);
  assert.equal(await server.service.clients.delete(client.clientId), true);
  assert.equal(await server.service.clients.delete(client.clientId), false);
  assert.equal(await server.service.verifyAccessToken(tokens.access_token), null);
  const res = await seedRefresh(server, client.clientId, client.clientSecret!, tokens.refresh_token!);
  assert.equal(res.status, 401);
  assert.ok(!(await server.service.clients.list()).some((c) => c.clientId === client.clientId));
});

test('invalid clients are refused with a clear message', async () => {
  const bad: Array<[string, string[], RegExp]> = [
    ['', [REDIRECT_URI], /name/],
    ['x', [], /redirect URI/],
    ['x', ['not a url'], /absolute URL/],
    ['x', ['http://app.example/cb'], /https/],
    ['x', ['https://app.example/cb#frag'], /fragment/],
    ['x', ['https://user:pw@app.example/cb'], /credentials/],
    ['x', ['ftp://app.example/cb'], /https/],
  ];
  for (const [name, redirectUris, message] of bad) {
    await assert.rejects(server.service.clients.create({ name, redirectUris }), (err: Error) => {
      assert.ok(err instanceof OAuthClientError, err.message);
      assert.match(err.message, message);
      return true;
    }, `${name} ${redirectUris.join(' ')}`);
  }
  await assert.rejects(server.service.clients.rotateSecret('fgc_nope'), OAuthClientError);
});

test('public clients have no secret to rotate', async () => {
  const { clientId, clientSecret } = await server.service.clients.create({ name: 'SPA', redirectUris: ['http://localhost:3000/cb'], public: true });
  assert.equal(clientSecret, null);
  await assert.rejects(server.service.clients.rotateSecret(clientId), /public/);
});
