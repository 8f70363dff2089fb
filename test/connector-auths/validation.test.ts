// Bad input on every connector-auth and connector endpoint: problem+json 400 naming the field,
// and nothing written (row counts of every table the modules touch, audit log included).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app.ts';
import { createAuth, sampleBody, snapshot, ZERO_UUID } from './_helpers.ts';
import {
  DATA_MAPPER_CONNECTOR_ID, FLOWGATE_CONNECTOR_ID, FTP_CONNECTOR_ID, HTTP_CONNECTOR_ID, SFTP_CONNECTOR_ID, ZENDESK_CONNECTOR_ID,
} from '../../src/modules/connectors/catalogue.ts';

let t: TestApp;
let auth: Record<string, any>;
let own: Record<string, any>;
let ownAction: Record<string, any>;
before(async () => {
  t = await startTestApp();
  auth = await createAuth(t);
  own = (await t.call('POST', '/v1/connectors', { body: { name: 'Own API', auth_types: ['api_key'], runtime: 'http', base_domain: 'api.own.example' } })).json();
  ownAction = (await t.call('POST', '/v1/connector-actions', { body: { connector_id: own.id, name: 'get_items', method: 'GET', input_schema: { type: 'object' } } })).json();
});
after(async () => { await t.close(); });

interface Case { name: string; m: string; url: () => string; body?: unknown; raw?: string; field: string | RegExp | null; code?: string }

async function expectBad(c: Case): Promise<void> {
  const before = await snapshot(t);
  const res = c.raw !== undefined
    ? await t.app.inject({ method: c.m as 'POST', url: c.url(), payload: c.raw, headers: { authorization: `Bearer ${t.tenant.token}`, 'content-type': 'application/json' } })
    : await t.call(c.m, c.url(), c.body !== undefined ? { body: c.body } : {});
  assert.equal(res.statusCode, 400, `${c.name}: ${res.statusCode} ${res.body}`);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/, c.name);
  const p = res.json();
  if (c.code) assert.equal(p.code, c.code, c.name);
  if (c.field !== null) {
    const want = c.field;
    const fields: string[] = (p.errors ?? []).map((e: any) => e.field);
    const ok = fields.some((f) => (typeof want === 'string' ? f === want : want.test(f)));
    assert.ok(ok, `${c.name}: expected field ${want} in ${res.body}`);
  }
  assert.deepEqual(await snapshot(t), before, `${c.name}: nothing written`);
}

const long = (n: number) => 'x'.repeat(n);

test('POST /v1/connector-auths: every kind of bad input', async () => {
  const post = (name: string, body: unknown, field: string | RegExp, code?: string): Case => ({ name, m: 'POST', url: () => '/v1/connector-auths', body, field, code });
  const cases: Case[] = [
    { name: 'malformed JSON', m: 'POST', url: () => '/v1/connector-auths', raw: '{"name": ', field: null, code: 'malformed_json' },
    post('unknown field', sampleBody({ secret_sauce: 1 }), 'secret_sauce', 'validation_failed'),
    post('id is server-generated', sampleBody({ id: ZERO_UUID }), 'id'),
    post('missing connector_id', (() => { const b = sampleBody(); delete b.connector_id; return b; })(), 'connector_id'),
    post('missing name', (() => { const b = sampleBody(); delete b.name; return b; })(), 'name'),
    post('missing auth_type', (() => { const b = sampleBody(); delete b.auth_type; return b; })(), 'auth_type'),
    post('name wrong type', sampleBody({ name: 5 }), 'name'),
    post('name empty', sampleBody({ name: '' }), 'name'),
    post('name too long', sampleBody({ name: long(201) }), 'name'),
    post('password too long', sampleBody({ password: long(4097) }), 'password'),
    post('auth_token too long', sampleBody({ auth_token: long(8193) }), 'auth_token'),
    post('auth_details too long', sampleBody({ auth_details: long(65537) }), 'auth_details'),
    post('api_endpoint too long', sampleBody({ api_endpoint: 'sftp://h.example.com/' + long(2048) }), 'api_endpoint'),
    post('username too long', sampleBody({ username: long(513) }), 'username'),
    post('tags not an array', sampleBody({ tags: 'a,b' }), 'tags'),
    post('tags with a number', sampleBody({ tags: ['a', 2] }), 'tags.1'),
    post('tags with an empty string', sampleBody({ tags: [''] }), 'tags.0'),
    post('too many tags', sampleBody({ tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }), 'tags'),
    post('user_input an array', sampleBody({ user_input: [] }), 'user_input'),
    post('user_input a string', sampleBody({ user_input: '{}' }), 'user_input'),
    post('user_input too large', sampleBody({ user_input: { blob: long(17_000) } }), 'user_input'),
    post('auth_token a number', sampleBody({ auth_token: 1 }), 'auth_token'),
    post('password null', sampleBody({ password: null }), 'password'),
    post('connector_id not a uuid', sampleBody({ connector_id: 'sftp' }), 'connector_id'),
    post('unknown connector', sampleBody({ connector_id: ZERO_UUID }), 'connector_id'),
    post('bad URL', sampleBody({ api_endpoint: 'not a url' }), 'api_endpoint'),
    post('URL of the wrong scheme for SFTP', sampleBody({ api_endpoint: 'https://h.example.com/' }), 'api_endpoint'),
    post('URL of the wrong scheme for HTTP', { connector_id: HTTP_CONNECTOR_ID, name: 'x', auth_type: 'none', api_endpoint: 'ftp://h.example.com/' }, 'api_endpoint'),
    post('SFTP needs an endpoint', sampleBody({ api_endpoint: '' }), 'api_endpoint'),
    post('generic HTTP needs an endpoint', { connector_id: HTTP_CONNECTOR_ID, name: 'x', auth_type: 'none' }, 'api_endpoint'),
    post('unknown auth_type', sampleBody({ auth_type: 'magic' }), 'auth_type'),
    post('auth_type not allowed by the connector', sampleBody({ auth_type: 'api_key', auth_token: 'k' }), 'auth_type'),
    post('helper connector takes no credentials', { connector_id: DATA_MAPPER_CONNECTOR_ID, name: 'x', auth_type: 'none' }, 'auth_type'),
    post('username_password without a password anywhere', sampleBody({ password: '', api_endpoint: 'sftp://user@h.example.com/p' }), 'password'),
    post('username_password without a username anywhere', sampleBody({ username: '', api_endpoint: 'sftp://h.example.com/p' }), 'username'),
    post('api_key without auth_token', { connector_id: HTTP_CONNECTOR_ID, name: 'x', auth_type: 'api_key', api_endpoint: 'https://a.example.com' }, 'auth_token'),
    post('oauth2 without auth_token', { connector_id: ZENDESK_CONNECTOR_ID, name: 'x', auth_type: 'oauth2', auth_token: '' }, 'auth_token'),
    post('refreshable_token without auth_details', { connector_id: HTTP_CONNECTOR_ID, name: 'x', auth_type: 'refreshable_token', api_endpoint: 'https://a.example.com' }, 'auth_details'),
    post('basic_auth without username (flowgate: e-mail)', { connector_id: FLOWGATE_CONNECTOR_ID, name: 'x', auth_type: 'basic_auth', password: 'fgp_x' }, 'username'),
    post('visibility unknown', sampleBody({ visibility: 'public' }), 'visibility'),
  ];
  for (const c of cases) await expectBad(c);
});

test('PUT /v1/connector-auths/{id}: every kind of bad input', async () => {
  const put = (name: string, body: unknown, field: string | RegExp, code?: string): Case => ({ name, m: 'PUT', url: () => `/v1/connector-auths/${auth.id}`, body, field, code });
  const cases: Case[] = [
    { name: 'malformed JSON', m: 'PUT', url: () => `/v1/connector-auths/${auth.id}`, raw: '{', field: null, code: 'malformed_json' },
    put('empty body', {}, '(body)'),
    put('unknown field', { name: 'x', colour: 'red' }, 'colour'),
    put('create-only auth_token', { auth_token: 'x' }, 'auth_token'),
    put('create-only auth_details', { auth_details: 'x' }, 'auth_details'),
    put('create-only user_input', { user_input: {} }, 'user_input'),
    put('create-only tags', { tags: [] }, 'tags'),
    put('name wrong type', { name: [] }, 'name'),
    put('name too long', { name: long(201) }, 'name'),
    put('password too long', { password: long(4097) }, 'password'),
    put('bad URL', { api_endpoint: 'http//nope' }, 'api_endpoint'),
    put('unknown connector', { connector_id: ZERO_UUID }, 'connector_id'),
    put('connector of a foreign scheme (stored sftp URL on FTP)', { connector_id: FTP_CONNECTOR_ID }, 'api_endpoint'),
    put('auth_type not allowed', { auth_type: 'oauth2' }, 'auth_type'),
    put('switch to a type whose field cannot be set by PUT', { connector_id: HTTP_CONNECTOR_ID, auth_type: 'api_key', api_endpoint: 'https://a.example.com' }, 'auth_token'),
    put('clearing the only password', { password: '' , api_endpoint: 'sftp://user@h.example.com/p' }, 'password'),
  ];
  for (const c of cases) await expectBad(c);
});

test('permissions PUT: every kind of bad input', async () => {
  const u = await t.newUser(t.tenant.companyId);
  const put = (name: string, body: unknown, field: string | RegExp): Case => ({ name, m: 'PUT', url: () => `/v1/connector-auths/${auth.id}/permissions`, body, field });
  const g = (over: Record<string, unknown> = {}) => ({ grantee_type: 'user', grantee_id: u.id, rights: ['read'], ...over });
  const cases: Case[] = [
    { name: 'malformed JSON', m: 'PUT', url: () => `/v1/connector-auths/${auth.id}/permissions`, raw: 'nope', field: null, code: 'malformed_json' },
    put('empty body', {}, '(body)'),
    put('unknown field', { visibility: 'company', everyone: true }, 'everyone'),
    put('unknown visibility', { visibility: 'public' }, 'visibility'),
    put('grants not an array', { grants: {} }, 'grants'),
    put('grant with unknown right', { grants: [g({ rights: ['admin'] })] }, 'grants.0.rights.0'),
    put('grant with no rights', { grants: [g({ rights: [] })] }, 'grants.0.rights'),
    put('grant with an unknown field', { grants: [g({ note: 'x' })] }, 'grants.0.note'),
    put('grant to an unknown user', { visibility: 'restricted', grants: [g({ grantee_id: ZERO_UUID })] }, 'grants.0.grantee_id'),
    put('grant to an unknown team', { visibility: 'restricted', grants: [g({ grantee_type: 'team', grantee_id: ZERO_UUID })] }, 'grants.0.grantee_id'),
    put('grantee type unknown', { grants: [g({ grantee_type: 'group' })] }, 'grants.0.grantee_type'),
    put('the same grantee twice', { visibility: 'restricted', grants: [g(), g({ rights: ['update'] })] }, 'grants.1.grantee_id'),
    put('private with grants', { visibility: 'private', grants: [g()] }, 'grants'),
    put('owner not a user of the company', { owner_user_id: ZERO_UUID }, 'owner_user_id'),
    put('owner not a uuid', { owner_user_id: 'me' }, 'owner_user_id'),
  ];
  for (const c of cases) await expectBad(c);
});

test('ids, lists and queries: bad path ids and bad query strings', async () => {
  const cases: Case[] = [];
  for (const [m, path] of [
    ['GET', '/v1/connector-auths/not-a-uuid'], ['PUT', '/v1/connector-auths/not-a-uuid'], ['DELETE', '/v1/connector-auths/not-a-uuid'],
    ['GET', '/v1/connector-auths/not-a-uuid/permissions'], ['PUT', '/v1/connector-auths/not-a-uuid/permissions'],
    ['POST', '/v1/connector-auths/not-a-uuid/test'], ['GET', '/v1/connectors/1'], ['PUT', '/v1/connectors/1'], ['DELETE', '/v1/connectors/1'],
    ['GET', '/v1/connectors/1/actions'], ['GET', '/v1/connector-actions/1'], ['PUT', '/v1/connector-actions/1'], ['DELETE', '/v1/connector-actions/1'],
  ] as const) {
    cases.push({ name: `${m} ${path}`, m, url: () => path, body: m === 'PUT' ? { name: 'x' } : undefined, field: 'params.id' });
  }
  for (const list of ['/v1/connector-auths', '/v1/connectors', '/v1/connector-actions', `/v1/connectors/${SFTP_CONNECTOR_ID}/actions`]) {
    cases.push({ name: `${list} unknown filter field`, m: 'GET', url: () => `${list}?filter=secret,eq,1`, field: 'filter', code: 'invalid_filter' });
    cases.push({ name: `${list} bad operator`, m: 'GET', url: () => `${list}?filter=name,regex,%22a%22`, field: 'filter', code: 'invalid_filter' });
    cases.push({ name: `${list} bad cursor`, m: 'GET', url: () => `${list}?cursor=zzz`, field: 'cursor', code: 'invalid_cursor' });
    cases.push({ name: `${list} limit 0`, m: 'GET', url: () => `${list}?limit=0`, field: /limit/ });
    cases.push({ name: `${list} limit 1000`, m: 'GET', url: () => `${list}?limit=1000`, field: /limit/ });
    cases.push({ name: `${list} unknown query parameter`, m: 'GET', url: () => `${list}?sort=name`, field: /sort/ });
  }
  for (const c of cases) await expectBad(c);
});

test('connectors and connector actions: every kind of bad input', async () => {
  const cpost = (name: string, body: unknown, field: string | RegExp): Case => ({ name, m: 'POST', url: () => '/v1/connectors', body, field });
  const cput = (name: string, body: unknown, field: string | RegExp): Case => ({ name, m: 'PUT', url: () => `/v1/connectors/${own.id}`, body, field });
  const apost = (name: string, body: Record<string, unknown>, field: string | RegExp): Case => ({
    name, m: 'POST', url: () => '/v1/connector-actions', body: { connector_id: own.id, name: 'do_it', method: 'POST', input_schema: { type: 'object' }, ...body }, field,
  });
  const aput = (name: string, body: unknown, field: string | RegExp): Case => ({ name, m: 'PUT', url: () => `/v1/connector-actions/${ownAction.id}`, body, field });
  const ok = { name: 'New', auth_types: ['api_key'] };
  const cases: Case[] = [
    { name: 'connector malformed JSON', m: 'POST', url: () => '/v1/connectors', raw: '[', field: null, code: 'malformed_json' },
    cpost('unknown field', { ...ok, owner: 'me' }, 'owner'),
    cpost('missing name', { auth_types: [] }, 'name'),
    cpost('missing auth_types', { name: 'x' }, 'auth_types'),
    cpost('name too long', { ...ok, name: long(201) }, 'name'),
    cpost('unknown auth type', { ...ok, auth_types: ['magic'] }, 'auth_types.0'),
    cpost('duplicate auth types', { ...ok, auth_types: ['api_key', 'api_key'] }, 'auth_types'),
    cpost('bad contype', { ...ok, contype: 'plugin' }, 'contype'),
    cpost('bad status', { ...ok, status: 'dead' }, 'status'),
    cpost('bad runtime', { ...ok, runtime: 'smtp' }, 'runtime'),
    cpost('bad base_domain', { ...ok, base_domain: 'not a host!' }, 'base_domain'),
    cpost('short_description too long', { ...ok, short_description: long(1001) }, 'short_description'),
    cpost('tags wrong type', { ...ok, tags: [1] }, 'tags.0'),
    cput('empty body', {}, '(body)'),
    cput('unknown field', { built_in: true }, 'built_in'),
    cput('name wrong type', { name: 1 }, 'name'),
    { name: 'action malformed JSON', m: 'POST', url: () => '/v1/connector-actions', raw: '{{', field: null, code: 'malformed_json' },
    apost('action name not snake_case', { name: 'DoIt' }, 'name'),
    apost('action name with dashes', { name: 'do-it' }, 'name'),
    apost('action name too long', { name: 'a' + long(64) }, 'name'),
    apost('action method unknown', { method: 'FETCH' }, 'method'),
    apost('input_schema not an object', { input_schema: 'object' }, 'input_schema'),
    apost('input_schema not a JSON Schema', { input_schema: { type: 'nonsense' } }, 'input_schema'),
    apost('unknown connector', { connector_id: ZERO_UUID }, 'connector_id'),
    apost('unknown field', { runtime: 'http' }, 'runtime'),
    aput('empty body', {}, '(body)'),
    aput('connector_id is not changeable', { connector_id: own.id }, 'connector_id'),
    aput('input_schema invalid', { input_schema: { properties: 5 } }, 'input_schema'),
  ];
  for (const c of cases) await expectBad(c);
});
