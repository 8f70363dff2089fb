// Refresh-token rotation, the grace window, concurrent refreshes and the token endpoint's errors.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import {
  fullFlow, liveRefreshTokens, makeClient, makeTestStore, oidc, seedRefresh, seedUser, sleep, startServer,
  type SeededUser, type Server, type TestClient,
} from './helpers.ts';
import { hashTokenId } from '../../src/modules/oauth/adapter.ts';

let server: Server;
let user: SeededUser;
let client: TestClient;
/** The grace window of these tests, and a wait that surely ends it. */
const GRACE_S = 2;
const AFTER_GRACE_MS = GRACE_S * 1000 + 300;

before(async () => {
  server = await startServer(makeTestStore(), { env: { FLOWGATE_OAUTH_REFRESH_GRACE_SECONDS: String(GRACE_S) } });
  user = await seedUser(server.handle);
  client = await makeClient(server);
});
after(async () => {
  await server.stop();
  await server.store.destroy();
});

async function session() {
  const { tokens } = await fullFlow(client, user.email);
  const v = await server.service.verifyAccessToken(tokens.access_token);
  assert.ok(v);
  return { rt: tokens.refresh_token!, at: tokens.access_token, grantId: v.grantId };
}

async function refresh(rt: string, c: TestClient = client) {
  const res = await seedRefresh(server, c.clientId, c.clientSecret!, rt);
  return { status: res.status, body: await res.json() as Record<string, any>, headers: res.headers };
}

test('rotation: the old refresh token stops working; reuse after the grace window revokes the grant', async () => {
  const { rt, at, grantId } = await session();
  const first = await refresh(rt);
  assert.equal(first.status, 200);
  const next = first.body.refresh_token as string;
  assert.notEqual(next, rt);

  await sleep(AFTER_GRACE_MS);
  const reuse = await refresh(rt);
  assert.equal(reuse.status, 400);
  assert.equal(reuse.body.error, 'invalid_grant');
  // The whole grant is gone: the successor, and every access token.
  const successor = await refresh(next);
  assert.equal(successor.status, 400);
  assert.equal(successor.body.error, 'invalid_grant');
  assert.equal(await server.service.verifyAccessToken(at), null);
  assert.equal(await server.service.verifyAccessToken(first.body.access_token), null);
  assert.equal(await liveRefreshTokens(server, grantId), 0);
  // Reuse detection is logged (with the grant, never the token).
  const line = server.logs.find((l) => l.includes('oauth refresh token reuse: grant revoked') && l.includes(grantId));
  assert.ok(line, 'reuse logged');
  assert.ok(!line.includes(rt));
});

test('inside the grace window a repeat returns a valid answer with the same successor', async () => {
  const { rt, grantId } = await session();
  const first = await refresh(rt);
  assert.equal(first.status, 200);
  const repeat = await refresh(rt);
  assert.equal(repeat.status, 200, JSON.stringify(repeat.body));
  assert.equal(repeat.body.refresh_token, first.body.refresh_token, 'same successor, no fork');
  assert.notEqual(repeat.body.access_token, first.body.access_token);
  assert.ok(await server.service.verifyAccessToken(repeat.body.access_token));
  assert.ok(await server.service.verifyAccessToken(first.body.access_token));
  assert.equal(await liveRefreshTokens(server, grantId), 1);

  // After the window the successor works and the old one is reuse.
  await sleep(AFTER_GRACE_MS);
  const onward = await refresh(first.body.refresh_token);
  assert.equal(onward.status, 200);
  assert.equal(await liveRefreshTokens(server, grantId), 1);
});

test('a burst of 10 concurrent refreshes with one token all succeed; afterwards exactly one refresh token lives', async () => {
  const { rt, grantId } = await session();
  const results = await Promise.all(Array.from({ length: 10 }, () => refresh(rt)));
  for (const r of results) assert.equal(r.status, 200, JSON.stringify(r.body));
  const successors = new Set(results.map((r) => r.body.refresh_token));
  assert.equal(successors.size, 1, 'every answer carries the same successor');
  const accessTokens = new Set(results.map((r) => r.body.access_token));
  assert.equal(accessTokens.size, 10);

  await sleep(AFTER_GRACE_MS);
  assert.equal(await liveRefreshTokens(server, grantId), 1);
  const [successor] = successors;
  const onward = await refresh(successor);
  assert.equal(onward.status, 200);
  assert.equal(await liveRefreshTokens(server, grantId), 1);
  // The original token, now outside its window, is reuse: the grant is revoked.
  const reuse = await refresh(rt);
  assert.equal(reuse.body.error, 'invalid_grant');
  assert.equal((await refresh(onward.body.refresh_token)).body.error, 'invalid_grant');
});

test('concurrent refreshes through openid-client keep one chain', async () => {
  const { rt, grantId } = await session();
  const answers = await Promise.all([1, 2, 3].map(() => oidc.refreshTokenGrant(client.config, rt)));
  assert.equal(new Set(answers.map((a) => a.refresh_token)).size, 1);
  await sleep(AFTER_GRACE_MS);
  assert.equal(await liveRefreshTokens(server, grantId), 1);
});

test('wrong client secret: 401 invalid_client with WWW-Authenticate', async () => {
  const { rt } = await session();
  const res = await seedRefresh(server, client.clientId, 'fgcs_wrong', rt);
  assert.equal(res.status, 401);
  const body = await res.json() as Record<string, string>;
  assert.equal(body.error, 'invalid_client');
  assert.match(res.headers.get('www-authenticate') ?? '', /^Basic /);
  // The refresh token was not touched.
  assert.equal((await refresh(rt)).status, 200);
});

test('unknown client: 401 invalid_client', async () => {
  const res = await seedRefresh(server, 'fgc_AAAAAAAAAAAAAAAAAAAAAA', 'fgcs_x', 'whatever');
  assert.equal(res.status, 401);
  assert.equal((await res.json() as Record<string, string>).error, 'invalid_client');
});

test("another client's refresh token: 400 invalid_grant, and the owner's token keeps working", async () => {
  const { rt } = await session();
  const other = await makeClient(server);
  const res = await refresh(rt, other);
  assert.equal(res.status, 400);
  assert.equal(res.body.error, 'invalid_grant');
  assert.equal((await refresh(rt)).status, 200);
});

test('unknown, expired and revoked refresh tokens: 400 invalid_grant', async () => {
  const unknown = await refresh('x'.repeat(43));
  assert.equal(unknown.status, 400);
  assert.equal(unknown.body.error, 'invalid_grant');

  const { rt } = await session();
  // Expire it in the database.
  const row = await server.handle.db.selectFrom('oauth_models' as never).select(sql<string>`payload`.as('payload'))
    .where(sql`model`, '=', 'RefreshToken').where(sql`id`, '=', hashTokenId(rt)).executeTakeFirstOrThrow() as { payload: string };
  const payload = JSON.parse(row.payload);
  payload.exp = Math.floor(Date.now() / 1000) - 60;
  await server.handle.db.updateTable('oauth_models' as never).set({ payload: JSON.stringify(payload) } as never)
    .where(sql`model`, '=', 'RefreshToken').where(sql`id`, '=', hashTokenId(rt)).execute();
  const expired = await refresh(rt);
  assert.equal(expired.status, 400);
  assert.equal(expired.body.error, 'invalid_grant');

  const { rt: rt2 } = await session();
  await oidc.tokenRevocation(client.config, rt2);
  const revoked = await refresh(rt2);
  assert.equal(revoked.status, 400);
  assert.equal(revoked.body.error, 'invalid_grant');
});

test('client_id in the body must match the Basic credentials', async () => {
  const { rt } = await session();
  const other = await makeClient(server);
  const res = await fetch(`${server.issuer}/token`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      Authorization: 'Basic ' + Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64'),
    },
    body: `grant_type=refresh_token&client_id=${other.clientId}&refresh_token=${rt}`,
  });
  assert.equal(res.status, 400);
  assert.equal((await res.json() as Record<string, string>).error, 'invalid_request');
});

test('malformed token requests get OAuth errors, never a 500', async () => {
  const basic = 'Basic ' + Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64');
  const url = `${server.issuer}/token`;
  const { rt } = await session();
  const cases: Array<{ name: string; init: RequestInit; status: number; error: string }> = [
    {
      name: 'JSON body',
      init: { method: 'POST', headers: { 'content-type': 'application/json', authorization: basic }, body: JSON.stringify({ grant_type: 'refresh_token', refresh_token: rt }) },
      status: 400, error: 'invalid_request',
    },
    {
      name: 'repeated parameter',
      init: { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic }, body: `grant_type=refresh_token&refresh_token=${rt}&refresh_token=${rt}` },
      status: 400, error: 'invalid_request',
    },
    {
      name: 'missing grant_type',
      init: { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic }, body: `refresh_token=${rt}` },
      status: 400, error: 'invalid_request',
    },
    {
      name: 'password grant',
      init: { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic }, body: 'grant_type=password&username=a&password=b' },
      status: 400, error: 'unsupported_grant_type',
    },
    {
      name: 'client_credentials grant',
      init: { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic }, body: 'grant_type=client_credentials' },
      status: 400, error: 'unsupported_grant_type',
    },
    {
      name: 'missing refresh_token',
      init: { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic }, body: 'grant_type=refresh_token' },
      status: 400, error: 'invalid_request',
    },
    {
      name: 'two client authentication methods',
      init: { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic }, body: `grant_type=refresh_token&refresh_token=${rt}&client_secret=${client.clientSecret}` },
      status: 400, error: 'invalid_request',
    },
    {
      name: 'malformed Basic header',
      init: { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: 'Basic !!!' }, body: `grant_type=refresh_token&refresh_token=${rt}` },
      status: 400, error: 'invalid_request',
    },
    {
      name: 'no client authentication',
      init: { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `grant_type=refresh_token&refresh_token=${rt}` },
      status: 400, error: 'invalid_request',
    },
    { name: 'GET', init: { method: 'GET' }, status: 405, error: 'invalid_request' },
    { name: 'PUT', init: { method: 'PUT', headers: { authorization: basic } }, status: 405, error: 'invalid_request' },
    {
      name: 'text/plain body',
      init: { method: 'POST', headers: { 'content-type': 'text/plain', authorization: basic }, body: 'grant_type=refresh_token' },
      status: 400, error: 'invalid_request',
    },
  ];
  for (const c of cases) {
    const res = await fetch(url, c.init);
    const text = await res.text();
    assert.equal(res.status, c.status, `${c.name}: ${text}`);
    const body = JSON.parse(text) as Record<string, string>;
    assert.equal(body.error, c.error, c.name);
    assert.equal(res.headers.get('cache-control'), 'no-store', c.name);
  }
  // The refresh token survived all of that.
  assert.equal((await refresh(rt)).status, 200);
});

test('a disabled user cannot refresh and their access tokens are refused', async () => {
  const u = await seedUser(server.handle);
  const { tokens } = await fullFlow(client, u.email);
  await server.handle.db.updateTable('users').set({ disabled: 1 }).where('id', '=', u.id).execute();
  assert.equal(await server.service.verifyAccessToken(tokens.access_token), null);
  const res = await refresh(tokens.refresh_token!);
  assert.equal(res.status, 400);
  assert.equal(res.body.error, 'invalid_grant');
});

test('refresh-token lifetime slides per rotation and never passes the absolute ceiling', async () => {
  const { rt } = await session();
  const readPayload = async (token: string) => {
    const row = await server.handle.db.selectFrom('oauth_models' as never).select(sql<string>`payload`.as('payload'))
      .where(sql`model`, '=', 'RefreshToken').where(sql`id`, '=', hashTokenId(token)).executeTakeFirstOrThrow() as { payload: string };
    return JSON.parse(row.payload) as Record<string, number>;
  };
  const writePayload = async (token: string, p: Record<string, number>) => {
    await server.handle.db.updateTable('oauth_models' as never).set({ payload: JSON.stringify(p) } as never)
      .where(sql`model`, '=', 'RefreshToken').where(sql`id`, '=', hashTokenId(token)).execute();
  };
  const now = () => Math.floor(Date.now() / 1000);
  const first = await refresh(rt);
  const p1 = await readPayload(first.body.refresh_token);
  assert.ok(Math.abs(p1.exp - (now() + server.config.oauthRefreshTokenTtl)) <= 5, 'sliding TTL');
  assert.equal(p1.iiat, (await readPayload(rt)).iiat, 'iiat carried along the chain');

  // Pretend the chain started almost an absolute lifetime ago: the successor gets only what is left.
  const p = await readPayload(first.body.refresh_token);
  p.iiat = now() - server.config.oauthRefreshTokenAbsoluteTtl + 100;
  await writePayload(first.body.refresh_token, p);
  const second = await refresh(first.body.refresh_token);
  assert.equal(second.status, 200);
  const p2 = await readPayload(second.body.refresh_token);
  assert.ok(p2.exp <= p.iiat + server.config.oauthRefreshTokenAbsoluteTtl + 1, 'capped by the absolute ceiling');
  assert.ok(p2.exp - now() <= 100 && p2.exp - now() > 80, `left ${p2.exp - now()} s`);
});
