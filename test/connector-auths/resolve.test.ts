// The flow engine's contract: connectorAuths.resolveForRun (and connectors.get / action), and
// the key ring: ciphertexts bound to company, record and field; rotation re-encrypts them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { startTestApp, type TestApp, type Tenant } from '../support/app.ts';
import { createAuth, rawAuthRow, sampleBody } from './_helpers.ts';
import { ConnectorAuthResolveError } from '../../src/modules/connector-auths/service.ts';
import { FTP_CONNECTOR_ID, HTTP_CONNECTOR_ID, SFTP_CONNECTOR_ID } from '../../src/modules/connectors/catalogue.ts';

let t: TestApp;
let foreign: Tenant;
before(async () => {
  t = await startTestApp();
  foreign = await t.newTenant();
});
after(async () => { await t.close(); });

const resolve = (over: Partial<Parameters<TestApp['ctx']['services']['connectorAuths']['resolveForRun']>[0]> & { authId: string }) =>
  t.ctx.services.connectorAuths.resolveForRun({
    companyId: t.tenant.companyId, userId: t.tenant.admin.id, connectorId: SFTP_CONNECTOR_ID, purpose: 'flow_run:r1', ...over,
  });

const rejectsWith = (p: Promise<unknown>, code: string, secrets: string[] = []) =>
  assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof ConnectorAuthResolveError, String(e));
    assert.ok(e instanceof Error);
    assert.equal(e.code, code);
    for (const s of secrets) assert.ok(!e.message.includes(s), 'the message names no secret');
    return true;
  });

test('resolveForRun: the decrypted credential, every secret listed, the decryption audited with its purpose', async () => {
  const a = await createAuth(t, sampleBody({
    api_endpoint: 'sftp://user:urlpw-1@h.example.com:2222/in', password: 'pw-1', auth_token: 'tok-1', auth_details: 'det-1',
  }));
  const r = await resolve({ authId: a.id });
  assert.deepEqual({ ...r, secrets: undefined }, {
    id: a.id, authType: 'username_password', apiEndpoint: 'sftp://user:urlpw-1@h.example.com:2222/in', username: 'user',
    password: 'pw-1', authToken: 'tok-1', authDetails: 'det-1', secrets: undefined,
  });
  for (const s of ['pw-1', 'tok-1', 'det-1', 'urlpw-1']) assert.ok(r.secrets.includes(s), s);
  const ev = (await t.call('GET', `/v1/audit-events?filter=action,eq,%22connector_auth.decrypted%22&filter=target_id,eq,%22${a.id}%22`)).json().data;
  assert.equal(ev.length, 1);
  assert.equal(ev[0].details.purpose, 'flow_run:r1');
  assert.equal(ev[0].credential_kind, 'system');
});

test('resolveForRun: refusals (not a uuid, foreign, other connector, not visible, deleted, unknown/disabled user)', async () => {
  const a = await createAuth(t, sampleBody({ password: 'pw-r2' }));
  await rejectsWith(resolve({ authId: 'not-a-uuid' }), 'connector_auth_not_found');
  await rejectsWith(resolve({ authId: "x' or 1=1 --" }), 'connector_auth_not_found');
  const theirs = await createAuth(t, sampleBody(), foreign.token);
  await rejectsWith(resolve({ authId: theirs.id }), 'connector_auth_not_found');
  await rejectsWith(resolve({ authId: a.id, connectorId: FTP_CONNECTOR_ID }), 'connector_mismatch', ['pw-r2']);

  const owner = await t.newUser(t.tenant.companyId, { scopes: ['connector_auth'] });
  const flowOwner = await t.newUser(t.tenant.companyId);
  const priv = await createAuth(t, sampleBody({ visibility: 'private', password: 'pw-private' }), owner.token);
  await rejectsWith(resolve({ authId: priv.id, userId: flowOwner.id }), 'connector_auth_not_found', ['pw-private']);
  assert.equal((await resolve({ authId: priv.id, userId: owner.id })).password, 'pw-private');
  // Not visible beats wrong connector: nothing is revealed about an invisible auth.
  await rejectsWith(resolve({ authId: priv.id, userId: flowOwner.id, connectorId: FTP_CONNECTOR_ID }), 'connector_auth_not_found');

  await t.call('PUT', `/v1/users/${flowOwner.id}`, { body: { disabled: true } });
  await rejectsWith(resolve({ authId: a.id, userId: flowOwner.id }), 'connector_auth_not_found');
  await rejectsWith(resolve({ authId: a.id, userId: foreign.admin.id }), 'connector_auth_not_found');

  assert.equal((await t.call('DELETE', `/v1/connector-auths/${a.id}`)).statusCode, 204);
  await rejectsWith(resolve({ authId: a.id }), 'connector_auth_not_found');
});

test('connectors.get and connectors.action: the catalogue and the company\'s own, never another company\'s', async () => {
  const c = t.ctx.services.connectors;
  const sftp = await c.get(t.tenant.companyId, SFTP_CONNECTOR_ID);
  assert.equal(sftp?.runtime, 'sftp');
  assert.equal(sftp?.built_in, true);
  const up = await c.action(t.tenant.companyId, SFTP_CONNECTOR_ID, 'upload_file');
  assert.deepEqual(Object.keys(up!).sort(), ['built_in', 'connector_id', 'created_at', 'id', 'input_schema', 'method', 'name', 'short_description', 'updated_at']);
  assert.equal((up!.input_schema as any).required.includes('path'), true);
  assert.equal(await c.action(t.tenant.companyId, SFTP_CONNECTOR_ID, 'request'), null);
  assert.equal((await c.action(t.tenant.companyId, HTTP_CONNECTOR_ID, 'request'))?.method, 'ANY');
  const own = (await t.call('POST', '/v1/connectors', { token: foreign.token, body: { name: 'Theirs', auth_types: ['none'], runtime: 'http' } })).json();
  await t.call('POST', '/v1/connector-actions', { token: foreign.token, body: { connector_id: own.id, name: 'go', method: 'GET', input_schema: {} } });
  assert.equal((await c.get(foreign.companyId, own.id))?.name, 'Theirs');
  assert.equal(await c.get(t.tenant.companyId, own.id), null);
  assert.equal(await c.action(t.tenant.companyId, own.id, 'go'), null);
  assert.equal((await c.action(foreign.companyId, own.id, 'go'))?.name, 'go');
  assert.equal(await c.get(t.tenant.companyId, 'not-a-uuid'), null);
});

test('key ring: a ciphertext copied to another row, company or field does not decrypt; it fails cleanly', async () => {
  const a = await createAuth(t, sampleBody({ password: 'pw-A', auth_token: 'tok-A' }));
  const b = await createAuth(t, sampleBody({ password: 'pw-B' }));
  const c = await createAuth(t, sampleBody({ password: 'pw-C' }), foreign.token);
  const rowA = await rawAuthRow(t, a.id);
  const db = t.ctx.database.db;
  await sql`update connector_auths set password_enc = ${rowA.password_enc} where id = ${b.id}`.execute(db);
  await sql`update connector_auths set password_enc = ${rowA.password_enc} where id = ${c.id}`.execute(db);
  await sql`update connector_auths set auth_token_enc = ${rowA.password_enc} where id = ${a.id}`.execute(db);

  await rejectsWith(resolve({ authId: b.id }), 'connector_auth_unreadable', ['pw-A']);
  await rejectsWith(resolve({ authId: c.id, companyId: foreign.companyId, userId: foreign.admin.id }), 'connector_auth_unreadable', ['pw-A']);
  await rejectsWith(resolve({ authId: a.id }), 'connector_auth_unreadable', ['pw-A']);
  // The record itself still reads, and a credential test says what is wrong.
  assert.equal((await t.call('GET', `/v1/connector-auths/${b.id}`)).json().password_set, true);
  const tested = await t.call('POST', `/v1/connector-auths/${b.id}/test`);
  assert.equal(tested.statusCode, 200, tested.body);
  assert.equal(tested.json().ok, false);
  assert.equal(tested.json().error.code, 'credential_unreadable');
  // Writing a new password repairs it.
  await t.call('PUT', `/v1/connector-auths/${b.id}`, { body: { password: 'pw-B2' } });
  assert.equal((await resolve({ authId: b.id })).password, 'pw-B2');
});

test('key rotation re-encrypts every connector-auth secret; they still resolve; status counts them', async () => {
  const t2 = await startTestApp();
  try {
    const made = [];
    for (let i = 0; i < 3; i++) {
      made.push(await createAuth(t2, sampleBody({
        api_endpoint: `sftp://user:url-${i}@h.example.com/p`, password: `pw-${i}`, auth_token: `tok-${i}`, auth_details: `det-${i}`,
      })));
    }
    const before = await t2.ctx.keyring.status();
    const k1 = before.keys.find((k) => k.id === before.activeKeyId)!;
    assert.ok(k1.records >= 12, `status counts the 12 connector-auth ciphertexts (got ${k1.records})`);
    const r = await t2.ctx.keyring.rotate();
    assert.ok(r.reencrypted >= 12);
    assert.equal(r.skipped, 0);
    for (const [i, a] of made.entries()) {
      const row = await rawAuthRow(t2, a.id);
      for (const col of ['password_enc', 'auth_token_enc', 'auth_details_enc', 'api_endpoint_enc']) {
        assert.ok(String(row[col]).startsWith(`fg1:${r.newKeyId}:`), `${col} on the new key`);
      }
      const cred = await t2.ctx.services.connectorAuths.resolveForRun({
        companyId: t2.tenant.companyId, userId: t2.tenant.admin.id, authId: a.id, connectorId: SFTP_CONNECTOR_ID, purpose: 'after rotate',
      });
      assert.deepEqual([cred.password, cred.authToken, cred.authDetails, cred.apiEndpoint],
        [`pw-${i}`, `tok-${i}`, `det-${i}`, `sftp://user:url-${i}@h.example.com/p`]);
    }
    const after = await t2.ctx.keyring.status();
    assert.equal(after.keys.find((k) => k.id === before.activeKeyId)!.records, 0);
    assert.ok(after.keys.find((k) => k.id === r.newKeyId)!.records >= 12);
  } finally {
    await t2.close();
  }
});
