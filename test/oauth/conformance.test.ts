// Checks from the OpenID conformance suite's basic profile that apply to flowgate
// (redirect-URI mismatch, code reuse, PKCE, prompt=none without session, unsupported response
// types, public clients).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  authUrl, Browser, fullFlow, loginAndGetCallback, makeClient, makeTestStore, oidc, REDIRECT_URI, seedUser, startServer,
  type SeededUser, type Server, type TestClient,
} from './helpers.ts';

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

function basic(c: TestClient) {
  return 'Basic ' + Buffer.from(`${c.clientId}:${c.clientSecret}`).toString('base64');
}

async function exchange(c: TestClient, code: string, extra: Record<string, string> = {}) {
  const res = await fetch(`${server.issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(c) },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, ...extra }).toString(),
  });
  return { status: res.status, body: await res.json() as Record<string, any> };
}

test('redirect URI mismatch: an error page, never a redirect', async () => {
  for (const bad of ['http://127.0.0.1:9/other', `${REDIRECT_URI}/x`, `${REDIRECT_URI}?a=1`, 'http://127.0.0.1:9/CALLBACK', 'https://evil.example/callback']) {
    const { url } = await authUrl(client, { redirect_uri: bad });
    const res = await fetch(url, { redirect: 'manual', headers: { accept: 'text/html' } });
    assert.equal(res.status, 400, bad);
    assert.equal(res.headers.get('location'), null, bad);
    const html = await res.text();
    assert.match(html, /redirect_uri/, bad);
    assert.doesNotMatch(html, /evil\.example/);
  }
  // Omitting redirect_uri is not allowed either (OIDC requires it).
  const { url } = await authUrl(client);
  const u = new URL(url);
  u.searchParams.delete('redirect_uri');
  const res = await fetch(u, { redirect: 'manual' });
  assert.equal(res.status, 400);
  assert.equal(res.headers.get('location'), null);
});

test('redirect_uri at the token endpoint must match the authorization request', async () => {
  const { url, verifier } = await authUrl(client);
  const cb = new URL(await loginAndGetCallback(new Browser(), url, user.email));
  const r = await exchange(client, cb.searchParams.get('code')!, { code_verifier: verifier, redirect_uri: 'http://127.0.0.1:9/other' });
  assert.equal(r.status, 400);
  assert.equal(r.body.error, 'invalid_grant');
});

test('authorization code reuse fails and revokes the tokens issued with it', async () => {
  const { url, verifier, state } = await authUrl(client);
  const cb = await loginAndGetCallback(new Browser(), url, user.email);
  const tokens = await oidc.authorizationCodeGrant(client.config, new URL(cb), { pkceCodeVerifier: verifier, expectedState: state });
  assert.ok(await server.service.verifyAccessToken(tokens.access_token));

  const again = await exchange(client, new URL(cb).searchParams.get('code')!, { code_verifier: verifier });
  assert.equal(again.status, 400);
  assert.equal(again.body.error, 'invalid_grant');
  assert.equal(await server.service.verifyAccessToken(tokens.access_token), null);
  await assert.rejects(oidc.refreshTokenGrant(client.config, tokens.refresh_token!), (e: any) => e.error === 'invalid_grant');
});

test("a code is bound to its client", async () => {
  const other = await makeClient(server);
  const { url, verifier } = await authUrl(client);
  const cb = new URL(await loginAndGetCallback(new Browser(), url, user.email));
  const r = await exchange(other, cb.searchParams.get('code')!, { code_verifier: verifier });
  assert.equal(r.status, 400);
  assert.equal(r.body.error, 'invalid_grant');
});

test('PKCE: a wrong or missing verifier fails', async () => {
  for (const extra of [{ code_verifier: oidc.randomPKCECodeVerifier() }, {} as Record<string, string>]) {
    const { url } = await authUrl(client);
    const cb = new URL(await loginAndGetCallback(new Browser(), url, user.email));
    const r = await exchange(client, cb.searchParams.get('code')!, extra);
    assert.equal(r.status, 400, JSON.stringify(extra));
    assert.equal(r.body.error, 'invalid_grant', JSON.stringify(extra));
  }
});

test('prompt=none without a session: login_required at the redirect URI', async () => {
  const { url, state } = await authUrl(client, { prompt: 'none' });
  const res = await fetch(url, { redirect: 'manual' });
  assert.equal(res.status, 303);
  const loc = new URL(res.headers.get('location')!);
  assert.equal(`${loc.origin}${loc.pathname}`, REDIRECT_URI);
  assert.equal(loc.searchParams.get('error'), 'login_required');
  assert.equal(loc.searchParams.get('state'), state);
  assert.equal(loc.searchParams.get('iss'), server.issuer);
});

test('implicit and hybrid response types are refused', async () => {
  for (const responseType of ['token', 'id_token', 'code id_token', 'code token']) {
    const { url } = await authUrl(client, { response_type: responseType, nonce: 'n' });
    const res = await fetch(url, { redirect: 'manual' });
    const loc = res.headers.get('location');
    assert.ok(loc, `${responseType}: expected an error redirect, got ${res.status}`);
    const params = new URLSearchParams(new URL(loc).search || new URL(loc).hash.slice(1));
    assert.equal(params.get('error'), 'unsupported_response_type', responseType);
  }
});

test('unknown client at the authorization endpoint: an error page', async () => {
  const res = await fetch(`${server.issuer}/authorize?client_id=fgc_AAAAAAAAAAAAAAAAAAAAAA&response_type=code&scope=openid&redirect_uri=${encodeURIComponent(REDIRECT_URI)}`, { redirect: 'manual' });
  assert.equal(res.status, 400);
  assert.equal(res.headers.get('location'), null);
});

test('public clients must use PKCE and authenticate with none', async () => {
  const pub = await makeClient(server, { public: true });
  assert.equal(pub.clientSecret, null);
  // Without a code challenge: invalid_request back at the client.
  const { url } = await authUrl(pub);
  const u = new URL(url);
  u.searchParams.delete('code_challenge');
  u.searchParams.delete('code_challenge_method');
  const res = await fetch(u, { redirect: 'manual' });
  const loc = new URL(res.headers.get('location')!);
  assert.equal(loc.searchParams.get('error'), 'invalid_request');
  assert.match(loc.searchParams.get('error_description') ?? '', /PKCE/);
  // plain is not supported.
  const plain = new URL(url);
  plain.searchParams.set('code_challenge_method', 'plain');
  const res2 = await fetch(plain, { redirect: 'manual' });
  assert.equal(new URL(res2.headers.get('location')!).searchParams.get('error'), 'invalid_request');

  // With PKCE the whole flow works, refresh included.
  const { tokens } = await fullFlow(pub, user.email);
  assert.ok(tokens.refresh_token);
  const refreshed = await oidc.refreshTokenGrant(pub.config, tokens.refresh_token!);
  assert.ok(refreshed.access_token);
});

test('the authorization response carries iss and state (RFC 9207)', async () => {
  const { url, state } = await authUrl(client);
  const cb = new URL(await loginAndGetCallback(new Browser(), url, user.email));
  assert.equal(cb.searchParams.get('iss'), server.issuer);
  assert.equal(cb.searchParams.get('state'), state);
  assert.ok(cb.searchParams.get('code'));
});
