// The whole seed flow (5.2) with openid-client, and the seed's refresh request with plain fetch.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  Browser, decodeJwt, fullFlow, loginAndGetCallback, makeClient, makeTestStore, oidc, REDIRECT_URI, seedRefresh, seedUser, startServer,
  type SeededUser, type Server,
} from './helpers.ts';

let server: Server;
let user: SeededUser;

before(async () => {
  server = await startServer(makeTestStore());
  user = await seedUser(server.handle, { company: 'Acme Flow Ltd' });
});
after(async () => {
  await server.stop();
  await server.store.destroy();
});

test('discovery publishes the endpoints and capabilities', async () => {
  const res = await fetch(`${server.issuer}/.well-known/openid-configuration`);
  assert.equal(res.status, 200);
  const d = await res.json() as Record<string, any>;
  assert.equal(d.issuer, `${server.baseUrl}/oauth2`);
  assert.equal(d.authorization_endpoint, `${server.baseUrl}/oauth2/authorize`);
  assert.equal(d.token_endpoint, `${server.baseUrl}/oauth2/token`);
  assert.equal(d.jwks_uri, `${server.baseUrl}/oauth2/jwks`);
  assert.equal(d.userinfo_endpoint, `${server.baseUrl}/oauth2/userinfo`);
  assert.equal(d.revocation_endpoint, `${server.baseUrl}/oauth2/revoke`);
  assert.equal(d.introspection_endpoint, `${server.baseUrl}/oauth2/introspect`);
  assert.deepEqual(d.response_types_supported, ['code']);
  assert.deepEqual([...d.grant_types_supported].sort(), ['authorization_code', 'refresh_token']);
  assert.deepEqual(d.code_challenge_methods_supported, ['S256']);
  for (const m of ['client_secret_basic', 'client_secret_post', 'none']) assert.ok(d.token_endpoint_auth_methods_supported.includes(m), m);
  assert.ok(!d.token_endpoint_auth_methods_supported.includes('client_secret_jwt'));
  for (const s of ['openid', 'email', 'automation', 'automation:webhook_run', 'connector_auth:view', 'embed:manage']) {
    assert.ok(d.scopes_supported.includes(s), s);
  }
  assert.ok(d.id_token_signing_alg_values_supported.includes('ES256'));
  assert.ok(d.id_token_signing_alg_values_supported.includes('RS256'));
  for (const c of ['sub', 'email', 'email_verified']) assert.ok(d.claims_supported.includes(c), c);
  assert.equal(d.authorization_response_iss_parameter_supported, true);
  // Same document at the RFC 8414 address.
  const oas = await fetch(`${server.issuer}/.well-known/oauth-authorization-server`);
  assert.equal(oas.status, 200);

  // The discovery URLs come from the configured base URL, not from the Host header.
  const spoofed = await fetch(`${server.issuer}/.well-known/openid-configuration`, { headers: { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' } });
  assert.equal((await spoofed.json() as Record<string, string>).token_endpoint, `${server.baseUrl}/oauth2/token`);
});

test('JWKS offers ES256 and RS256 public keys only', async () => {
  const res = await fetch(`${server.issuer}/jwks`);
  assert.equal(res.status, 200);
  const { keys } = await res.json() as { keys: Array<Record<string, unknown>> };
  const algs = keys.map((k) => k.alg).sort();
  assert.deepEqual(algs, ['ES256', 'RS256']);
  for (const k of keys) {
    for (const priv of ['d', 'p', 'q', 'dp', 'dq', 'qi']) assert.equal(k[priv], undefined, `private ${priv} published`);
    assert.equal(k.use, 'sig');
    assert.ok(typeof k.kid === 'string' && k.kid);
  }
});

test('authorization code + PKCE with openid-client, then refresh, userinfo, introspection, revocation', async () => {
  const client = await makeClient(server);
  const { tokens } = await fullFlow(client, user.email);
  assert.equal(tokens.token_type.toLowerCase(), 'bearer');
  assert.ok(tokens.access_token);
  assert.ok(tokens.refresh_token, 'a refresh token without offline_access');
  assert.ok(tokens.id_token);
  const claims = tokens.claims()!;
  assert.equal(claims.sub, user.id);
  assert.equal(claims.email, user.email);
  assert.equal(claims.email_verified, true);
  assert.equal(claims.iss, server.issuer);
  assert.equal(claims.aud, client.clientId);
  assert.equal(decodeJwt(tokens.id_token!).header.alg, 'ES256');
  assert.ok(tokens.expires_in && tokens.expires_in > 3000 && tokens.expires_in <= 3600);

  const info = await oidc.fetchUserInfo(client.config, tokens.access_token, user.id);
  assert.equal(info.email, user.email);
  assert.equal(info.email_verified, true);

  const refreshed = await oidc.refreshTokenGrant(client.config, tokens.refresh_token!);
  assert.ok(refreshed.access_token);
  assert.notEqual(refreshed.access_token, tokens.access_token);
  assert.ok(refreshed.refresh_token);
  assert.notEqual(refreshed.refresh_token, tokens.refresh_token, 'rotated');
  assert.equal(refreshed.claims()!.sub, user.id);

  const intro = await oidc.tokenIntrospection(client.config, refreshed.access_token);
  assert.equal(intro.active, true);
  assert.equal(intro.sub, user.id);
  assert.equal(intro.client_id, client.clientId);

  await oidc.tokenRevocation(client.config, refreshed.refresh_token!);
  await assert.rejects(oidc.refreshTokenGrant(client.config, refreshed.refresh_token!), (err: any) => {
    assert.equal(err.error, 'invalid_grant');
    return true;
  });
  // Revoking the refresh token revokes the grant, hence its access tokens.
  assert.equal(await server.service.verifyAccessToken(refreshed.access_token), null);
  assert.equal((await oidc.tokenIntrospection(client.config, refreshed.access_token)).active, false);
});

test('the seed refresh request, byte for byte (Basic + client_id in the body)', async () => {
  const client = await makeClient(server);
  const { tokens } = await fullFlow(client, user.email);
  const res = await seedRefresh(server, client.clientId, client.clientSecret!, tokens.refresh_token!);
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  const body = JSON.parse(text) as Record<string, any>;
  assert.ok(typeof body.access_token === 'string' && body.access_token.length >= 40);
  assert.equal(body.token_type, 'Bearer');
  assert.equal(typeof body.expires_in, 'number');
  assert.ok(typeof body.id_token === 'string');
  assert.ok(typeof body.refresh_token === 'string' && body.refresh_token !== tokens.refresh_token);
  assert.equal(decodeJwt(body.id_token).payload.email, user.email);
  const v = await server.service.verifyAccessToken(body.access_token);
  assert.equal(v?.userId, user.id);
  assert.equal(v?.scopes, null);

  // And again with the new refresh token: the chain continues.
  const again = await seedRefresh(server, client.clientId, client.clientSecret!, body.refresh_token);
  assert.equal(again.status, 200);
});

test('client_secret_post works too', async () => {
  const client = await makeClient(server, { post: true });
  const { tokens } = await fullFlow(client, user.email);
  const refreshed = await oidc.refreshTokenGrant(client.config, tokens.refresh_token!);
  assert.ok(refreshed.access_token);
});

test('scope "email openid" and "openid email" give the same result', async () => {
  const client = await makeClient(server);
  for (const scope of ['email openid', 'openid email']) {
    const { tokens } = await fullFlow(client, user.email, { scope });
    assert.ok(tokens.refresh_token, scope);
    assert.equal(tokens.claims()!.email, user.email, scope);
    assert.deepEqual(tokens.scope?.split(' ').sort(), ['email', 'openid'], scope);
  }
});

test('an existing browser session skips the login form', async () => {
  const client = await makeClient(server);
  const browser = new Browser();
  await fullFlow(client, user.email, {}, browser);
  const second = await fullFlow(client, 'nobody@example.com' /* not used: no form */, {}, browser);
  assert.equal(second.tokens.claims()!.sub, user.id);
  // prompt=none with the session works as well.
  const third = await fullFlow(client, user.email, { prompt: 'none' }, browser);
  assert.equal(third.tokens.claims()!.sub, user.id);
});

test('RS256 ID tokens for a client that asks for them', async () => {
  const client = await makeClient(server, { idTokenAlg: 'RS256' });
  const { tokens } = await fullFlow(client, user.email);
  assert.equal(decodeJwt(tokens.id_token!).header.alg, 'RS256');
});

test('pushed authorization requests (RFC 9126) work too', async () => {
  const client = await makeClient(server);
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const url = await oidc.buildAuthorizationUrlWithPAR(client.config, {
    redirect_uri: REDIRECT_URI, scope: 'openid email', state,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
  });
  assert.ok(url.searchParams.get('request_uri')?.startsWith('urn:ietf:params:oauth:request_uri:'));
  const cb = await loginAndGetCallback(new Browser(), url.href, user.email);
  const tokens = await oidc.authorizationCodeGrant(client.config, new URL(cb), { pkceCodeVerifier: verifier, expectedState: state });
  assert.ok(tokens.refresh_token);
  assert.equal(tokens.claims()!.email, user.email);
});
