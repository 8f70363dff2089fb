// Connector auths over HTTP: the seed's sample body, the record shape, PUT's update column,
// list filters and pagination, delete, audit events, and the user-deletion rule.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, problem, type TestApp } from '../support/app.ts';
import { createAuth, rawAuthRow, sampleBody, snapshot, ZERO_UUID } from './_helpers.ts';
import { FTP_CONNECTOR_ID, HTTP_CONNECTOR_ID, SFTP_CONNECTOR_ID, ZENDESK_CONNECTOR_ID } from '../../src/modules/connectors/catalogue.ts';

const UUID4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let t: TestApp;
before(async () => { t = await startTestApp(); });
after(async () => { await t.close(); });

test('the seed\'s sample body is accepted as is: 201, uuid4, Location, no secret in the record', async () => {
  const res = await t.call('POST', '/v1/connector-auths', { body: sampleBody() });
  assert.equal(res.statusCode, 201, res.body);
  const a = res.json();
  assert.match(a.id, UUID4);
  assert.equal(res.headers.location, `/v1/connector-auths/${a.id}`);
  assert.deepEqual(Object.keys(a).sort(), [
    'api_endpoint', 'auth_details_set', 'auth_token_set', 'auth_type', 'connector_id', 'created_at', 'id', 'last_check_ok',
    'last_checked_at', 'name', 'owner_user_id', 'password_set', 'tags', 'updated_at', 'user_input', 'username', 'visibility',
  ]);
  assert.equal(a.api_endpoint, 'sftp://user:***@sftp.example.com:22/path');
  assert.equal(a.password_set, true);
  assert.equal(a.auth_token_set, false);
  assert.equal(a.auth_details_set, false);
  assert.deepEqual(a.user_input, {});
  assert.deepEqual(a.tags, ['customer-42', 'files']);
  assert.equal(a.username, 'user');
  assert.equal(a.visibility, 'company');
  assert.equal(a.owner_user_id, t.tenant.admin.id);
  assert.equal(a.connector_id, SFTP_CONNECTOR_ID);
  assert.doesNotMatch(res.body, /"password"|:password@|"auth_token"|"auth_details"/);

  const got = await t.call('GET', `/v1/connector-auths/${a.id}`);
  assert.equal(got.statusCode, 200);
  assert.deepEqual(got.json(), a);
});

test('stored row: secrets only as ciphertext, endpoint redacted, full endpoint encrypted', async () => {
  const a = await createAuth(t, sampleBody({ auth_token: 'tok-123456', auth_details: '{"refresh_token":"rt-123456"}' }));
  const row = await rawAuthRow(t, a.id);
  assert.equal(row.api_endpoint, 'sftp://user:***@sftp.example.com:22/path');
  for (const col of ['password_enc', 'auth_token_enc', 'auth_details_enc', 'api_endpoint_enc']) {
    assert.match(row[col], /^fg1:k\d+:/, col);
  }
  const noPass = await createAuth(t, sampleBody({ api_endpoint: 'sftp://sftp.example.com/in' }));
  const row2 = await rawAuthRow(t, noPass.id);
  assert.equal(row2.api_endpoint, 'sftp://sftp.example.com/in');
  assert.equal(row2.api_endpoint_enc, null);
  assert.equal(row2.auth_token_enc, null, 'empty auth_token stores nothing');
});

test('PUT: only the update column; fields left out stay unchanged; 400 naming a create-only field', async () => {
  const a = await createAuth(t);
  for (const field of ['auth_token', 'auth_details', 'user_input', 'tags', 'visibility', 'id', 'owner_user_id']) {
    const before = await snapshot(t);
    const value = field === 'user_input' ? {} : field === 'tags' ? ['x'] : 'x';
    const res = await t.call('PUT', `/v1/connector-auths/${a.id}`, { body: { name: 'renamed', [field]: value } });
    const p = problem(res, 400, 'validation_failed');
    assert.ok(p.errors.some((e: any) => e.field === field), `${field}: ${res.body}`);
    assert.deepEqual(await snapshot(t), before);
  }
  assert.equal((await t.call('GET', `/v1/connector-auths/${a.id}`)).json().name, 'Customer 42 SFTP', 'nothing was written');

  const res = await t.call('PUT', `/v1/connector-auths/${a.id}`, { body: { name: 'Renamed', username: 'other' } });
  assert.equal(res.statusCode, 200, res.body);
  const b = res.json();
  assert.equal(b.name, 'Renamed');
  assert.equal(b.username, 'other');
  assert.equal(b.api_endpoint, a.api_endpoint);
  assert.equal(b.password_set, true);
  assert.deepEqual(b.tags, a.tags);
  assert.ok(b.updated_at >= a.updated_at);
  assert.deepEqual((await t.call('GET', `/v1/connector-auths/${a.id}`)).json(), b);

  // Every update-column field at once.
  const all = await t.call('PUT', `/v1/connector-auths/${a.id}`, { body: {
    connector_id: FTP_CONNECTOR_ID, name: 'Now FTP', auth_type: 'username_password',
    api_endpoint: 'ftp://ftp.example.com:21/x', username: 'u2', password: 'p2',
  } });
  assert.equal(all.statusCode, 200, all.body);
  assert.equal(all.json().connector_id, FTP_CONNECTOR_ID);
  assert.equal(all.json().api_endpoint, 'ftp://ftp.example.com:21/x');
  const resolved = await t.ctx.services.connectorAuths.resolveForRun({
    companyId: t.tenant.companyId, userId: t.tenant.admin.id, authId: a.id, connectorId: FTP_CONNECTOR_ID, purpose: 'test',
  });
  assert.equal(resolved.password, 'p2');
  assert.equal(resolved.apiEndpoint, 'ftp://ftp.example.com:21/x');
});

test('PUT: sending the redacted api_endpoint back keeps the stored password; *** as a new password is refused', async () => {
  const a = await createAuth(t, sampleBody({ api_endpoint: 'sftp://user:urlpass@h.example.com/p', password: '' }));
  const same = await t.call('PUT', `/v1/connector-auths/${a.id}`, { body: { api_endpoint: a.api_endpoint, name: 'n2' } });
  assert.equal(same.statusCode, 200, same.body);
  const r = await t.ctx.services.connectorAuths.resolveForRun({
    companyId: t.tenant.companyId, userId: t.tenant.admin.id, authId: a.id, connectorId: SFTP_CONNECTOR_ID, purpose: 'test',
  });
  assert.equal(r.apiEndpoint, 'sftp://user:urlpass@h.example.com/p');
  const bad = await t.call('PUT', `/v1/connector-auths/${a.id}`, { body: { api_endpoint: 'sftp://user:***@other.example.com/p' } });
  assert.ok(problem(bad, 400, 'validation_failed').errors.some((e: any) => e.field === 'api_endpoint'));
  // A new URL with a real password replaces the old one.
  const nu = await t.call('PUT', `/v1/connector-auths/${a.id}`, { body: { api_endpoint: 'sftp://user:newpass@h.example.com/p' } });
  assert.equal(nu.statusCode, 200, nu.body);
  const r2 = await t.ctx.services.connectorAuths.resolveForRun({
    companyId: t.tenant.companyId, userId: t.tenant.admin.id, authId: a.id, connectorId: SFTP_CONNECTOR_ID, purpose: 'test',
  });
  assert.equal(r2.apiEndpoint, 'sftp://user:newpass@h.example.com/p');
  assert.equal(r2.password, null);
});

test('fields win over the URL user-info; the URL fills empty fields (through resolveForRun)', async () => {
  const a = await createAuth(t, sampleBody({ api_endpoint: 'sftp://urluser:urlpass@h.example.com/p', username: '', password: '' }));
  const r = await t.ctx.services.connectorAuths.resolveForRun({
    companyId: t.tenant.companyId, userId: t.tenant.admin.id, authId: a.id, connectorId: SFTP_CONNECTOR_ID, purpose: 'test',
  });
  assert.equal(r.username, null);
  assert.equal(r.password, null);
  assert.equal(r.apiEndpoint, 'sftp://urluser:urlpass@h.example.com/p');
  assert.ok(r.secrets.includes('urlpass'));
});

test('DELETE -> 204, then 404 for GET, PUT, DELETE, permissions and test', async () => {
  const a = await createAuth(t);
  const del = await t.call('DELETE', `/v1/connector-auths/${a.id}`);
  assert.equal(del.statusCode, 204);
  assert.equal(del.body, '');
  problem(await t.call('GET', `/v1/connector-auths/${a.id}`), 404, 'not_found');
  problem(await t.call('PUT', `/v1/connector-auths/${a.id}`, { body: { name: 'x' } }), 404, 'not_found');
  problem(await t.call('DELETE', `/v1/connector-auths/${a.id}`), 404, 'not_found');
  problem(await t.call('GET', `/v1/connector-auths/${a.id}/permissions`), 404, 'not_found');
  problem(await t.call('POST', `/v1/connector-auths/${a.id}/test`), 404, 'not_found');
  problem(await t.call('GET', `/v1/connector-auths/${ZERO_UUID}`), 404, 'not_found');
});

test('list: filters by name, connector_id, auth_type, tags, visibility, created_at; keyset pages', async () => {
  const t2 = await startTestApp();
  try {
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await createAuth(t2, sampleBody({ name: `sftp ${i}`, tags: [`n${i}`, 'all'] })));
    const http = await createAuth(t2, { connector_id: HTTP_CONNECTOR_ID, name: 'Api', auth_type: 'api_key', auth_token: 'k-1', api_endpoint: 'https://api.example.com/v1', tags: ['all'] });
    const zd = await createAuth(t2, { connector_id: ZENDESK_CONNECTOR_ID, name: 'Zendesk', auth_type: 'oauth2', auth_token: 'zz', visibility: 'private' });
    const q = async (qs: string) => {
      const res = await t2.call('GET', `/v1/connector-auths?${qs}`);
      assert.equal(res.statusCode, 200, res.body);
      return res.json();
    };
    assert.equal((await q('')).data.length, 7);
    assert.deepEqual((await q('filter=name,like,%22%25SFTP%25%22')).data.map((a: any) => a.id), made.map((a) => a.id));
    assert.deepEqual((await q(`filter=connector_id,eq,%22${HTTP_CONNECTOR_ID}%22`)).data.map((a: any) => a.id), [http.id]);
    assert.deepEqual((await q('filter=auth_type,eq,%22oauth2%22')).data.map((a: any) => a.id), [zd.id]);
    assert.deepEqual((await q('filter=tags,eq,%22n3%22')).data.map((a: any) => a.id), [made[3].id]);
    assert.equal((await q('filter=tags,eq,%22all%22')).data.length, 6);
    assert.deepEqual((await q('filter=visibility,eq,%22private%22')).data.map((a: any) => a.id), [zd.id]);
    assert.equal((await q(`filter=created_at,gte,%22${made[0].created_at}%22`)).data.length, 7);
    problem(await t2.call('GET', '/v1/connector-auths?filter=password,eq,%22x%22'), 400, 'invalid_filter');
    problem(await t2.call('GET', '/v1/connector-auths?filter=password_enc,eq,%22x%22'), 400, 'invalid_filter');

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await q(`limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      assert.ok(page.data.length <= 3);
      seen.push(...page.data.map((a: any) => a.id));
      cursor = page.next_cursor;
    } while (cursor);
    assert.equal(new Set(seen).size, 7);
  } finally {
    await t2.close();
  }
});

test('audit: created, updated (field names only), deleted', async () => {
  const a = await createAuth(t);
  await t.call('PUT', `/v1/connector-auths/${a.id}`, { body: { password: 'new-secret-pw', name: 'x' } });
  await t.call('DELETE', `/v1/connector-auths/${a.id}`);
  const ev = (await t.call('GET', `/v1/audit-events?filter=target_id,eq,%22${a.id}%22&limit=200`)).json().data;
  assert.deepEqual(ev.map((e: any) => e.action), ['connector_auth.created', 'connector_auth.updated', 'connector_auth.deleted']);
  assert.deepEqual(ev[1].details.fields, ['name', 'password']);
  assert.doesNotMatch(JSON.stringify(ev), /new-secret-pw/);
  assert.equal(ev[0].actor_user_id, t.tenant.admin.id);
});

test('deleting a user who owns connector auths: 409 user_in_use until ownership moves', async () => {
  const u = await t.newUser(t.tenant.companyId, { scopes: ['connector_auth'] });
  const a = await createAuth(t, sampleBody(), u.token);
  assert.equal(a.owner_user_id, u.id);
  problem(await t.call('DELETE', `/v1/users/${u.id}`), 409, 'user_in_use');
  const moved = await t.call('PUT', `/v1/connector-auths/${a.id}/permissions`, { body: { owner_user_id: t.tenant.admin.id } });
  assert.equal(moved.statusCode, 200, moved.body);
  assert.equal((await t.call('DELETE', `/v1/users/${u.id}`)).statusCode, 204);
  assert.equal((await t.call('GET', `/v1/connector-auths/${a.id}`)).json().owner_user_id, t.tenant.admin.id);
});

test('the flowgate connector and SaaS entries resolve a default endpoint', async () => {
  const zd = await createAuth(t, { connector_id: ZENDESK_CONNECTOR_ID, name: 'Zendesk', auth_type: 'api_key', auth_token: 'zd-token' });
  const r = await t.ctx.services.connectorAuths.resolveForRun({
    companyId: t.tenant.companyId, userId: t.tenant.admin.id, authId: zd.id, connectorId: ZENDESK_CONNECTOR_ID, purpose: 'test',
  });
  assert.equal(r.apiEndpoint, 'https://zendesk.com');
  assert.equal(r.authToken, 'zd-token');
});

test('the response schemas (OpenAPI) carry no secret field at all', async () => {
  const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
  const secretKeys = new Set(['password', 'auth_token', 'auth_details', 'password_enc', 'auth_token_enc', 'auth_details_enc', 'api_endpoint_enc']);
  let seen = 0;
  const walk = (v: any, where: string) => {
    if (!v || typeof v !== 'object') return;
    if (v.properties) for (const k of Object.keys(v.properties)) assert.ok(!secretKeys.has(k), `${where} has ${k}`);
    for (const [k, x] of Object.entries(v)) walk(x, `${where}.${k}`);
  };
  for (const [path, ops] of Object.entries<any>(doc.paths)) {
    if (!path.startsWith('/v1/connector')) continue;
    for (const [m, op] of Object.entries<any>(ops)) {
      for (const [status, resp] of Object.entries<any>(op.responses ?? {})) { walk(resp, `${m} ${path} ${status}`); seen++; }
    }
  }
  assert.ok(seen >= 20);
  // The request schemas do name them (they are write-only).
  const post = doc.paths['/v1/connector-auths'].post.requestBody.content['application/json'].schema.properties;
  assert.ok(post.password && post.auth_token && post.auth_details);
});
