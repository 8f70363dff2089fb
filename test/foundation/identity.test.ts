import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, problem, type TestApp } from '../support/app.ts';

let t: TestApp;
before(async () => { t = await startTestApp(); });
after(async () => { await t.close(); });

const count = async (table: 'users' | 'teams' | 'team_members') =>
  Number((await t.ctx.database.db.selectFrom(table).select((e) => e.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);

test('users: create, get, update, delete; e-mail unique case-insensitively; password never returned', async () => {
  const res = await t.call('POST', '/v1/users', { body: { email: 'Alice@Acme.com', name: 'Alice', password: 'canary-pass-91823' } });
  assert.equal(res.statusCode, 201, res.body);
  const u = res.json();
  assert.deepEqual(Object.keys(u).sort(), ['created_at', 'disabled', 'email', 'id', 'name', 'role', 'updated_at']);
  assert.equal(u.role, 'member');
  assert.equal(res.headers.location, `/v1/users/${u.id}`);
  assert.ok(!res.body.includes('canary-pass-91823'));
  problem(await t.call('POST', '/v1/users', { body: { email: 'alice@ACME.com', name: 'Dup' } }), 409, 'email_taken');
  assert.equal((await t.call('GET', `/v1/users/${u.id}`)).json().email, 'Alice@Acme.com');
  const upd = await t.call('PUT', `/v1/users/${u.id}`, { body: { name: 'Alice B', role: 'admin' } });
  assert.equal(upd.statusCode, 200);
  assert.equal(upd.json().name, 'Alice B');
  assert.equal(upd.json().role, 'admin');
  assert.equal(upd.json().email, 'Alice@Acme.com', 'fields left out stay');
  assert.equal((await t.call('DELETE', `/v1/users/${u.id}`)).statusCode, 204);
  problem(await t.call('GET', `/v1/users/${u.id}`), 404, 'not_found');
  const row = await t.ctx.services.identity.userByEmail('nobody-here@example.com');
  assert.equal(row, undefined);
  assert.ok(!t.logs.join('').includes('canary-pass-91823'));
  const audit = (await t.call('GET', '/v1/audit-events?limit=200')).body;
  assert.ok(!audit.includes('canary-pass-91823'));
});

test('users: bad input answers 400 naming the field, with no partial write', async () => {
  const before = await count('users');
  const cases: Array<[unknown, string]> = [
    [{ email: 'not-an-email', name: 'x' }, 'email'],
    [{ email: 'a@b.co', name: '' }, 'name'],
    [{ email: 'a@b.co', name: 'x'.repeat(201) }, 'name'],
    [{ email: 'a@b.co', name: 'x', role: 'owner' }, 'role'],
    [{ email: 'a@b.co', name: 'x', password: 'short' }, 'password'],
    [{ email: 'a@b.co', name: 'x', is_admin: true }, 'is_admin'],
    [{ email: 42, name: 'x' }, 'email'],
    [{ name: 'x' }, 'email'],
  ];
  for (const [body, field] of cases) {
    const p = problem(await t.call('POST', '/v1/users', { body }), 400, 'validation_failed');
    assert.ok(p.errors.some((e: any) => e.field === field), `${JSON.stringify(body)} -> ${JSON.stringify(p.errors)}`);
  }
  problem(await t.app.inject({ method: 'POST', url: '/v1/users', headers: { authorization: `Bearer ${t.tenant.token}`, 'content-type': 'application/json' }, payload: '{"email":' }), 400, 'malformed_json');
  problem(await t.app.inject({ method: 'POST', url: '/v1/users', headers: { authorization: `Bearer ${t.tenant.token}`, 'content-type': 'text/plain' }, payload: 'hi' }), 415, 'unsupported_media_type');
  problem(await t.call('GET', '/v1/users/not-a-uuid'), 400, 'validation_failed');
  problem(await t.call('PUT', `/v1/users/${t.tenant.admin.id}`, { body: {} }), 400, 'validation_failed');
  problem(await t.call('PUT', `/v1/users/${t.tenant.admin.id}`, { body: { disabled: 'yes' } }), 400, 'validation_failed');
  assert.equal(await count('users'), before);
});

test('users: members read, only admins write; the last admin stays', async () => {
  const m = await t.newUser(t.tenant.companyId, { role: 'member' });
  assert.equal((await t.call('GET', '/v1/users', { token: m.token })).statusCode, 200);
  problem(await t.call('POST', '/v1/users', { token: m.token, body: { email: 'x@y.z', name: 'x' } }), 403, 'admin_required');
  problem(await t.call('PUT', `/v1/users/${m.id}`, { token: m.token, body: { role: 'admin' } }), 403, 'admin_required');
  problem(await t.call('DELETE', `/v1/users/${t.tenant.admin.id}`, { token: m.token }), 403, 'admin_required');
  const solo = await t.newTenant();
  const soloAdmin = solo.admin.id;
  problem(await t.call('PUT', `/v1/users/${soloAdmin}`, { token: solo.token, body: { role: 'member' } }), 409, 'last_admin');
  problem(await t.call('PUT', `/v1/users/${soloAdmin}`, { token: solo.token, body: { disabled: true } }), 409, 'last_admin');
  problem(await t.call('DELETE', `/v1/users/${soloAdmin}`, { token: solo.token }), 409, 'cannot_delete_self');
});

test('a disabled user\'s tokens stop working at once, and work again when re-enabled', async () => {
  const m = await t.newUser(t.tenant.companyId);
  assert.equal((await t.call('GET', '/v1/users', { token: m.token })).statusCode, 200);
  assert.equal((await t.call('PUT', `/v1/users/${m.id}`, { body: { disabled: true } })).statusCode, 200);
  problem(await t.call('GET', '/v1/users', { token: m.token }), 401, 'invalid_token');
  await t.call('PUT', `/v1/users/${m.id}`, { body: { disabled: false } });
  assert.equal((await t.call('GET', '/v1/users', { token: m.token })).statusCode, 200);
});

test('users: filter language and keyset pagination', async () => {
  const other = await t.newTenant();
  for (const n of ['one', 'two', 'three']) await t.call('POST', '/v1/users', { body: { email: `${n}@filter-acme.com`, name: `F ${n}` } });
  await t.call('POST', '/v1/users', { token: other.token, body: { email: 'four@filter-acme.com', name: 'foreign' } });
  const like = (await t.call('GET', '/v1/users?filter=' + encodeURIComponent('email,like,"%@FILTER-acme.com"'))).json();
  assert.deepEqual(like.data.map((u: any) => u.email).sort(), ['one@filter-acme.com', 'three@filter-acme.com', 'two@filter-acme.com']);
  const two = (await t.call('GET', '/v1/users?filter=' + encodeURIComponent('email,like,"%@filter-acme.com"') + '&filter=' + encodeURIComponent('name,ne,"F two"'))).json();
  assert.equal(two.data.length, 2);
  const inList = (await t.call('GET', '/v1/users?filter=' + encodeURIComponent('email,in,["one@filter-acme.com","two@filter-acme.com"]'))).json();
  assert.equal(inList.data.length, 2);
  // `_` is literal, not a wildcard, on both engines.
  assert.equal((await t.call('GET', '/v1/users?filter=' + encodeURIComponent('email,like,"on_@filter-acme.com"'))).json().data.length, 0);
  // Pages of one, in order, no duplicates, no gaps.
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const page: any = (await t.call('GET', '/v1/users?limit=1&filter=' + encodeURIComponent('email,like,"%@filter-acme.com"') + (cursor ? `&cursor=${cursor}` : ''))).json();
    seen.push(...page.data.map((u: any) => u.email));
    cursor = page.next_cursor;
  } while (cursor);
  assert.equal(seen.length, 3);
  assert.equal(new Set(seen).size, 3);
  problem(await t.call('GET', '/v1/users?filter=password,eq,"x"'), 400, 'invalid_filter');
  problem(await t.call('GET', '/v1/users?filter=email,regex,"x"'), 400, 'invalid_filter');
  problem(await t.call('GET', '/v1/users?filter=email'), 400, 'invalid_filter');
  problem(await t.call('GET', '/v1/users?filter=disabled,gt,true'), 400, 'invalid_filter');
  problem(await t.call('GET', '/v1/users?filter=created_at,gt,"yesterday"'), 400, 'invalid_filter');
  problem(await t.call('GET', '/v1/users?cursor=garbage'), 400, 'invalid_cursor');
  problem(await t.call('GET', '/v1/users?limit=201'), 400, 'validation_failed');
  problem(await t.call('GET', '/v1/users?limit=0'), 400, 'validation_failed');
  problem(await t.call('GET', '/v1/users?sort=name'), 400, 'validation_failed');
});

test('teams: CRUD, member ids validated against the company, names unique', async () => {
  const a = await t.newUser(t.tenant.companyId);
  const b = await t.newUser(t.tenant.companyId);
  const other = await t.newTenant();
  const res = await t.call('POST', '/v1/teams', { body: { name: 'Ops', member_ids: [a.id, b.id, a.id] } });
  assert.equal(res.statusCode, 201, res.body);
  const team = res.json();
  assert.deepEqual(team.member_ids.sort(), [a.id, b.id].sort());
  problem(await t.call('POST', '/v1/teams', { body: { name: 'Ops' } }), 409, 'team_name_taken');
  const before = await count('teams');
  const bad = problem(await t.call('POST', '/v1/teams', { body: { name: 'Bad', member_ids: [a.id, other.admin.id] } }), 400, 'validation_failed');
  assert.equal(bad.errors[0].field, 'member_ids.1');
  assert.equal(await count('teams'), before, 'no partial write');
  const upd = (await t.call('PUT', `/v1/teams/${team.id}`, { body: { member_ids: [b.id] } })).json();
  assert.deepEqual(upd.member_ids, [b.id]);
  assert.equal(upd.name, 'Ops');
  assert.equal((await t.call('GET', '/v1/teams?filter=name,eq,"Ops"')).json().data.length, 1);
  const m = await t.newUser(t.tenant.companyId);
  problem(await t.call('POST', '/v1/teams', { token: m.token, body: { name: 'Mine' } }), 403, 'admin_required');
  assert.equal((await t.call('GET', `/v1/teams/${team.id}`, { token: m.token })).statusCode, 200);
  assert.equal((await t.call('DELETE', `/v1/teams/${team.id}`)).statusCode, 204);
  problem(await t.call('GET', `/v1/teams/${team.id}`), 404, 'not_found');
});

test('tenant isolation: foreign user and team ids answer 404 on every endpoint, lists never show them', async () => {
  const other = await t.newTenant();
  const team = (await t.call('POST', '/v1/teams', { token: other.token, body: { name: 'Foreign team' } })).json();
  const fu = other.admin.id;
  const cases: Array<[string, string, unknown?]> = [
    ['GET', `/v1/users/${fu}`], ['PUT', `/v1/users/${fu}`, { name: 'pwned' }], ['DELETE', `/v1/users/${fu}`],
    ['GET', `/v1/teams/${team.id}`], ['PUT', `/v1/teams/${team.id}`, { name: 'pwned' }], ['DELETE', `/v1/teams/${team.id}`],
  ];
  for (const [m, u, body] of cases) problem(await t.call(m, u, body ? { body } : {}), 404, 'not_found');
  const users = (await t.call('GET', '/v1/users?limit=200')).json().data;
  assert.ok(!users.some((x: any) => x.id === fu));
  const teams = (await t.call('GET', '/v1/teams?limit=200')).json().data;
  assert.ok(!teams.some((x: any) => x.id === team.id));
  assert.equal((await t.call('GET', `/v1/teams/${team.id}`, { token: other.token })).json().name, 'Foreign team', 'untouched');
  assert.equal((await t.call('GET', `/v1/users/${fu}`, { token: other.token })).json().name, 'Test User');
  const audit = (await t.call('GET', '/v1/audit-events?limit=200')).json().data;
  assert.ok(!audit.some((e: any) => e.target_id === team.id));
});

test('audit log: token and user events with actor, credential kind, ip, request id; admins only', async () => {
  const res = await t.call('POST', '/v1/users', { body: { email: 'audited@acme.com', name: 'Audited' }, headers: { 'x-request-id': 'req-audit-1' } });
  const id = res.json().id;
  const ev = (await t.call('GET', `/v1/audit-events?filter=target_id,eq,"${id}"`)).json().data;
  assert.equal(ev.length, 1);
  assert.equal(ev[0].action, 'user.created');
  assert.equal(ev[0].actor_user_id, t.tenant.admin.id);
  assert.equal(ev[0].credential_kind, 'pat');
  assert.equal(ev[0].request_id, 'req-audit-1');
  assert.ok(ev[0].ip);
  const m = await t.newUser(t.tenant.companyId);
  problem(await t.call('GET', '/v1/audit-events', { token: m.token }), 403, 'admin_required');
  const tokenEvents = (await t.call('GET', '/v1/audit-events?limit=200&filter=' + encodeURIComponent('action,like,"token.%"'))).json().data;
  assert.ok(tokenEvents.some((e: any) => e.action === 'token.created'));
});
