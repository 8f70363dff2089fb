import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, problem, type TestApp } from '../support/app.ts';
import { hasValidChecksum } from '../../src/crypto/token.ts';

let t: TestApp;
before(async () => { t = await startTestApp(); });
after(async () => { await t.close(); });

const basic = (email: string, secret: string) => 'Basic ' + Buffer.from(`${email}:${secret}`).toString('base64');

test('create: 201 with the documented shape, value shown once, format with checksum', async () => {
  const res = await t.call('POST', '/v1/personal-access-tokens', { body: { expiration: 30, scopes: ['connector_auth:view'], note: 'ci' } });
  assert.equal(res.statusCode, 201);
  const body = res.json();
  assert.deepEqual(Object.keys(body).sort(), ['created_at', 'expiration', 'id', 'last_used', 'note', 'scopes', 'token']);
  assert.match(body.token, /^fgp_[0-9A-Za-z]{36}$/);
  assert.ok(hasValidChecksum(body.token, 'fgp'));
  assert.equal(body.last_used, null);
  assert.deepEqual(body.scopes, ['connector_auth:view']);
  const days = (Date.parse(body.expiration) - Date.parse(body.created_at)) / 86400000;
  assert.ok(Math.abs(days - 30) < 0.001);
  assert.equal(res.headers['cache-control'], 'no-store');
  assert.equal(res.headers.location, `/v1/personal-access-tokens/${body.id}`);

  // The value is never retrievable again.
  const one = await t.call('GET', `/v1/personal-access-tokens/${body.id}`);
  assert.equal(one.statusCode, 200);
  assert.ok(!one.body.includes(body.token));
  assert.equal(one.json().token_hint, `fgp_...${body.token.slice(-4)}`);
  assert.equal(one.json().state, 'active');
  const list = await t.call('GET', '/v1/personal-access-tokens?limit=200');
  assert.ok(!list.body.includes(body.token));
  assert.ok(list.json().data.some((x: any) => x.id === body.id));

  // It works, with the scopes it carries.
  assert.equal((await t.call('GET', '/v1/users', { token: body.token })).statusCode, 403);
  const me = await t.call('GET', '/v1/personal-access-tokens', { token: body.token });
  assert.equal(me.statusCode, 200);
});

test('the database stores only a keyed digest, never the value', async () => {
  const res = await t.call('POST', '/v1/personal-access-tokens', { body: { expiration: null, scopes: ['company'], note: 'digest' } });
  const { token, id } = res.json();
  const row = await t.ctx.database.db.selectFrom('personal_access_tokens').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  assert.ok(!JSON.stringify(row).includes(token));
  assert.ok(!JSON.stringify(row).includes(token.slice(4, -6)));
  assert.match(row.digest, /^[0-9a-f]{64}$/);
});

test('bad input: unknown scope lists the valid ones; wrong types, unknown fields, long note, malformed JSON', async () => {
  const before = await t.ctx.database.db.selectFrom('personal_access_tokens').select((e) => e.fn.countAll().as('n')).executeTakeFirstOrThrow();
  const p = problem(await t.call('POST', '/v1/personal-access-tokens', { body: { expiration: 1, scopes: ['admin'], note: '' } }), 400, 'invalid_scope');
  assert.match(p.detail, /connector_auth:view/);
  assert.equal(p.errors[0].field, 'scopes.0');
  problem(await t.call('POST', '/v1/personal-access-tokens', { body: { expiration: '5', scopes: ['company'], note: '' } }), 400, 'validation_failed');
  problem(await t.call('POST', '/v1/personal-access-tokens', { body: { expiration: 0, scopes: ['company'], note: '' } }), 400, 'validation_failed');
  problem(await t.call('POST', '/v1/personal-access-tokens', { body: { expiration: 1.5, scopes: ['company'], note: '' } }), 400, 'validation_failed');
  const unk = problem(await t.call('POST', '/v1/personal-access-tokens', { body: { expiration: 1, scopes: ['company'], note: '', admin: true } }), 400, 'validation_failed');
  assert.equal(unk.errors[0].field, 'admin');
  const long = problem(await t.call('POST', '/v1/personal-access-tokens', { body: { expiration: 1, scopes: ['company'], note: 'x'.repeat(256) } }), 400, 'validation_failed');
  assert.equal(long.errors[0].field, 'note');
  const missing = problem(await t.call('POST', '/v1/personal-access-tokens', { body: { scopes: ['company'], note: '' } }), 400, 'validation_failed');
  assert.equal(missing.errors[0].field, 'expiration');
  const raw = await t.app.inject({ method: 'POST', url: '/v1/personal-access-tokens', headers: { authorization: `Bearer ${t.tenant.token}`, 'content-type': 'application/json' }, payload: '{"expiration": 1,' });
  problem(raw, 400, 'malformed_json');
  const after = await t.ctx.database.db.selectFrom('personal_access_tokens').select((e) => e.fn.countAll().as('n')).executeTakeFirstOrThrow();
  assert.equal(Number(after.n), Number(before.n), 'no partial write');
});

test('regenerate: new value, the old one refused at once, same id and scopes', async () => {
  const created = (await t.call('POST', '/v1/personal-access-tokens', { body: { expiration: 10, scopes: ['company:view'], note: 'rotate me' } })).json();
  assert.equal((await t.call('GET', '/v1/users', { token: created.token })).statusCode, 200);
  const res = await t.call('POST', `/v1/personal-access-tokens/${created.id}/regenerate`, { body: { expiration: 2 } });
  assert.equal(res.statusCode, 200);
  const regen = res.json();
  assert.equal(regen.id, created.id);
  assert.notEqual(regen.token, created.token);
  assert.deepEqual(regen.scopes, ['company:view']);
  assert.ok(Math.abs((Date.parse(regen.expiration) - Date.now()) / 86400000 - 2) < 0.01);
  problem(await t.call('GET', '/v1/users', { token: created.token }), 401, 'invalid_token');
  assert.equal((await t.call('GET', '/v1/users', { token: regen.token })).statusCode, 200);
  // No body: the expiry date stays as it was.
  const again = await t.call('POST', `/v1/personal-access-tokens/${created.id}/regenerate`, { token: regen.token });
  assert.equal(again.statusCode, 200, again.body);
  assert.equal(again.json().expiration, regen.expiration);
  problem(await t.call('GET', '/v1/users', { token: regen.token }), 401, 'invalid_token');
});

test('two regenerations racing never leave two valid values', async () => {
  const created = (await t.call('POST', '/v1/personal-access-tokens', { body: { expiration: null, scopes: ['company:view'], note: 'race' } })).json();
  const results = await Promise.all(Array.from({ length: 8 }, () => t.call('POST', `/v1/personal-access-tokens/${created.id}/regenerate`, { body: {} })));
  const winners = results.filter((r) => r.statusCode === 200).map((r) => r.json().token);
  for (const r of results) assert.ok(r.statusCode === 200 || r.json().code === 'token_changed', r.body);
  assert.ok(winners.length >= 1);
  let valid = 0;
  for (const tok of [created.token, ...winners]) if ((await t.call('GET', '/v1/users', { token: tok })).statusCode === 200) valid++;
  assert.equal(valid, 1);
});

test('revoke: 204, then refused with the same 401 as unknown; listed as revoked; cannot regenerate', async () => {
  const created = (await t.call('POST', '/v1/personal-access-tokens', { body: { expiration: null, scopes: ['company:view'], note: 'revoke' } })).json();
  assert.equal((await t.call('DELETE', `/v1/personal-access-tokens/${created.id}`)).statusCode, 204);
  const revokedAnswer = await t.call('GET', '/v1/users', { token: created.token });
  const unknown = await t.call('GET', '/v1/users', { token: 'fgp_' + 'A'.repeat(36) });
  problem(revokedAnswer, 401, 'invalid_token');
  problem(unknown, 401, 'invalid_token');
  assert.equal(revokedAnswer.headers['www-authenticate'], unknown.headers['www-authenticate']);
  const view = (await t.call('GET', `/v1/personal-access-tokens/${created.id}`)).json();
  assert.equal(view.state, 'revoked');
  problem(await t.call('POST', `/v1/personal-access-tokens/${created.id}/regenerate`, { body: {} }), 409, 'token_revoked');
});

test('expired tokens are refused and listed as expired', async () => {
  const u = await t.newUser(t.tenant.companyId, { scopes: ['company:view'], expiration: 1 });
  await t.ctx.database.db.updateTable('personal_access_tokens').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('id', '=', u.tokenId).execute();
  problem(await t.call('GET', '/v1/users', { token: u.token }), 401, 'invalid_token');
  const list = (await t.call('GET', `/v1/personal-access-tokens?filter=user_id,eq,"${u.id}"`)).json();
  assert.equal(list.data.length, 1);
  assert.equal(list.data[0].state, 'expired');
});

test('no escalation: a PAT grants only scopes it covers and no longer life', async () => {
  const u = await t.newUser(t.tenant.companyId, { scopes: ['connector_auth:manage', 'company:view'], expiration: 10 });
  const ok = await t.call('POST', '/v1/personal-access-tokens', { token: u.token, body: { expiration: 5, scopes: ['connector_auth:view'], note: '' } });
  assert.equal(ok.statusCode, 201, ok.body);
  const wider = problem(await t.call('POST', '/v1/personal-access-tokens', { token: u.token, body: { expiration: 5, scopes: ['connector_auth'], note: '' } }), 403, 'scope_escalation');
  assert.deepEqual(wider.scopes, ['connector_auth']);
  problem(await t.call('POST', '/v1/personal-access-tokens', { token: u.token, body: { expiration: 5, scopes: ['automation:view'], note: '' } }), 403, 'scope_escalation');
  problem(await t.call('POST', '/v1/personal-access-tokens', { token: u.token, body: { expiration: 11, scopes: ['company:view'], note: '' } }), 403, 'scope_escalation');
  problem(await t.call('POST', '/v1/personal-access-tokens', { token: u.token, body: { expiration: null, scopes: ['company:view'], note: '' } }), 403, 'scope_escalation');
  // A PAT may regenerate itself (safe self-rotation for automation).
  const self = await t.call('POST', `/v1/personal-access-tokens/${u.tokenId}/regenerate`, { token: u.token, body: { expiration: 3 } });
  assert.equal(self.statusCode, 200, self.body);
  problem(await t.call('GET', '/v1/personal-access-tokens', { token: u.token }), 401, 'invalid_token');
  // And cannot stretch its own life by regenerating.
  const fresh = self.json().token;
  problem(await t.call('POST', `/v1/personal-access-tokens/${u.tokenId}/regenerate`, { token: fresh, body: { expiration: 30 } }), 403, 'scope_escalation');
});

test('members see only their own tokens; admins with company scope see and revoke others, never values', async () => {
  const m = await t.newUser(t.tenant.companyId, { scopes: ['company:view'] });
  const m2 = await t.newUser(t.tenant.companyId, { scopes: ['company:view'] });
  const seen = (await t.call('GET', '/v1/personal-access-tokens?limit=200', { token: m.token })).json().data;
  assert.ok(seen.every((x: any) => x.user_id === m.id));
  problem(await t.call('GET', `/v1/personal-access-tokens/${m2.tokenId}`, { token: m.token }), 404, 'not_found');
  problem(await t.call('DELETE', `/v1/personal-access-tokens/${m2.tokenId}`, { token: m.token }), 404, 'not_found');
  const adminView = await t.call('GET', `/v1/personal-access-tokens/${m2.tokenId}`);
  assert.equal(adminView.statusCode, 200);
  assert.ok(!adminView.body.includes(m2.token));
  problem(await t.call('POST', `/v1/personal-access-tokens/${m2.tokenId}/regenerate`, { body: {} }), 403, 'not_token_owner');
  // An admin PAT without company scope cannot act on other users' tokens.
  const narrowAdmin = await t.newUser(t.tenant.companyId, { role: 'admin', scopes: ['connectors:view'] });
  problem(await t.call('DELETE', `/v1/personal-access-tokens/${m2.tokenId}`, { token: narrowAdmin.token }), 404, 'not_found');
  assert.equal((await t.call('DELETE', `/v1/personal-access-tokens/${m2.tokenId}`)).statusCode, 204);
  problem(await t.call('GET', '/v1/users', { token: m2.token }), 401, 'invalid_token');
});

test('foreign tenant token ids answer 404', async () => {
  const other = await t.newTenant();
  const foreign = (await t.call('POST', '/v1/personal-access-tokens', { token: other.token, body: { expiration: null, scopes: ['company'], note: '' } })).json();
  for (const [m, u] of [['GET', `/v1/personal-access-tokens/${foreign.id}`], ['DELETE', `/v1/personal-access-tokens/${foreign.id}`], ['POST', `/v1/personal-access-tokens/${foreign.id}/regenerate`]] as const) {
    problem(await t.call(m, u, m === 'POST' ? { body: {} } : {}), 404, 'not_found');
  }
  const list = (await t.call('GET', '/v1/personal-access-tokens?limit=200')).json().data;
  assert.ok(!list.some((x: any) => x.id === foreign.id));
  assert.equal((await t.call('GET', '/v1/users', { token: foreign.token })).statusCode, 200, 'foreign token untouched');
});

test('Authorization header rules (RFC 6750) and Basic e-mail:PAT', async () => {
  const { email } = t.tenant.admin;
  const tok = t.tenant.token;
  const get = (headers: Record<string, string>, url = '/v1/users') => t.app.inject({ method: 'GET', url, headers });
  const missing = problem(await get({}), 401, 'missing_credentials');
  assert.equal((await get({})).headers['www-authenticate'], 'Bearer realm="flowgate"');
  assert.ok(missing);
  assert.equal((await get({ authorization: `bearer ${tok}` })).statusCode, 200, 'scheme is case-insensitive');
  assert.equal((await get({ authorization: `BEARER ${tok}` })).statusCode, 200);
  problem(await get({ authorization: 'Bearer' }), 400, 'invalid_request');
  problem(await get({ authorization: `Bearer ${tok} extra` }), 400, 'invalid_request');
  problem(await get({ authorization: `Token ${tok}` }), 401, 'unsupported_auth_scheme');
  problem(await get({}, `/v1/users?access_token=${tok}`), 400, 'invalid_request');
  problem(await get({ authorization: `Bearer ${tok}` }, `/v1/users?access_token=${tok}`), 400, 'invalid_request');
  // A wrong checksum is refused like any unknown token.
  const typo = tok.slice(0, 10) + (tok[10] === 'a' ? 'b' : 'a') + tok.slice(11);
  problem(await get({ authorization: `Bearer ${typo}` }), 401, 'invalid_token');
  // Basic: user name must be the owner's e-mail (any case); password must be a PAT.
  assert.equal((await get({ authorization: basic(email, tok) })).statusCode, 200);
  assert.equal((await get({ authorization: basic(email.toUpperCase(), tok) })).statusCode, 200);
  problem(await get({ authorization: basic('someone@else.com', tok) }), 401, 'invalid_token');
  problem(await get({ authorization: basic('', tok) }), 401, 'invalid_token');
  problem(await get({ authorization: basic(email, t.tenant.admin.password) }), 401, 'invalid_token');
  problem(await get({ authorization: 'Basic ' + Buffer.from('no-colon').toString('base64') }), 400, 'invalid_request');
});

test('FLOWGATE_PAT_MAX_DAYS: null expiration refused, longer refused, shorter fine', async () => {
  const capped = await startTestApp({ FLOWGATE_PAT_MAX_DAYS: '90' });
  try {
    problem(await capped.call('POST', '/v1/personal-access-tokens', { body: { expiration: null, scopes: ['company'], note: '' } }), 400, 'expiration_required');
    problem(await capped.call('POST', '/v1/personal-access-tokens', { body: { expiration: 91, scopes: ['company'], note: '' } }), 400, 'expiration_too_long');
    assert.equal((await capped.call('POST', '/v1/personal-access-tokens', { body: { expiration: 30, scopes: ['company'], note: '' } })).statusCode, 201);
  } finally {
    await capped.close();
  }
});

test('last_used is recorded', async () => {
  const u = await t.newUser(t.tenant.companyId, { scopes: ['company:view'] });
  await t.call('GET', '/v1/users', { token: u.token });
  for (let i = 0; i < 50; i++) {
    const row = await t.ctx.database.db.selectFrom('personal_access_tokens').select('last_used_at').where('id', '=', u.tokenId).executeTakeFirstOrThrow();
    if (row.last_used_at) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail('last_used_at never written');
});
