// verifyAccessToken: what the /v1 API accepts as `Authorization: Bearer <ACCESS_TOKEN>`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import {
  fullFlow, makeClient, makeTestStore, oidc, seedUser, setDisabled, startServer,
  type SeededUser, type Server, type TestClient,
} from './helpers.ts';
import { hashTokenId } from '../../src/modules/oauth/adapter.ts';

let server: Server;
let user: SeededUser;
let client: TestClient;

before(async () => {
  server = await startServer(makeTestStore());
  user = await seedUser(server.handle);
  client = await makeClient(server);
});
after(async () => {
  await server.stop();
  await server.store.destroy();
});

test('a valid access token: the user, the client, the grant, no scope limit', async () => {
  const { tokens } = await fullFlow(client, user.email);
  const v = await server.service.verifyAccessToken(tokens.access_token);
  assert.ok(v);
  assert.equal(v.userId, user.id);
  assert.equal(v.clientId, client.clientId);
  assert.ok(v.grantId);
  assert.equal(v.scopes, null, '"email openid" grants no API scope: full user rights');
  const ttl = Date.parse(v.expiresAt) - Date.now();
  assert.ok(ttl > 3500_000 && ttl <= 3600_000, `expires in ${ttl} ms`);
});

test('API scopes narrow the token, like a PAT', async () => {
  const { tokens } = await fullFlow(client, user.email, { scope: 'openid email connector_auth:view' });
  assert.deepEqual((await server.service.verifyAccessToken(tokens.access_token))?.scopes, ['connector_auth:view']);
  const two = await fullFlow(client, user.email, { scope: 'automation company:manage openid' });
  assert.deepEqual((await server.service.verifyAccessToken(two.tokens.access_token))?.scopes?.sort(), ['automation', 'company:manage']);
  // The narrowing survives a refresh.
  const refreshed = await oidc.refreshTokenGrant(client.config, two.tokens.refresh_token!);
  assert.deepEqual((await server.service.verifyAccessToken(refreshed.access_token))?.scopes?.sort(), ['automation', 'company:manage']);
  // Unknown scopes are ignored, not granted.
  const odd = await fullFlow(client, user.email, { scope: 'openid email superuser connector_auth:admin' });
  assert.equal((await server.service.verifyAccessToken(odd.tokens.access_token))?.scopes, null);
  assert.deepEqual(odd.tokens.scope?.split(' ').sort(), ['email', 'openid']);
});

test('revoked access tokens are refused', async () => {
  const { tokens } = await fullFlow(client, user.email);
  await oidc.tokenRevocation(client.config, tokens.access_token);
  assert.equal(await server.service.verifyAccessToken(tokens.access_token), null);
  // oidc-provider also ends the tokens issued with it (RFC 7009 2.1 allows it): the refresh token.
  await assert.rejects(oidc.refreshTokenGrant(client.config, tokens.refresh_token!), (e: any) => e.error === 'invalid_grant');
});

test('a disabled user is refused at once', async () => {
  const u = await seedUser(server.handle);
  const { tokens } = await fullFlow(client, u.email);
  assert.ok(await server.service.verifyAccessToken(tokens.access_token));
  await setDisabled(server.handle, u.id, true);
  assert.equal(await server.service.verifyAccessToken(tokens.access_token), null);
  await setDisabled(server.handle, u.id, false);
  assert.ok(await server.service.verifyAccessToken(tokens.access_token));
});

test('a revoked grant is refused at once', async () => {
  const { tokens } = await fullFlow(client, user.email);
  await oidc.tokenRevocation(client.config, tokens.refresh_token!);
  assert.equal(await server.service.verifyAccessToken(tokens.access_token), null);
});

test('expired tokens and garbage are refused', async () => {
  const { tokens } = await fullFlow(client, user.email);
  const id = hashTokenId(tokens.access_token);
  const row = await server.handle.db.selectFrom('oauth_models' as never).select(sql<string>`payload`.as('payload'))
    .where(sql`model`, '=', 'AccessToken').where(sql`id`, '=', id).executeTakeFirstOrThrow() as { payload: string };
  const payload = JSON.parse(row.payload);
  payload.exp = Math.floor(Date.now() / 1000) - 1;
  await server.handle.db.updateTable('oauth_models' as never).set({ payload: JSON.stringify(payload) } as never)
    .where(sql`model`, '=', 'AccessToken').where(sql`id`, '=', id).execute();
  assert.equal(await server.service.verifyAccessToken(tokens.access_token), null);

  for (const junk of ['', 'x', 'a'.repeat(43), `${tokens.refresh_token}`, tokens.id_token!, 'a b', 'Ä'.repeat(43), 'x'.repeat(5000)]) {
    assert.equal(await server.service.verifyAccessToken(junk), null, junk.slice(0, 20));
  }
});

test('a refresh token or a code is not an access token', async () => {
  const { tokens, callbackUrl } = await fullFlow(client, user.email);
  assert.equal(await server.service.verifyAccessToken(tokens.refresh_token!), null);
  assert.equal(await server.service.verifyAccessToken(new URL(callbackUrl).searchParams.get('code')!), null);
});

test('userinfo refuses revoked tokens', async () => {
  const { tokens } = await fullFlow(client, user.email);
  await oidc.tokenRevocation(client.config, tokens.access_token);
  const res = await fetch(`${server.issuer}/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
  assert.equal(res.status, 401);
  assert.match(res.headers.get('www-authenticate') ?? '', /invalid_token/);
});
