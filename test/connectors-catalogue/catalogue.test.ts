// Connectors: the seed's lookup exactly as written, the built-in catalogue (fixed ids, read-only,
// actions matching the runtime), company connectors and their actions.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, problem, type TestApp } from '../support/app.ts';
import { CONNECTOR_ACTIONS } from '../../src/modules/connectors/runtime/index.ts';

// Written out here, independent of src: these ids must never change.
const FIXED: Record<string, string> = {
  FTP: 'e9b31c1b-a892-4e68-b123-1482f8fc9326',
  SFTP: '7d850823-0528-4671-b1d8-751f47547992',
  HTTP: '0f926b7e-fc85-4a77-ab42-bd02fabce0d9',
  flowgate: '8d0f811e-580c-4f75-85c2-52b7e7a3c526',
  Zendesk: 'fe137c1a-c8d6-4862-aac6-08c07713b94d',
  'Google Sheets': '52001078-78bb-4ce2-a282-a45a2e9306a0',
  Salesforce: '7ac781ca-0c66-4010-a3e2-b24c52a21c12',
  HubSpot: 'a3d14eea-ce0f-41aa-bfa8-59632524852d',
  Slack: '69b3ab3b-234e-4652-bfef-0a88dea7575a',
  'Data Mapper': 'b22783c5-1654-4951-a600-358ba7366feb',
};
const UUID4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let t: TestApp;
before(async () => { t = await startTestApp(); });
after(async () => { await t.close(); });

async function all(url: string, token?: string): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  do {
    const res = await t.call('GET', `${url}${url.includes('?') ? '&' : '?'}limit=200${cursor ? `&cursor=${cursor}` : ''}`, token ? { token } : {});
    assert.equal(res.statusCode, 200, res.body);
    out.push(...res.json().data);
    cursor = res.json().next_cursor;
  } while (cursor);
  return out;
}

test('the seed\'s lookup, exactly as written, finds FTP and SFTP and nothing else', async () => {
  const res = await t.call('GET', '/v1/connectors?filter=name,like,%22%25ft%25%22');
  assert.equal(res.statusCode, 200, res.body);
  const found = res.json().data;
  assert.deepEqual(found.map((c: any) => c.name).sort(), ['FTP', 'SFTP']);
  assert.deepEqual(found.map((c: any) => c.id).sort(), [FIXED.FTP, FIXED.SFTP].sort());
  // Case-insensitive both ways, and `_` is not a wildcard.
  assert.deepEqual((await t.call('GET', '/v1/connectors?filter=name,like,%22%25FT%25%22')).json().data.map((c: any) => c.name).sort(), ['FTP', 'SFTP']);
  assert.deepEqual((await t.call('GET', '/v1/connectors?filter=name,like,%22s_tp%22')).json().data, []);
  assert.deepEqual((await t.call('GET', '/v1/connectors?filter=name,eq,%22SFTP%22')).json().data.map((c: any) => c.id), [FIXED.SFTP]);
});

test('the built-in catalogue: fixed uuid4 ids, runtimes, auth types, identical on every installation', async () => {
  const cat = await all('/v1/connectors');
  const byName = Object.fromEntries(cat.map((c) => [c.name, c]));
  for (const [name, id] of Object.entries(FIXED)) {
    assert.equal(byName[name]?.id, id, name);
    assert.match(id, UUID4);
    assert.equal(byName[name].built_in, true);
  }
  assert.equal(byName.SFTP.runtime, 'sftp');
  assert.equal(byName.FTP.runtime, 'ftp');
  assert.equal(byName.HTTP.runtime, 'http');
  assert.equal(byName.flowgate.runtime, 'http');
  assert.deepEqual(byName.flowgate.auth_types, ['basic_auth']);
  assert.ok(byName.SFTP.auth_types.includes('username_password'));
  assert.equal(byName.Zendesk.base_domain, 'zendesk.com');
  assert.equal(byName['Data Mapper'].contype, 'helper');
  assert.equal(byName['Data Mapper'].runtime, null);
  // A second installation holds the same catalogue, byte for byte.
  const other = await startTestApp();
  try {
    const again = (await other.call('GET', '/v1/connectors?limit=200')).json().data;
    assert.deepEqual(again, cat);
    const actions = (await other.call('GET', '/v1/connector-actions?limit=200')).json().data;
    assert.deepEqual(actions, await all('/v1/connector-actions'));
  } finally {
    await other.close();
  }
});

test('built-in actions are exactly what the runtime runs; each has an input schema', async () => {
  for (const [name, kind] of [['SFTP', 'sftp'], ['FTP', 'ftp'], ['HTTP', 'http']] as const) {
    const actions = await all(`/v1/connectors/${FIXED[name]}/actions`);
    assert.deepEqual(actions.map((a) => a.name).sort(), [...CONNECTOR_ACTIONS[kind]].sort(), name);
    for (const a of actions) {
      assert.match(a.id, UUID4);
      assert.equal(a.connector_id, FIXED[name]);
      assert.equal(a.input_schema.type, 'object');
      assert.equal(a.built_in, true);
    }
  }
  const viaFilter = await all(`/v1/connector-actions?filter=connector_id,eq,%22${FIXED.SFTP}%22&filter=name,eq,%22upload_file%22`);
  assert.equal(viaFilter.length, 1);
  assert.equal(viaFilter[0].method, 'PUT');
  assert.deepEqual(viaFilter[0].input_schema.required, ['path', 'content']);
  const one = await t.call('GET', `/v1/connector-actions/${viaFilter[0].id}`);
  assert.deepEqual(one.json(), viaFilter[0]);
});

test('filters: contype, status, runtime, base_domain, tags, created_at', async () => {
  const names = async (q: string) => (await all(`/v1/connectors?${q}`)).map((c) => c.name).sort();
  assert.deepEqual(await names('filter=contype,eq,%22helper%22'), ['Data Mapper']);
  assert.deepEqual(await names('filter=runtime,in,["sftp","ftp"]'), ['FTP', 'SFTP']);
  assert.deepEqual(await names('filter=base_domain,eq,%22slack.com%22'), ['Slack']);
  assert.deepEqual(await names('filter=tags,eq,%22crm%22'), ['HubSpot', 'Salesforce']);
  assert.ok((await names('filter=status,eq,%22active%22')).length >= 10);
  assert.deepEqual(await names('filter=created_at,gt,%222026-01-02T00:00:00Z%22'), []);
});

test('the built-in catalogue is read-only', async () => {
  const sftpActions = await all(`/v1/connectors/${FIXED.SFTP}/actions`);
  problem(await t.call('PUT', `/v1/connectors/${FIXED.SFTP}`, { body: { name: 'Mine now' } }), 403, 'builtin_read_only');
  problem(await t.call('DELETE', `/v1/connectors/${FIXED.SFTP}`), 403, 'builtin_read_only');
  problem(await t.call('POST', '/v1/connector-actions', { body: { connector_id: FIXED.SFTP, name: 'rm_rf', method: 'DELETE', input_schema: {} } }), 403, 'builtin_read_only');
  problem(await t.call('PUT', `/v1/connector-actions/${sftpActions[0].id}`, { body: { method: 'POST' } }), 403, 'builtin_read_only');
  problem(await t.call('DELETE', `/v1/connector-actions/${sftpActions[0].id}`), 403, 'builtin_read_only');
  assert.equal((await t.call('GET', `/v1/connectors/${FIXED.SFTP}`)).json().name, 'SFTP');
  assert.equal((await all(`/v1/connectors/${FIXED.SFTP}/actions`)).length, sftpActions.length);
});

test('company connectors and actions: create, read, update, delete (admins), conflicts, audit', async () => {
  const created = await t.call('POST', '/v1/connectors', { body: {
    name: 'Billing API', auth_types: ['api_key', 'oauth2'], runtime: 'http', base_domain: 'billing.example.com', tags: ['billing'], short_description: 'ours',
  } });
  assert.equal(created.statusCode, 201, created.body);
  const c = created.json();
  assert.match(c.id, UUID4);
  assert.equal(created.headers.location, `/v1/connectors/${c.id}`);
  assert.equal(c.built_in, false);
  assert.equal(c.contype, 'connector');
  assert.equal(c.status, 'active');
  problem(await t.call('POST', '/v1/connectors', { body: { name: 'Billing API', auth_types: [] } }), 409, 'connector_name_taken');
  // A company may reuse a built-in name: its own SFTP shows up next to the catalogue's.
  assert.equal((await t.call('POST', '/v1/connectors', { body: { name: 'SFTP', auth_types: ['username_password'], runtime: 'sftp' } })).statusCode, 201);

  const act = await t.call('POST', '/v1/connector-actions', { body: {
    connector_id: c.id, name: 'create_invoice', method: 'POST', short_description: 'Create an invoice',
    input_schema: { type: 'object', required: ['amount'], properties: { amount: { type: 'number' } } },
  } });
  assert.equal(act.statusCode, 201, act.body);
  assert.equal(act.headers.location, `/v1/connector-actions/${act.json().id}`);
  problem(await t.call('POST', '/v1/connector-actions', { body: { connector_id: c.id, name: 'create_invoice', method: 'GET', input_schema: {} } }), 409, 'action_name_taken');
  assert.equal((await t.ctx.services.connectors.action(t.tenant.companyId, c.id, 'create_invoice'))?.method, 'POST');
  const upd = await t.call('PUT', `/v1/connector-actions/${act.json().id}`, { body: { method: 'PUT', input_schema: { type: 'object' } } });
  assert.equal(upd.statusCode, 200, upd.body);
  assert.equal(upd.json().method, 'PUT');
  assert.deepEqual(upd.json().input_schema, { type: 'object' });

  const auth = await t.call('POST', '/v1/connector-auths', { body: { connector_id: c.id, name: 'billing', auth_type: 'api_key', auth_token: 'k' } });
  assert.equal(auth.statusCode, 201, auth.body);
  problem(await t.call('PUT', `/v1/connectors/${c.id}`, { body: { auth_types: ['oauth2'] } }), 409, 'auth_type_in_use');
  problem(await t.call('DELETE', `/v1/connectors/${c.id}`), 409, 'connector_in_use');
  const put = await t.call('PUT', `/v1/connectors/${c.id}`, { body: { status: 'paused', auth_types: ['api_key'] } });
  assert.equal(put.statusCode, 200, put.body);
  assert.equal(put.json().status, 'paused');
  assert.equal(put.json().name, 'Billing API');
  assert.deepEqual((await t.call('GET', `/v1/connectors/${c.id}`)).json(), put.json());

  await t.call('DELETE', `/v1/connector-auths/${auth.json().id}`);
  assert.equal((await t.call('DELETE', `/v1/connectors/${c.id}`)).statusCode, 204);
  problem(await t.call('GET', `/v1/connectors/${c.id}`), 404, 'not_found');
  problem(await t.call('GET', `/v1/connector-actions/${act.json().id}`), 404, 'not_found');

  const ev = await all(`/v1/audit-events?filter=target_id,eq,%22${c.id}%22`);
  assert.deepEqual(ev.map((e) => e.action), ['connector.created', 'connector.updated', 'connector.deleted']);
});

test('members read connectors but only admins write them', async () => {
  const m = await t.newUser(t.tenant.companyId, { scopes: ['connectors'] });
  assert.equal((await t.call('GET', '/v1/connectors', { token: m.token })).statusCode, 200);
  problem(await t.call('POST', '/v1/connectors', { token: m.token, body: { name: 'By member', auth_types: [] } }), 403, 'admin_required');
  const c = (await t.call('POST', '/v1/connectors', { body: { name: 'For members', auth_types: ['none'] } })).json();
  problem(await t.call('PUT', `/v1/connectors/${c.id}`, { token: m.token, body: { name: 'x' } }), 403, 'admin_required');
  problem(await t.call('DELETE', `/v1/connectors/${c.id}`, { token: m.token }), 403, 'admin_required');
  problem(await t.call('POST', '/v1/connector-actions', { token: m.token, body: { connector_id: c.id, name: 'x', method: 'GET', input_schema: {} } }), 403, 'admin_required');
  assert.equal((await t.call('GET', `/v1/connectors/${c.id}`, { token: m.token })).statusCode, 200);
});

test('the lookup stays exact among many company connectors', async () => {
  const t2 = await startTestApp();
  try {
    for (let i = 0; i < 30; i++) await t2.call('POST', '/v1/connectors', { body: { name: `Connector ${i}`, auth_types: ['none'] } });
    await t2.call('POST', '/v1/connectors', { body: { name: 'Loft storage', auth_types: ['none'] } });
    const found = (await t2.call('GET', '/v1/connectors?filter=name,like,%22%25ft%25%22')).json().data.map((c: any) => c.name).sort();
    assert.deepEqual(found, ['FTP', 'Loft storage', 'SFTP']);
  } finally {
    await t2.close();
  }
});
