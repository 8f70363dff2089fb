// The key ring's rotation re-encrypts the OAuth secrets (client secrets, signing keys) and the
// provider keeps working across it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Keyring } from '../../src/crypto/keyring.ts';
import { decodeJwt, fullFlow, MASTER_KEY, makeClient, makeTestStore, seedRefresh, seedUser, sleep, startServer } from './helpers.ts';

test('keys rotate re-encrypts client secrets and signing keys; tokens, clients and keys keep working', async () => {
  const store = makeTestStore();
  let server = await startServer(store, { options: { clientCacheMs: 0 } });
  try {
    const user = await seedUser(server.handle);
    const client = await makeClient(server);
    const { tokens } = await fullFlow(client, user.email);
    const kid = decodeJwt(tokens.id_token!).header.kid;

    const ring = await Keyring.open({ db: server.handle.db, dataDir: store.dataDir, masterKeyB64: MASTER_KEY });
    const { newKeyId, skipped } = await ring.rotate();
    assert.equal(skipped, 0);
    const db = server.handle.db;
    const secrets = await db.selectFrom('oauth_clients' as never).select('client_secret' as never).execute() as Array<{ client_secret: string }>;
    const keys = await db.selectFrom('oauth_signing_keys' as never).select('private_jwk' as never).execute() as Array<{ private_jwk: string }>;
    assert.ok(secrets.length > 0 && keys.length === 2);
    for (const v of [...secrets.map((s) => s.client_secret), ...keys.map((k) => k.private_jwk)]) {
      assert.ok(v.startsWith(`fg1:${newKeyId}:`), v.slice(0, 12));
    }

    // The running server (its key ring still on the old key) authenticates the client.
    const res = await seedRefresh(server, client.clientId, client.clientSecret!, tokens.refresh_token!);
    const body = await res.json() as Record<string, string>;
    assert.equal(res.status, 200, JSON.stringify(body));

    // A restart decrypts the signing keys under the new data key: same kid.
    const port = server.port;
    await server.stop();
    await sleep(200);
    server = await startServer(store, { port });
    const again = await seedRefresh(server, client.clientId, client.clientSecret!, body.refresh_token);
    const b2 = await again.json() as Record<string, string>;
    assert.equal(again.status, 200, JSON.stringify(b2));
    assert.equal(decodeJwt(b2.id_token).header.kid, kid);
  } finally {
    await server.stop();
    await store.destroy();
  }
});
