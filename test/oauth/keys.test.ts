// Signing keys: generated on first start, stored encrypted, rotated by publishing first.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  decodeJwt, fullFlow, makeClient, makeTestStore, oidc, seedUser, sleep, startServer,
  type SeededUser, type Server, type TestClient,
} from './helpers.ts';
import { createOAuthAdmin } from '../../src/modules/oauth/index.ts';
import { Keyring } from '../../src/crypto/keyring.ts';
import { MASTER_KEY } from './helpers.ts';

let server: Server;
let user: SeededUser;
let client: TestClient;

before(async () => {
  server = await startServer(makeTestStore(), { options: { signingKeyActivationDelaySeconds: 1 } });
  user = await seedUser(server.handle);
  client = await makeClient(server);
});
after(async () => {
  await server.stop();
  await server.store.destroy();
});

async function jwks(): Promise<Array<Record<string, any>>> {
  return ((await (await fetch(`${server.issuer}/jwks`)).json()) as { keys: Array<Record<string, any>> }).keys;
}

async function idTokenKid(): Promise<string> {
  const { tokens } = await fullFlow(client, user.email);
  // openid-client verified the signature against the published JWKS already.
  return decodeJwt(tokens.id_token!).header.kid;
}

test('first start: one current ES256 and one current RS256 key, private parts encrypted', async () => {
  const keys = await server.service.signingKeys.list();
  assert.deepEqual(keys.map((k) => [k.alg, k.status]).sort(), [['ES256', 'current'], ['RS256', 'current']]);
  const rows = await server.handle.db.selectFrom('oauth_signing_keys' as never).selectAll().execute() as Array<Record<string, string>>;
  assert.equal(rows.length, 2);
  for (const r of rows) {
    assert.match(r.private_jwk, /^fg1:/);
    assert.doesNotMatch(r.private_jwk, /"d"/);
    assert.equal(JSON.parse(r.public_jwk).d, undefined);
  }
});

test('rotation publishes the new key first, then signs with it; the old key stays published', async () => {
  const before = await server.service.signingKeys.list();
  const oldEs = before.find((k) => k.alg === 'ES256' && k.status === 'current')!.kid;
  assert.equal(await idTokenKid(), oldEs);

  const rotated = await server.service.signingKeys.rotate();
  assert.equal(rotated.kids.length, 2);
  const newEs = rotated.kid;
  // Published at once, not yet used.
  let published = await jwks();
  const next = published.find((k) => k.kid === newEs);
  assert.ok(next, 'new key in JWKS');
  assert.deepEqual(next.key_ops, ['verify']);
  assert.equal(next.d, undefined);
  assert.equal(await idTokenKid(), oldEs, 'still signing with the old key');
  assert.equal((await server.service.signingKeys.list()).find((k) => k.kid === newEs)?.status, 'next');

  // After the activation delay the running server switches, without a restart.
  await sleep(1100);
  await server.service.signingKeys.reload();
  assert.equal(await idTokenKid(), newEs);
  published = await jwks();
  assert.ok(published.some((k) => k.kid === oldEs), 'old key still published for its tokens');
  const states = Object.fromEntries((await server.service.signingKeys.list()).map((k) => [k.kid, k.status]));
  assert.equal(states[oldEs], 'retired');
  assert.equal(states[newEs], 'current');
});

test('retired keys leave the JWKS once their tokens have expired', async () => {
  const admin = createOAuthAdmin({ db: server.handle.db, keyring: await Keyring.open({ db: server.handle.db, dataDir: server.store.dataDir, masterKeyB64: MASTER_KEY }), config: server.config });
  const later = Date.now() + (server.config.oauthAccessTokenTtl + 120) * 1000;
  const future = await admin.keys.list(later);
  assert.ok(future.some((k) => k.status === 'expired'));
  assert.ok(await admin.keys.prune(later) > 0);
  const left = await admin.keys.list(later);
  assert.ok(left.every((k) => k.status !== 'expired'));
  assert.deepEqual(left.filter((k) => k.status === 'current').map((k) => k.alg).sort(), ['ES256', 'RS256']);
});

test('an immediate rotation made by another process (the CLI) is picked up', async () => {
  const keyring = await Keyring.open({ db: server.handle.db, dataDir: server.store.dataDir, masterKeyB64: MASTER_KEY });
  const admin = createOAuthAdmin({ db: server.handle.db, keyring, config: server.config });
  const { kid } = await admin.keys.rotate({ immediate: true });
  assert.equal(await server.service.signingKeys.reload(), true);
  assert.equal(await idTokenKid(), kid);
  // A client that cached the old JWKS still verifies new tokens (openid-client refetches on an unknown kid).
  const { tokens } = await fullFlow(client, user.email);
  const refreshed = await oidc.refreshTokenGrant(client.config, tokens.refresh_token!);
  assert.equal(decodeJwt(refreshed.id_token!).header.kid, kid);
});
