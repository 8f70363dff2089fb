// The full scope matrix of the connector-auth, connector and connector-action endpoints: every
// scope string (19) x every endpoint either succeeds (the exact success status) or answers
// 403 insufficient_scope, as the seed's table, written out here, says. Every token belongs to
// an admin so object permissions are not in play; each call gets fresh objects.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app.ts';
import { createAuth, sampleBody } from './_helpers.ts';
import { closedPort } from '../connectors/_helpers.ts';
import { HTTP_CONNECTOR_ID, SFTP_CONNECTOR_ID } from '../../src/modules/connectors/catalogue.ts';

// The seed, section 5.1, for the entities of this module.
const FULL: Record<string, string[]> = { 'Connector Auths': ['connector_auth'], Connectors: ['connectors'], 'Connector Actions': ['connectors'] };
const READ_ONLY: Record<string, string[]> = { 'Connector Auths': ['automation'] };
const OPS_OF_LEVEL: Record<string, string[]> = { '': ['create', 'read', 'update', 'delete'], manage: ['create', 'read', 'update'], view: ['read'] };
const SCOPES = ['automation', 'company', 'connector_auth', 'connectors', 'dashboard', 'embed'];

function allowed(scope: string, entity: string, op: string): boolean {
  if (scope === 'automation:webhook_run') return false;
  const [name, ext = ''] = scope.split(':');
  if (READ_ONLY[entity]?.includes(name)) return op === 'read';
  if (!FULL[entity]?.includes(name)) return false;
  return OPS_OF_LEVEL[ext].includes(op);
}

let t: TestApp;
let port: number;
let n = 0;
before(async () => {
  t = await startTestApp();
  port = await closedPort();
});
after(async () => { await t.close(); });

interface Endpoint {
  m: string;
  entity: string;
  op: string;
  ok: number;
  prep(): Promise<{ url: string; body?: unknown }>;
}

const newAuth = async () => (await createAuth(t, {
  connector_id: HTTP_CONNECTOR_ID, name: `m${++n}`, auth_type: 'none', api_endpoint: `http://127.0.0.1:${port}/`,
})).id as string;
const newConnector = async () => {
  const res = await t.call('POST', '/v1/connectors', { body: { name: `Own ${++n}`, auth_types: ['api_key'] } });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().id as string;
};
const newAction = async () => {
  const res = await t.call('POST', '/v1/connector-actions', { body: { connector_id: await newConnector(), name: 'act', method: 'GET', input_schema: {} } });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().id as string;
};

const ENDPOINTS: Endpoint[] = [
  { m: 'POST', entity: 'Connector Auths', op: 'create', ok: 201, prep: async () => ({ url: '/v1/connector-auths', body: sampleBody() }) },
  { m: 'GET', entity: 'Connector Auths', op: 'read', ok: 200, prep: async () => ({ url: '/v1/connector-auths' }) },
  { m: 'GET', entity: 'Connector Auths', op: 'read', ok: 200, prep: async () => ({ url: `/v1/connector-auths/${await newAuth()}` }) },
  { m: 'PUT', entity: 'Connector Auths', op: 'update', ok: 200, prep: async () => ({ url: `/v1/connector-auths/${await newAuth()}`, body: { name: 'changed' } }) },
  { m: 'DELETE', entity: 'Connector Auths', op: 'delete', ok: 204, prep: async () => ({ url: `/v1/connector-auths/${await newAuth()}` }) },
  { m: 'GET', entity: 'Connector Auths', op: 'read', ok: 200, prep: async () => ({ url: `/v1/connector-auths/${await newAuth()}/permissions` }) },
  { m: 'PUT', entity: 'Connector Auths', op: 'update', ok: 200, prep: async () => ({ url: `/v1/connector-auths/${await newAuth()}/permissions`, body: { visibility: 'private' } }) },
  { m: 'POST', entity: 'Connector Auths', op: 'update', ok: 200, prep: async () => ({ url: `/v1/connector-auths/${await newAuth()}/test` }) },

  { m: 'GET', entity: 'Connectors', op: 'read', ok: 200, prep: async () => ({ url: '/v1/connectors?filter=name,like,%22%25ft%25%22' }) },
  { m: 'GET', entity: 'Connectors', op: 'read', ok: 200, prep: async () => ({ url: `/v1/connectors/${SFTP_CONNECTOR_ID}` }) },
  { m: 'POST', entity: 'Connectors', op: 'create', ok: 201, prep: async () => ({ url: '/v1/connectors', body: { name: `Made ${++n}`, auth_types: ['none'] } }) },
  { m: 'PUT', entity: 'Connectors', op: 'update', ok: 200, prep: async () => ({ url: `/v1/connectors/${await newConnector()}`, body: { status: 'paused' } }) },
  { m: 'DELETE', entity: 'Connectors', op: 'delete', ok: 204, prep: async () => ({ url: `/v1/connectors/${await newConnector()}` }) },

  { m: 'GET', entity: 'Connector Actions', op: 'read', ok: 200, prep: async () => ({ url: `/v1/connectors/${SFTP_CONNECTOR_ID}/actions` }) },
  { m: 'GET', entity: 'Connector Actions', op: 'read', ok: 200, prep: async () => ({ url: '/v1/connector-actions' }) },
  { m: 'GET', entity: 'Connector Actions', op: 'read', ok: 200, prep: async () => ({ url: `/v1/connector-actions/${await newAction()}` }) },
  { m: 'POST', entity: 'Connector Actions', op: 'create', ok: 201, prep: async () => ({ url: '/v1/connector-actions', body: { connector_id: await newConnector(), name: 'made', method: 'POST', input_schema: {} } }) },
  { m: 'PUT', entity: 'Connector Actions', op: 'update', ok: 200, prep: async () => ({ url: `/v1/connector-actions/${await newAction()}`, body: { method: 'PUT' } }) },
  { m: 'DELETE', entity: 'Connector Actions', op: 'delete', ok: 204, prep: async () => ({ url: `/v1/connector-actions/${await newAction()}` }) },
];

test('every scope x every connector endpoint: the exact success status, or 403 insufficient_scope', async () => {
  const scopeStrings = [...SCOPES.flatMap((s) => [s, `${s}:manage`, `${s}:view`]), 'automation:webhook_run'];
  assert.equal(scopeStrings.length, 19);
  let allowedCount = 0;
  let deniedCount = 0;
  for (const scope of scopeStrings) {
    const u = await t.newUser(t.tenant.companyId, { role: 'admin', scopes: [scope] });
    for (const e of ENDPOINTS) {
      const { url, body } = await e.prep();
      const res = await t.call(e.m, url, { token: u.token, ...(body !== undefined ? { body } : {}) });
      const what = `${scope} ${e.m} ${url} -> ${res.statusCode} ${res.body.slice(0, 300)}`;
      if (allowed(scope, e.entity, e.op)) {
        assert.equal(res.statusCode, e.ok, what);
        allowedCount++;
      } else {
        assert.equal(res.statusCode, 403, what);
        const p = res.json();
        assert.equal(p.code, 'insufficient_scope', what);
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
        const needed = e.entity === 'Connector Auths' ? 'connector_auth' : 'connectors';
        assert.ok(p.required_scopes.some((s: string) => s.startsWith(needed)), what);
        deniedCount++;
      }
    }
  }
  assert.equal(allowedCount + deniedCount, 19 * ENDPOINTS.length);
  // connector_auth: 8 + 7 (manage: all but delete) + 3 (view: the reads); automation x3 levels: the 3 reads;
  // connectors: 11 + 9 (no deletes) + 5 (reads).
  assert.equal(allowedCount, 8 + 7 + 3 + 3 * 3 + 11 + 9 + 5);
});

test('no credential -> 401 on every endpoint', async () => {
  for (const e of ENDPOINTS) {
    const { url, body } = await e.prep();
    const res = await t.call(e.m, url, { token: null, ...(body !== undefined ? { body } : {}) });
    assert.equal(res.statusCode, 401, `${e.m} ${url}`);
  }
});

test('Basic e-mail:PAT works like Bearer (the flowgate connector\'s own scheme)', async () => {
  const u = await t.newUser(t.tenant.companyId, { scopes: ['connector_auth:view'] });
  const basic = Buffer.from(`${u.email}:${u.token}`).toString('base64');
  const res = await t.app.inject({ method: 'GET', url: '/v1/connector-auths', headers: { authorization: `Basic ${basic}` } });
  assert.equal(res.statusCode, 200, res.body);
  const post = await t.app.inject({ method: 'POST', url: '/v1/connector-auths', headers: { authorization: `Basic ${basic}` }, payload: sampleBody() });
  assert.equal(post.statusCode, 403);
  assert.equal(post.json().code, 'insufficient_scope');
});
