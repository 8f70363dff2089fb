// Grants, tokens, clients and signing keys live in the database: they survive a restart and
// are shared by two instances on one store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  decodeJwt, fullFlow, makeClient, makeTestStore, oidc, seedRefresh, seedUser, sleep, startServer,
} from './helpers.ts';

test('a refresh token, an access token and the signing key survive a restart', async () => {
  const store = makeTestStore();
  let server = await startServer(store);
  try {
    const user = await seedUser(server.handle);
    const client = await makeClient(server);
    const { tokens } = await fullFlow(client, user.email);
    const kid = decodeJwt(tokens.id_token!).header.kid;
    const port = server.port;
    await server.stop();
    await sleep(200); // let the client notice its keep-alive sockets closed

    server = await startServer(store, { port });
    assert.ok(await server.service.verifyAccessToken(tokens.access_token), 'access token still valid');
    const res = await seedRefresh(server, client.clientId, client.clientSecret!, tokens.refresh_token!);
    const body = await res.json() as Record<string, string>;
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(decodeJwt(body.id_token).header.kid, kid, 'same signing key after restart');

    // A spec-strict client, discovering afresh, accepts the tokens of the restarted server.
    const fresh = await oidc.discovery(new URL(server.issuer), client.clientId, undefined,
      oidc.ClientSecretBasic(client.clientSecret!), { execute: [oidc.allowInsecureRequests] });
    const again = await oidc.refreshTokenGrant(fresh, body.refresh_token);
    assert.equal(again.claims()!.sub, user.id);
    // The signing keys were not regenerated.
    assert.equal((await server.service.signingKeys.list()).length, 2);
  } finally {
    await server.stop();
    await store.destroy();
  }
});

test('two instances on one store share grants and the grace window', async () => {
  const store = makeTestStore();
  const a = await startServer(store);
  const b = await startServer(store);
  try {
    const user = await seedUser(a.handle);
    const client = await makeClient(a);
    const { tokens } = await fullFlow(client, user.email);
    const [ra, rb] = await Promise.all([
      seedRefresh(a, client.clientId, client.clientSecret!, tokens.refresh_token!),
      seedRefresh(b, client.clientId, client.clientSecret!, tokens.refresh_token!),
    ]);
    const [ja, jb] = [await ra.json() as Record<string, string>, await rb.json() as Record<string, string>];
    assert.equal(ra.status, 200, JSON.stringify(ja));
    assert.equal(rb.status, 200, JSON.stringify(jb));
    assert.equal(ja.refresh_token, jb.refresh_token, 'one successor across instances');
    assert.ok(await a.service.verifyAccessToken(jb.access_token));
    assert.ok(await b.service.verifyAccessToken(ja.access_token));
  } finally {
    await a.stop();
    await b.stop();
    await store.destroy();
  }
});
