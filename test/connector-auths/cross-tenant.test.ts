// Cross-tenant matrix: every endpoint called by another company's admin (full scopes) with this
// company's ids answers 404 exactly like a missing id; lists never show foreign rows; foreign
// ids inside bodies are refused as unknown; nothing of the first company changes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, problem, type TestApp, type Tenant } from '../support/app.ts';
import { createAuth, rawAuthRow, sampleBody, ZERO_UUID } from './_helpers.ts';
import { ConnectorAuthResolveError } from '../../src/modules/connector-auths/service.ts';

let t: TestApp;
let foreign: Tenant;
let mine: { auth: any; connector: any; action: any; team: any; ownAuth: any };
before(async () => {
  t = await startTestApp();
  foreign = await t.newTenant();
  const connector = (await t.call('POST', '/v1/connectors', { body: { name: 'Private API', auth_types: ['api_key'], runtime: 'http', base_domain: 'api.mine.example' } })).json();
  const action = (await t.call('POST', '/v1/connector-actions', { body: { connector_id: connector.id, name: 'secret_op', method: 'POST', input_schema: {} } })).json();
  const team = (await t.call('POST', '/v1/teams', { body: { name: 'Mine' } })).json();
  mine = {
    auth: await createAuth(t),
    connector, action, team,
    ownAuth: await createAuth(t, { connector_id: connector.id, name: 'on own connector', auth_type: 'api_key', auth_token: 'tok-own' }),
  };
});
after(async () => { await t.close(); });

test('every endpoint with a foreign id -> 404 not_found, same as a missing id', async () => {
  const calls: Array<[string, string, unknown?]> = [];
  for (const id of [mine.auth.id, mine.ownAuth.id]) {
    calls.push(['GET', `/v1/connector-auths/${id}`], ['PUT', `/v1/connector-auths/${id}`, { name: 'stolen' }],
      ['DELETE', `/v1/connector-auths/${id}`], ['GET', `/v1/connector-auths/${id}/permissions`],
      ['PUT', `/v1/connector-auths/${id}/permissions`, { visibility: 'company' }], ['POST', `/v1/connector-auths/${id}/test`]);
  }
  calls.push(['GET', `/v1/connectors/${mine.connector.id}`], ['PUT', `/v1/connectors/${mine.connector.id}`, { name: 'stolen' }],
    ['DELETE', `/v1/connectors/${mine.connector.id}`], ['GET', `/v1/connectors/${mine.connector.id}/actions`],
    ['GET', `/v1/connector-actions/${mine.action.id}`], ['PUT', `/v1/connector-actions/${mine.action.id}`, { name: 'stolen' }],
    ['DELETE', `/v1/connector-actions/${mine.action.id}`]);
  for (const [m, url, body] of calls) {
    const res = await t.call(m, url, { token: foreign.token, ...(body !== undefined ? { body } : {}) });
    const p = problem(res, 404, 'not_found');
    // Same answer as for an id that exists nowhere (apart from the request id).
    const missing = await t.call(m, url.replace(/[0-9a-f-]{36}/, ZERO_UUID), { token: foreign.token, ...(body !== undefined ? { body } : {}) });
    const q = problem(missing, 404, 'not_found');
    assert.equal(p.detail, q.detail, `${m} ${url}`);
  }
  // Nothing changed for the owner.
  const got = (await t.call('GET', `/v1/connector-auths/${mine.auth.id}`)).json();
  assert.deepEqual(got, mine.auth);
  assert.equal((await t.call('GET', `/v1/connectors/${mine.connector.id}`)).json().name, 'Private API');
  assert.equal((await t.call('GET', `/v1/connector-actions/${mine.action.id}`)).json().name, 'secret_op');
  assert.equal((await rawAuthRow(t, mine.ownAuth.id)).last_checked_at, null, 'the foreign test did not run');
});

test('lists never show foreign rows, whatever the filter', async () => {
  // The foreign company has its own rows too, so an empty list proves nothing by itself.
  await createAuth(t, sampleBody({ name: 'theirs' }), foreign.token);
  const queries = [
    '/v1/connector-auths', '/v1/connector-auths?limit=200', `/v1/connector-auths?filter=connector_id,eq,%22${mine.connector.id}%22`,
    '/v1/connector-auths?filter=name,like,%22%25%22', '/v1/connectors?limit=200', `/v1/connectors?filter=name,eq,%22Private%20API%22`,
    '/v1/connector-actions?limit=200', `/v1/connector-actions?filter=connector_id,eq,%22${mine.connector.id}%22`,
  ];
  const mineIds = [mine.auth.id, mine.ownAuth.id, mine.connector.id, mine.action.id];
  for (const q of queries) {
    const res = await t.call('GET', q, { token: foreign.token });
    assert.equal(res.statusCode, 200, res.body);
    for (const id of mineIds) assert.ok(!res.body.includes(id), `${q} leaks ${id}`);
  }
  const theirs = (await t.call('GET', '/v1/connector-auths', { token: foreign.token })).json().data;
  assert.deepEqual(theirs.map((a: any) => a.name), ['theirs']);
  // The built-in catalogue is shared.
  const cat = (await t.call('GET', '/v1/connectors?limit=200', { token: foreign.token })).json().data;
  assert.ok(cat.length >= 10 && cat.every((c: any) => c.built_in));
});

test('foreign ids inside bodies are unknown: connector_id, grantee ids, owner', async () => {
  const own = await createAuth(t, sampleBody({ name: 'foreign-owned' }), foreign.token);
  const cases: Array<[string, string, unknown, string]> = [
    ['POST', '/v1/connector-auths', { connector_id: mine.connector.id, name: 'x', auth_type: 'api_key', auth_token: 'k' }, 'connector_id'],
    ['PUT', `/v1/connector-auths/${own.id}`, { connector_id: mine.connector.id }, 'connector_id'],
    ['POST', '/v1/connector-actions', { connector_id: mine.connector.id, name: 'x', method: 'GET', input_schema: {} }, 'connector_id'],
    ['PUT', `/v1/connector-auths/${own.id}/permissions`, { visibility: 'restricted', grants: [{ grantee_type: 'user', grantee_id: t.tenant.admin.id, rights: ['read'] }] }, 'grants.0.grantee_id'],
    ['PUT', `/v1/connector-auths/${own.id}/permissions`, { visibility: 'restricted', grants: [{ grantee_type: 'team', grantee_id: mine.team.id, rights: ['read'] }] }, 'grants.0.grantee_id'],
    ['PUT', `/v1/connector-auths/${own.id}/permissions`, { owner_user_id: t.tenant.admin.id }, 'owner_user_id'],
  ];
  for (const [m, url, body, field] of cases) {
    const res = await t.call(m, url, { token: foreign.token, body });
    const p = problem(res, 400, 'validation_failed');
    assert.ok(p.errors.some((e: any) => e.field === field), `${m} ${url}: ${res.body}`);
  }
});

test('resolveForRun across companies: not found, and no decryption audited', async () => {
  const svc = t.ctx.services.connectorAuths;
  const attempts = [
    { companyId: foreign.companyId, userId: foreign.admin.id },
    // A foreign user with this company's id: the user is not in the company.
    { companyId: t.tenant.companyId, userId: foreign.admin.id },
  ];
  for (const a of attempts) {
    await assert.rejects(
      svc.resolveForRun({ ...a, authId: mine.auth.id, connectorId: mine.auth.connector_id, purpose: 'flow_run:x' }),
      (err: unknown) => err instanceof ConnectorAuthResolveError && err.code === 'connector_auth_not_found',
    );
  }
  const ev = (await t.call('GET', `/v1/audit-events?filter=action,eq,%22connector_auth.decrypted%22`)).json().data;
  assert.ok(!ev.some((e: any) => e.target_id === mine.auth.id));
});
