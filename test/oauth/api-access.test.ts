// The whole app (buildApp, every module) listening on 127.0.0.1, driven with OAuth access
// tokens from its own provider: `Authorization: Bearer <ACCESS_TOKEN>` on /v1, API scopes,
// refusals, PATs created with an access token, the audit trail, the login page's limits in
// the wired app, and provider requests in /metrics.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { sql } from 'kysely';
import { startTestApp, problem, ALL_SCOPES, type TestApp } from '../support/app.ts';
import { hashTokenId } from '../../src/modules/oauth/adapter.ts';
import { BAD_CREDENTIALS } from '../../src/modules/oauth/index.ts';
import {
  authUrl, Browser, formAction, freePort, fullFlow, oidc, PASSWORD, REDIRECT_URI, seedRefresh, submitLogin, type TestClient,
} from './helpers.ts';

interface Listening { t: TestApp; baseUrl: string; issuer: string; close(): Promise<void> }

/** startTestApp, then listen: the provider builds its URLs from FLOWGATE_BASE_URL. */
async function startListening(env: Record<string, string> = {}): Promise<Listening> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const t = await startTestApp({ FLOWGATE_BASE_URL: baseUrl, ...env });
  await t.app.listen({ host: '127.0.0.1', port });
  return { t, baseUrl, issuer: `${baseUrl}/oauth2`, close: () => t.close() };
}

async function makeClient(l: Listening): Promise<TestClient> {
  const { clientId, clientSecret } = await l.t.ctx.services.oauth!.clients.create({ name: 'API access tests', redirectUris: [REDIRECT_URI] });
  const config = await oidc.discovery(new URL(l.issuer), clientId, undefined, oidc.ClientSecretBasic(clientSecret!), { execute: [oidc.allowInsecureRequests] });
  return { clientId, clientSecret, config };
}

let l: Listening;
let t: TestApp;
let client: TestClient;
/** The dedicated API user of seed 5.2 step 2: an ordinary user an admin created, here an admin. */
let apiUser: { id: string; email: string };
let member: { id: string; email: string };

async function userWithPassword(role: 'admin' | 'member') {
  const email = `oauth-${role}-${crypto.randomBytes(4).toString('hex')}@example.com`;
  const u = await t.ctx.services.users.create(null, t.tenant.companyId, { email, name: `OAuth ${role}`, role, password: PASSWORD });
  return { id: u.id, email };
}

async function accessToken(email: string, scope = 'email openid') {
  const { tokens } = await fullFlow(client, email, { scope });
  return tokens;
}

const bearer = (token: string) => ({ token });
/** A problem body without what differs per request. */
const stable = (res: { json(): any }) => {
  const { request_id: _r, instance: _i, ...rest } = res.json();
  return rest;
};

before(async () => {
  l = await startListening({ FLOWGATE_OAUTH_REFRESH_GRACE_SECONDS: '1' });
  t = l.t;
  client = await makeClient(l);
  apiUser = await userWithPassword('admin');
  member = await userWithPassword('member');
});
after(async () => {
  await l.close();
});

test('Bearer access token (scope "email openid") acts as the user with all of the user\'s rights on /v1', async () => {
  const tokens = await accessToken(apiUser.email);
  const grantId = (await t.ctx.services.oauth!.verifyAccessToken(tokens.access_token))!.grantId;
  const tok = bearer(tokens.access_token);

  const users = await t.call('GET', '/v1/users?limit=200', tok);
  assert.equal(users.statusCode, 200, users.body);
  assert.ok(users.json().data.some((u: any) => u.id === apiUser.id));
  assert.equal((await t.call('GET', `/v1/users/${apiUser.id}`, tok)).json().email, apiUser.email);
  // Every operation of every scope's entities, as the user may: create, read, update, delete.
  const team = await t.call('POST', '/v1/teams', { ...tok, body: { name: 'OAuth team', member_ids: [apiUser.id] } });
  assert.equal(team.statusCode, 201, team.body);
  const teamId = team.json().id;
  assert.equal((await t.call('PUT', `/v1/teams/${teamId}`, { ...tok, body: { name: 'OAuth team 2', member_ids: [] } })).statusCode, 200);
  assert.equal((await t.call('DELETE', `/v1/teams/${teamId}`, tok)).statusCode, 204);
  for (const path of ['/v1/connector-auths', '/v1/connectors?limit=1', '/v1/flows', '/v1/env-variables', '/v1/file-uploads', '/v1/audit-events']) {
    const res = await t.call('GET', path, tok);
    assert.equal(res.statusCode, 200, `${path}: ${res.body}`);
  }
  // Over real HTTP too, exactly as a client sends it.
  const http = await fetch(`${l.baseUrl}/v1/users/${apiUser.id}`, { headers: { Authorization: `Bearer ${tokens.access_token}` } });
  assert.equal(http.status, 200);

  // The audit trail names the user and the OAuth grant as the credential.
  const events = (await t.call('GET', `/v1/audit-events?limit=50&filter=target_id,eq,"${teamId}"`)).json().data as any[];
  assert.deepEqual(events.map((e) => e.action).sort(), ['team.created', 'team.deleted', 'team.updated']);
  for (const e of events) {
    assert.equal(e.credential_kind, 'oauth');
    assert.equal(e.credential_id, grantId);
    assert.equal(e.actor_user_id, apiUser.id);
  }
});

test("the user's rights, not more: a member's access token cannot do what needs an admin", async () => {
  const tokens = await accessToken(member.email);
  const tok = bearer(tokens.access_token);
  assert.equal((await t.call('GET', '/v1/users', tok)).statusCode, 200);
  problem(await t.call('POST', '/v1/users', { ...tok, body: { email: 'x@example.com', name: 'X' } }), 403, 'admin_required');
  problem(await t.call('GET', '/v1/audit-events', tok), 403, 'admin_required');
});

test('an access token with API scopes ("openid email connector_auth:view") is limited exactly like a PAT', async () => {
  const tokens = await accessToken(apiUser.email, 'openid email connector_auth:view');
  assert.deepEqual(tokens.scope?.split(' ').sort(), ['connector_auth:view', 'email', 'openid']);
  // Its twin: a PAT of the same user with the same scope.
  const twin = await t.ctx.services.tokens.create(null, { companyId: t.tenant.companyId, userId: apiUser.id }, { expiration: 1, scopes: ['connector_auth:view'], note: 'twin' });

  const missing = crypto.randomUUID();
  const cases: Array<[string, string, unknown, number, string | null]> = [
    ['GET', '/v1/connector-auths', undefined, 200, null],
    ['GET', `/v1/connector-auths/${missing}`, undefined, 404, 'not_found'],
    ['POST', '/v1/connector-auths', { name: 'x' }, 403, 'insufficient_scope'],
    ['PUT', `/v1/connector-auths/${missing}`, { name: 'x' }, 403, 'insufficient_scope'],
    ['DELETE', `/v1/connector-auths/${missing}`, undefined, 403, 'insufficient_scope'],
    ['GET', '/v1/users', undefined, 403, 'insufficient_scope'],
    ['POST', '/v1/teams', { name: 't', member_ids: [] }, 403, 'insufficient_scope'],
    ['GET', '/v1/flows', undefined, 403, 'insufficient_scope'],
    ['GET', '/v1/connectors', undefined, 403, 'insufficient_scope'],
    ['GET', '/v1/env-variables', undefined, 403, 'insufficient_scope'],
    ['GET', '/v1/audit-events', undefined, 403, 'insufficient_scope'],
  ];
  for (const [method, path, body, status, code] of cases) {
    const viaOAuth = await t.call(method, path, { token: tokens.access_token, body });
    const viaPat = await t.call(method, path, { token: twin.token, body });
    assert.equal(viaOAuth.statusCode, status, `${method} ${path}: ${viaOAuth.body}`);
    assert.equal(viaPat.statusCode, status, `PAT ${method} ${path}: ${viaPat.body}`);
    if (code) {
      assert.equal(viaOAuth.json().code, code, `${method} ${path}`);
      assert.deepEqual(stable(viaOAuth), stable(viaPat), `${method} ${path}`);
      assert.equal(viaOAuth.headers['www-authenticate'], viaPat.headers['www-authenticate']);
    }
  }
  const denied = problem(await t.call('POST', '/v1/connector-auths', { token: tokens.access_token, body: {} }), 403, 'insufficient_scope');
  assert.deepEqual(denied.required_scopes, ['connector_auth', 'connector_auth:manage']);
  assert.match(String((await t.call('GET', '/v1/users', { token: tokens.access_token })).headers['www-authenticate']), /error="insufficient_scope"/);
});

test('a disabled user, a revoked grant, a revoked or expired access token: the same 401 invalid_token at once', async () => {
  const someone = await userWithPassword('member');
  const [forDisabled, forGrant, forRevoked, forExpired] = [
    await accessToken(someone.email), await accessToken(apiUser.email), await accessToken(apiUser.email), await accessToken(apiUser.email),
  ];
  for (const tk of [forDisabled, forGrant, forRevoked, forExpired]) {
    assert.equal((await t.call('GET', '/v1/teams', bearer(tk.access_token))).statusCode, 200);
  }

  // Disabled by an admin through the API.
  assert.equal((await t.call('PUT', `/v1/users/${someone.id}`, { body: { disabled: true } })).statusCode, 200);
  // The grant revoked at the revocation endpoint (RFC 7009) with its refresh token.
  const auth = 'Basic ' + Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64');
  const revokeGrant = await fetch(`${l.issuer}/revoke`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: auth },
    body: new URLSearchParams({ token: forGrant.refresh_token!, token_type_hint: 'refresh_token' }),
  });
  assert.equal(revokeGrant.status, 200);
  // An access token revoked on its own.
  const revokeAt = await fetch(`${l.issuer}/revoke`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: auth },
    body: new URLSearchParams({ token: forRevoked.access_token, token_type_hint: 'access_token' }),
  });
  assert.equal(revokeAt.status, 200);
  // Expired: its stored expiry moved into the past (the shortest configurable lifetime is a minute).
  const id = hashTokenId(forExpired.access_token);
  const db = t.ctx.database.db;
  const row = await db.selectFrom('oauth_models' as never).select(sql<string>`payload`.as('payload'))
    .where(sql`model`, '=', 'AccessToken').where(sql`id`, '=', id).executeTakeFirstOrThrow() as { payload: string };
  await db.updateTable('oauth_models' as never).set({ payload: JSON.stringify({ ...JSON.parse(row.payload), exp: Math.floor(Date.now() / 1000) - 1 }) } as never)
    .where(sql`model`, '=', 'AccessToken').where(sql`id`, '=', id).execute();

  const unknown = await t.call('GET', '/v1/teams', bearer(crypto.randomBytes(32).toString('base64url')));
  problem(unknown, 401, 'invalid_token');
  const reference = stable(unknown);
  for (const [why, tk] of [['disabled user', forDisabled], ['revoked grant', forGrant], ['revoked access token', forRevoked], ['expired', forExpired]] as const) {
    for (const [method, path] of [['GET', '/v1/teams'], ['GET', '/v1/connector-auths'], ['POST', '/v1/personal-access-tokens']]) {
      const res = await t.call(method, path, { token: tk.access_token, body: method === 'POST' ? { expiration: 1, scopes: ['company'], note: '' } : undefined });
      problem(res, 401, 'invalid_token');
      assert.deepEqual(stable(res), reference, `${why}: ${method} ${path}`);
      assert.equal(res.headers['www-authenticate'], unknown.headers['www-authenticate'], why);
    }
  }
  // The revoked grant's other access token is gone too (revoking a refresh token ends the grant).
  const sameGrantAgain = await seedRefresh({ issuer: l.issuer } as never, client.clientId, client.clientSecret!, forGrant.refresh_token!);
  assert.equal(sameGrantAgain.status, 400);
  // Enabled again: the same token works again (nothing was cached as refused, nothing as allowed).
  assert.equal((await t.call('PUT', `/v1/users/${someone.id}`, { body: { disabled: false } })).statusCode, 200);
  assert.equal((await t.call('GET', '/v1/teams', bearer(forDisabled.access_token))).statusCode, 200);
});

test('an access token creates PATs with any scopes and no expiry, and regenerates them (no no-escalation limit)', async () => {
  const tokens = await accessToken(apiUser.email);
  const grantId = (await t.ctx.services.oauth!.verifyAccessToken(tokens.access_token))!.grantId;
  const tok = bearer(tokens.access_token);
  const created = await t.call('POST', '/v1/personal-access-tokens', { ...tok, body: { expiration: null, scopes: ALL_SCOPES, note: 'made with OAuth' } });
  assert.equal(created.statusCode, 201, created.body);
  const pat = created.json();
  assert.equal(pat.expiration, null);
  assert.deepEqual([...pat.scopes].sort(), [...ALL_SCOPES].sort());
  // The PAT is the API user's and works.
  const me = await t.call('GET', `/v1/personal-access-tokens/${pat.id}`, { token: pat.token });
  assert.equal(me.json().user_id, apiUser.id);

  const regenerated = await t.call('POST', `/v1/personal-access-tokens/${pat.id}/regenerate`, { ...tok, body: { expiration: null } });
  assert.equal(regenerated.statusCode, 200, regenerated.body);
  assert.notEqual(regenerated.json().token, pat.token);
  assert.equal(regenerated.json().expiration, null);
  problem(await t.call('GET', '/v1/teams', { token: pat.token }), 401, 'invalid_token');
  assert.equal((await t.call('GET', '/v1/teams', { token: regenerated.json().token })).statusCode, 200);

  // The same requests with a PAT of the same user that expires are refused (the limit exists).
  const limited = await t.ctx.services.tokens.create(null, { companyId: t.tenant.companyId, userId: apiUser.id }, { expiration: 30, scopes: ALL_SCOPES, note: 'limited' });
  problem(await t.call('POST', '/v1/personal-access-tokens', { token: limited.token, body: { expiration: null, scopes: ALL_SCOPES, note: 'x' } }), 403, 'scope_escalation');
  problem(await t.call('POST', `/v1/personal-access-tokens/${pat.id}/regenerate`, { token: limited.token, body: { expiration: null } }), 403, 'scope_escalation');

  // Audited as done with the OAuth grant.
  const events = (await t.call('GET', `/v1/audit-events?limit=50&filter=target_id,eq,"${pat.id}"`)).json().data as any[];
  assert.deepEqual(events.map((e) => e.action).sort(), ['token.created', 'token.regenerated']);
  for (const e of events) {
    assert.equal(e.credential_kind, 'oauth');
    assert.equal(e.credential_id, grantId);
    assert.equal(e.actor_user_id, apiUser.id);
  }
});

test('/metrics counts provider requests by route pattern, method and status', async () => {
  const tokens = await accessToken(apiUser.email);
  const ok = await seedRefresh({ issuer: l.issuer } as never, client.clientId, client.clientSecret!, tokens.refresh_token!);
  assert.equal(ok.status, 200);
  const bad = await seedRefresh({ issuer: l.issuer } as never, client.clientId, client.clientSecret!, 'not-a-refresh-token');
  assert.equal(bad.status, 400);
  const odd = `/oauth2/no-such-endpoint-${crypto.randomBytes(4).toString('hex')}`;
  assert.equal((await fetch(l.baseUrl + odd)).status, 404);
  assert.equal((await fetch(`${l.issuer}/.well-known/openid-configuration`)).status, 200);

  const metrics = await (await fetch(`${l.baseUrl}/metrics`)).text();
  const count = (labels: string) => {
    const m = new RegExp(`^flowgate_http_requests_total\\{${labels.replace(/[/.*]/g, (c) => `\\${c}`)}\\} (\\d+)`, 'm').exec(metrics);
    return m ? Number(m[1]) : 0;
  };
  assert.ok(count('method="POST",route="/oauth2/token",status="200"') >= 2, 'code and refresh grants counted');
  assert.ok(count('method="POST",route="/oauth2/token",status="400"') >= 1);
  assert.ok(count('method="GET",route="/oauth2/authorize",status="303"') >= 1);
  assert.ok(count('method="GET",route="/oauth2/authorize/:uid",status="303"') >= 1);
  assert.ok(count('method="GET",route="/oauth2/.well-known/openid-configuration",status="200"') >= 1);
  assert.ok(count('method="GET",route="/oauth2/*",status="404"') >= 1);
  // The login page is an ordinary Fastify route and was counted before too.
  assert.ok(count('method="POST",route="/oauth2/interaction/:uid",status="303"') >= 1);
  assert.match(metrics, /flowgate_http_request_duration_seconds_count\{method="POST",route="\/oauth2\/token"\} \d+/);
  // Raw paths and their ids never become labels.
  assert.ok(!metrics.includes(odd));
  assert.doesNotMatch(metrics, /route="\/oauth2\/authorize\/[A-Za-z0-9_-]{10,}"/);
});

test('the login page of the wired app: the same answer for unknown e-mail and wrong password; limits per account and per IP', async () => {
  // An app of its own: the IP limit would otherwise lock 127.0.0.1 out of the other tests.
  const own = await startListening();
  try {
    const c = await makeClient(own);
    const ta = own.t;
    const mk = async () => {
      const email = `limit-${crypto.randomBytes(4).toString('hex')}@example.com`;
      await ta.ctx.services.users.create(null, ta.tenant.companyId, { email, name: 'L', role: 'member', password: PASSWORD });
      return email;
    };
    const victim = await mk();
    const bystander = await mk();
    const browser = new Browser();
    const { url } = await authUrl(c);
    const first = await browser.follow(url, () => false);
    assert.equal(first.res.status, 200);
    const pageUrl = first.url;
    let page = await first.res.text();
    assert.match(page, /<label for="email">/);

    // Unknown e-mail and wrong password: same status, same page apart from the echoed e-mail.
    const unknownEmail = `nobody-${crypto.randomBytes(4).toString('hex')}@example.com`;
    const a = await submitLogin(browser, pageUrl, page, unknownEmail, 'wrong password 0');
    const aHtml = await a.text();
    const b = await submitLogin(browser, pageUrl, page, victim, 'wrong password 1');
    const bHtml = await b.text();
    assert.equal(a.status, 401);
    assert.equal(b.status, a.status);
    assert.ok(aHtml.includes(BAD_CREDENTIALS) && bHtml.includes(BAD_CREDENTIALS));
    const norm = (html: string, email: string) => html.replaceAll(email, 'EMAIL').replace(/name="csrf" value="[^"]*"/, '');
    assert.equal(norm(aHtml, unknownEmail), norm(bHtml, victim));
    assert.deepEqual([...a.headers.keys()].sort(), [...b.headers.keys()].sort());
    page = bHtml;

    // Per account (default 5 failures in 15 minutes): then 429 with Retry-After, even with the right password.
    for (let i = 2; i <= 5; i++) {
      const res = await submitLogin(browser, pageUrl, page, victim, `wrong password ${i}`);
      assert.equal(res.status, 401, `attempt ${i}`);
      page = await res.text();
    }
    const locked = await submitLogin(browser, pageUrl, page, victim, PASSWORD);
    assert.equal(locked.status, 429);
    const retry = Number(locked.headers.get('retry-after'));
    assert.ok(retry > 0 && retry <= 15 * 60, `Retry-After ${retry}`);
    assert.match(await locked.text(), /Too many failed sign-in attempts/);
    // An unknown e-mail is limited the same way (no way to tell which accounts exist).
    for (let i = 0; i < 4; i++) await (await submitLogin(browser, pageUrl, page, unknownEmail, `again ${i}`)).arrayBuffer();
    const unknownLocked = await submitLogin(browser, pageUrl, page, unknownEmail, 'again');
    assert.equal(unknownLocked.status, 429);
    assert.ok(Number(unknownLocked.headers.get('retry-after')) > 0);

    // So far 10 failures from this IP (the refused attempts do not count) (default limit 20): another account still signs in.
    const fresh = new Browser();
    const start = await fresh.follow((await authUrl(c)).url, () => false);
    const freshPage = await start.res.text();
    const okLogin = await submitLogin(fresh, start.url, freshPage, bystander, PASSWORD);
    assert.equal(okLogin.status, 303);

    // Per IP: 10 more failures with 10 different e-mails reach 20; then every account is refused from here.
    const ipBrowser = new Browser();
    const ipStart = await ipBrowser.follow((await authUrl(c)).url, () => false);
    let ipPage = await ipStart.res.text();
    for (let i = 0; i < 10; i++) {
      const res = await submitLogin(ipBrowser, ipStart.url, ipPage, `spray-${i}@example.com`, 'x'.repeat(9));
      assert.equal(res.status, 401, `spray ${i}`);
      ipPage = await res.text();
    }
    const ipLocked = await submitLogin(ipBrowser, ipStart.url, ipPage, bystander, PASSWORD);
    assert.equal(ipLocked.status, 429);
    assert.ok(Number(ipLocked.headers.get('retry-after')) > 0);
    assert.ok(formAction(ipPage).includes('/oauth2/interaction/'));
  } finally {
    await own.close();
  }
});

// The scope half of the no-escalation rule binds every scoped credential, not only PATs.
test('an access token narrowed to API scopes cannot create a PAT with wider scopes', async () => {
  const tokens = await accessToken(apiUser.email, 'openid email connector_auth:view');
  const wider = await t.call('POST', '/v1/personal-access-tokens', { token: tokens.access_token, body: { expiration: null, scopes: ['company'], note: 'wider' } });
  problem(wider, 403, 'scope_escalation');
  // Its own scope (and no expiry: an access token has no PAT expiry to respect) is fine.
  const same = await t.call('POST', '/v1/personal-access-tokens', { token: tokens.access_token, body: { expiration: null, scopes: ['connector_auth:view'], note: 'same' } });
  assert.equal(same.statusCode, 201, same.body);
});
