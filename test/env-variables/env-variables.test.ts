// Environment variables: names, write-only encrypted secrets, admins write, automation reads,
// and audit without values.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { startTestApp, problem, type TestApp } from '../support/app.ts';

let t: TestApp;
before(async () => { t = await startTestApp(); });
after(async () => { await t.close(); });

const SECRET = 'env-secret-value-7a6b5c4d';

test('create, read, list, update, delete; secret values are never shown', async () => {
  const plain = await t.call('POST', '/v1/env-variables', { body: { name: 'API_BASE', value: 'https://api.example.com' } });
  assert.equal(plain.statusCode, 201, plain.body);
  assert.deepEqual({ ...(plain.json() as Record<string, unknown>), id: 0, created_at: 0, updated_at: 0 }, { id: 0, name: 'API_BASE', value: 'https://api.example.com', value_set: true, secret: false, created_at: 0, updated_at: 0 });
  assert.equal(plain.headers.location, `/v1/env-variables/${plain.json().id}`);

  const secret = await t.call('POST', '/v1/env-variables', { body: { name: 'API_KEY', value: SECRET, secret: true } });
  assert.equal(secret.statusCode, 201);
  assert.equal(secret.json().value, null);
  assert.equal(secret.json().value_set, true);
  const id = secret.json().id;
  for (const url of [`/v1/env-variables/${id}`, '/v1/env-variables', '/v1/env-variables?filter=secret,eq,true', '/v1/audit-events?limit=200']) {
    const res = await t.call('GET', url);
    assert.equal(res.statusCode, 200);
    assert.ok(!res.body.includes(SECRET), url);
  }
  assert.deepEqual((await t.call('GET', '/v1/env-variables?filter=secret,eq,true')).json().data.map((v: { name: string }) => v.name), ['API_KEY']);

  // Stored encrypted, bound to its row (AAD): not in plain text in the table.
  const row = await sql<{ value: string | null; value_encrypted: string }>`select value, value_encrypted from env_variables where id = ${id}`.execute(t.ctx.database.db);
  assert.equal(row.rows[0].value, null);
  assert.match(row.rows[0].value_encrypted, /^fg1:/);
  assert.ok(!row.rows[0].value_encrypted.includes(SECRET));

  // A secret stays secret when renamed; making it plain needs a new value.
  const renamed = await t.call('PUT', `/v1/env-variables/${id}`, { body: { name: 'API_TOKEN' } });
  assert.equal(renamed.json().value, null);
  assert.equal(renamed.json().secret, true);
  const env = await t.ctx.services.envVariables.forRun(t.tenant.companyId, 'test');
  assert.equal(env.value('API_TOKEN'), SECRET);
  problem(await t.call('PUT', `/v1/env-variables/${id}`, { body: { secret: false } }), 400, 'validation_failed');
  const unsecret = await t.call('PUT', `/v1/env-variables/${id}`, { body: { secret: false, value: 'now-public' } });
  assert.equal(unsecret.json().value, 'now-public');
  // Plain -> secret keeps the value, encrypted.
  const resecret = await t.call('PUT', `/v1/env-variables/${plain.json().id}`, { body: { secret: true } });
  assert.equal(resecret.json().value, null);
  assert.equal((await t.ctx.services.envVariables.forRun(t.tenant.companyId, 'test')).value('API_BASE'), 'https://api.example.com');

  assert.equal((await t.call('DELETE', `/v1/env-variables/${id}`)).statusCode, 204);
  problem(await t.call('GET', `/v1/env-variables/${id}`), 404, 'not_found');
  problem(await t.call('DELETE', `/v1/env-variables/${id}`), 404, 'not_found');
});

test('names: upper-case identifiers, unique per company', async () => {
  for (const name of ['lower', '1ABC', 'A-B', 'A B', '', 'X'.repeat(65)]) {
    const res = await t.call('POST', '/v1/env-variables', { body: { name, value: 'v' } });
    assert.equal(problem(res, 400, 'validation_failed').errors[0].field, 'name', name);
  }
  assert.equal((await t.call('POST', '/v1/env-variables', { body: { name: '_OK_1', value: 'v' } })).statusCode, 201);
  problem(await t.call('POST', '/v1/env-variables', { body: { name: '_OK_1', value: 'w' } }), 409, 'env_variable_name_taken');
  // Another company may use the same name.
  const other = await t.newTenant();
  assert.equal((await t.call('POST', '/v1/env-variables', { token: other.token, body: { name: '_OK_1', value: 'x' } })).statusCode, 201);
  problem(await t.call('POST', '/v1/env-variables', { body: { name: 'X', value: 'v', extra: 1 } }), 400, 'validation_failed');
  problem(await t.call('POST', '/v1/env-variables', { body: { name: 'Y', value: 'v'.repeat(70_000) } }), 400, 'validation_failed');
});

test('members may read; only admins write; automation reads only', async () => {
  const member = await t.newUser(t.tenant.companyId, { scopes: ['company'] });
  assert.equal((await t.call('GET', '/v1/env-variables', { token: member.token })).statusCode, 200);
  problem(await t.call('POST', '/v1/env-variables', { token: member.token, body: { name: 'M', value: 'v' } }), 403, 'admin_required');
  const auto = await t.newUser(t.tenant.companyId, { role: 'admin', scopes: ['automation'] });
  assert.equal((await t.call('GET', '/v1/env-variables', { token: auto.token })).statusCode, 200);
  problem(await t.call('POST', '/v1/env-variables', { token: auto.token, body: { name: 'A', value: 'v' } }), 403, 'insufficient_scope');
});

test('key rotation re-encrypts secret variables', async () => {
  const res = await t.call('POST', '/v1/env-variables', { body: { name: 'ROTATE_ME', value: 'rotate-value-123', secret: true } });
  const before = (await t.ctx.keyring.status()).keys;
  await t.ctx.keyring.rotate();
  const row = await sql<{ value_encrypted: string }>`select value_encrypted from env_variables where id = ${res.json().id}`.execute(t.ctx.database.db);
  assert.equal(t.ctx.keyring.keyIdOf(row.rows[0].value_encrypted), t.ctx.keyring.activeKeyId);
  assert.notEqual(before.find((k) => k.status === 'active')?.id, t.ctx.keyring.activeKeyId);
  assert.equal((await t.ctx.services.envVariables.forRun(t.tenant.companyId, 'test')).value('ROTATE_ME'), 'rotate-value-123');
});
