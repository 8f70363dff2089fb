// POST /v1/connector-auths/{id}/test against real local servers (SFTP with ssh2, FTP with
// ftp-srv, HTTP with node:http) started here: success, wrong credentials, refused port; the
// record keeps last_checked_at / last_check_ok; the answer never carries a secret.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startTestApp, problem, type TestApp } from '../support/app.ts';
import { startFtpServer, startHttpServer, startSftpServer, type TestHttpServer, type TestServer } from '../support/servers.ts';
import { closedPort, startSilentServer, tempDir } from '../connectors/_helpers.ts';
import { ConnectorAuthsService } from '../../src/modules/connector-auths/service.ts';
import { ConnectorAuthsStore } from '../../src/modules/connector-auths/store.ts';
import { createAuth } from './_helpers.ts';
import { FTP_CONNECTOR_ID, HTTP_CONNECTOR_ID, SFTP_CONNECTOR_ID } from '../../src/modules/connectors/catalogue.ts';

const USER = 'fileuser';
const PASS = 'right-Pa55word';
const WRONG = 'wrong-Pa55word';
const TOKEN = 'api-token-123456';

let t: TestApp;
let root: { dir: string; remove(): void };
let sftp: TestServer;
let ftp: TestServer;
let http: TestHttpServer;
let refused: number;

before(async () => {
  t = await startTestApp();
  root = tempDir('fg-credtest-');
  fs.mkdirSync(path.join(root.dir, 'inbox'));
  fs.writeFileSync(path.join(root.dir, 'inbox', 'a.txt'), 'hello');
  sftp = await startSftpServer({ username: USER, password: PASS, root: root.dir });
  ftp = await startFtpServer({ username: USER, password: PASS, root: root.dir });
  http = await startHttpServer((req, res) => {
    const good = req.headers.authorization === 'Basic ' + Buffer.from(`${USER}:${PASS}`).toString('base64') ||
      req.headers.authorization === `Bearer ${TOKEN}`;
    res.writeHead(good ? 200 : 401, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ok: good, you_sent: req.headers.authorization ?? null }));
  });
  refused = await closedPort();
});
after(async () => {
  await t.close();
  await sftp.close();
  await ftp.close();
  await http.close();
  root.remove();
});

async function runTest(id: string) {
  const res = await t.call('POST', `/v1/connector-auths/${id}/test`);
  assert.equal(res.statusCode, 200, res.body);
  for (const s of [PASS, WRONG, TOKEN, Buffer.from(`${USER}:${WRONG}`).toString('base64')]) assert.ok(!res.body.includes(s), `no secret in ${res.body}`);
  const body = res.json();
  assert.deepEqual(Object.keys(body).sort(), ['checked_at', 'error', 'ok']);
  const rec = (await t.call('GET', `/v1/connector-auths/${id}`)).json();
  assert.equal(rec.last_checked_at, body.checked_at);
  assert.equal(rec.last_check_ok, body.ok);
  return body;
}

const file = (connector_id: string, scheme: string, port: number, password: string, over: Record<string, unknown> = {}) => createAuth(t, {
  connector_id, name: `${scheme} ${port}`, auth_type: 'username_password', api_endpoint: `${scheme}://127.0.0.1:${port}/inbox`,
  username: USER, password, ...over,
});

for (const [label, connectorId, scheme, server] of [
  ['SFTP', SFTP_CONNECTOR_ID, 'sftp', () => sftp], ['FTP', FTP_CONNECTOR_ID, 'ftp', () => ftp],
] as const) {
  test(`${label}: ok with the right password, authentication_failed with a wrong one, refused on a closed port`, async () => {
    const good = await file(connectorId, scheme, server().port, PASS);
    const r1 = await runTest(good.id);
    assert.equal(r1.ok, true, JSON.stringify(r1));
    assert.equal(r1.error, null);

    const bad = await file(connectorId, scheme, server().port, WRONG);
    const r2 = await runTest(bad.id);
    assert.equal(r2.ok, false);
    assert.equal(r2.error.code, 'authentication_failed', JSON.stringify(r2));

    // The password only in the URL user-info works as well.
    const inUrl = await file(connectorId, scheme, server().port, '', { api_endpoint: `${scheme}://${USER}:${encodeURIComponent(PASS)}@127.0.0.1:${server().port}/inbox`, username: '' });
    assert.equal((await runTest(inUrl.id)).ok, true);

    const closed = await file(connectorId, scheme, refused, PASS);
    const r3 = await runTest(closed.id);
    assert.equal(r3.ok, false);
    assert.equal(r3.error.code, 'refused', JSON.stringify(r3));

    const missingDir = await file(connectorId, scheme, server().port, PASS, { api_endpoint: `${scheme}://127.0.0.1:${server().port}/nope` });
    const r4 = await runTest(missingDir.id);
    assert.equal(r4.ok, false);
    assert.equal(r4.error.code, 'not_found', JSON.stringify(r4));
  });
}

test('HTTP: basic_auth and api_key succeed, a wrong password fails with 401 named, a closed port is refused', async () => {
  const basic = await createAuth(t, { connector_id: HTTP_CONNECTOR_ID, name: 'h1', auth_type: 'basic_auth', api_endpoint: `${http.url}/v1`, username: USER, password: PASS });
  assert.equal((await runTest(basic.id)).ok, true);
  assert.equal(http.requests.at(-1)?.url, '/v1');
  const key = await createAuth(t, { connector_id: HTTP_CONNECTOR_ID, name: 'h2', auth_type: 'api_key', api_endpoint: http.url, auth_token: TOKEN });
  assert.equal((await runTest(key.id)).ok, true);
  assert.equal(http.requests.at(-1)?.headers.authorization, `Bearer ${TOKEN}`);
  const wrong = await createAuth(t, { connector_id: HTTP_CONNECTOR_ID, name: 'h3', auth_type: 'basic_auth', api_endpoint: http.url, username: USER, password: WRONG });
  const r = await runTest(wrong.id);
  assert.equal(r.ok, false);
  assert.equal(r.error.code, 'authentication_failed');
  assert.match(r.error.message, /401/);
  const closed = await createAuth(t, { connector_id: HTTP_CONNECTOR_ID, name: 'h4', auth_type: 'none', api_endpoint: `http://127.0.0.1:${refused}/` });
  const rc = await runTest(closed.id);
  assert.equal(rc.ok, false);
  assert.equal(rc.error.code, 'refused');
});

test('a last failure overwrites an earlier success; the test is audited without secrets', async () => {
  const a = await createAuth(t, { connector_id: HTTP_CONNECTOR_ID, name: 'flip', auth_type: 'basic_auth', api_endpoint: http.url, username: USER, password: PASS });
  assert.equal((await runTest(a.id)).ok, true);
  await t.call('PUT', `/v1/connector-auths/${a.id}`, { body: { password: WRONG } });
  assert.equal((await runTest(a.id)).ok, false);
  const ev = (await t.call('GET', `/v1/audit-events?filter=target_id,eq,%22${a.id}%22&limit=200`)).json().data;
  const tested = ev.filter((e: any) => e.action === 'connector_auth.tested');
  assert.deepEqual(tested.map((e: any) => [e.details.ok, e.details.error_code]), [[true, null], [false, 'authentication_failed']]);
  const decrypted = ev.filter((e: any) => e.action === 'connector_auth.decrypted');
  assert.deepEqual(decrypted.map((e: any) => e.details.purpose), ['credential_test', 'credential_test']);
  assert.ok(!JSON.stringify(ev).includes(PASS) && !JSON.stringify(ev).includes(WRONG));
});

test('a connector without a runtime is not testable: 409 not_testable', async () => {
  const c = (await t.call('POST', '/v1/connectors', { body: { name: 'No runtime', auth_types: ['api_key'] } })).json();
  const a = await createAuth(t, { connector_id: c.id, name: 'nr', auth_type: 'api_key', auth_token: TOKEN });
  problem(await t.call('POST', `/v1/connector-auths/${a.id}/test`), 409, 'not_testable');
  assert.equal((await t.call('GET', `/v1/connector-auths/${a.id}`)).json().last_checked_at, null);
});

test('a server that never answers: ok false with timeout, after the configured deadline', async () => {
  const silent = await startSilentServer();
  try {
    const s = t.ctx.services;
    // The same wiring as the module, with a short deadline.
    const svc = new ConnectorAuthsService(
      { store: new ConnectorAuthsStore(t.ctx.database.db), connectors: s.connectors, identity: s.identity, keyring: t.ctx.keyring, audit: s.audit },
      { baseUrl: t.config.baseUrl, testTimeoutMs: 300 },
    );
    const admin = (await s.identity.userById(t.tenant.companyId, t.tenant.admin.id))!;
    const actor = { principal: { kind: 'pat' as const, userId: admin.id, companyId: admin.company_id, email: admin.email, role: admin.role, scopes: null, credentialId: null, credentialExpiresAt: null }, ip: null, requestId: null };
    for (const [connectorId, scheme] of [[SFTP_CONNECTOR_ID, 'sftp'], [FTP_CONNECTOR_ID, 'ftp'], [HTTP_CONNECTOR_ID, 'http']] as const) {
      const a = await createAuth(t, {
        connector_id: connectorId, name: `silent ${scheme}`, auth_type: connectorId === HTTP_CONNECTOR_ID ? 'basic_auth' : 'username_password',
        api_endpoint: `${scheme}://127.0.0.1:${silent.port}/`, username: USER, password: PASS,
      });
      const started = Date.now();
      const r = await svc.test(actor, a.id);
      assert.equal(r.ok, false);
      assert.equal(r.error?.code, 'timeout', `${scheme}: ${JSON.stringify(r)}`);
      assert.ok(Date.now() - started < 5_000, `${scheme} gave up in time`);
      assert.ok(!JSON.stringify(r).includes(PASS));
    }
  } finally {
    await silent.close();
  }
});
