// Canary secrets: unique values planted in every secret field (password, auth_token,
// auth_details, the password inside api_endpoint), on create and on update, then every output
// is searched for them: response bodies and headers (successes and errors), the app's log
// lines, the audit log, the credential-test answers, and the raw database (SQLite: the db file
// and its -wal file; PostgreSQL: every row of every table of the test schema as text).
// Positive controls prove each scanner finds a value that is really there.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import crypto from 'node:crypto';
import pg from 'pg';
import { sql } from 'kysely';
import { startTestApp, type TestApp } from '../support/app.ts';
import { startHttpServer, startSftpServer, type TestHttpServer, type TestServer } from '../support/servers.ts';
import { tempDir } from '../connectors/_helpers.ts';
import { HTTP_CONNECTOR_ID, SFTP_CONNECTOR_ID, FLOWGATE_CONNECTOR_ID } from '../../src/modules/connectors/catalogue.ts';
import { TEST_DB, TEST_PG_URL } from '../support/db.ts';

const tag = crypto.randomBytes(6).toString('hex');
const C = {
  password: `CANARYpw${tag}`,
  token: `CANARYtok${tag}`,
  details: `CANARYdet${tag}`,
  urlPass: `CANARYurl${tag}`,
  newPassword: `CANARYnewpw${tag}`,
  newUrlPass: `CANARYnewurl${tag}`,
  errorBody: `CANARYerr${tag}`,
  sftpPass: `CANARYsftp${tag}`,
};
const ALL = Object.values(C);
/** A marker stored in clear (the name): what the scanners must find, to prove they work. */
const CLEAR_MARKER = `CLEARmarker${tag}`;

let t: TestApp;
let http: TestHttpServer;
let sftp: TestServer;
let sftpRoot: { dir: string; remove(): void };
const outputs: string[] = [];

async function call(m: string, url: string, body?: unknown) {
  const res = await t.call(m, url, body !== undefined ? { body } : {});
  outputs.push(res.body, JSON.stringify(res.headers));
  return res;
}

function forms(s: string): string[] {
  // As is, URL-encoded, and inside Basic credentials.
  return [s, encodeURIComponent(s), Buffer.from(s).toString('base64'), Buffer.from(`u:${s}`).toString('base64').slice(4)];
}

function assertClean(text: string, where: string) {
  for (const c of ALL) for (const f of forms(c)) assert.ok(!text.includes(f), `${where} contains a canary (${c.slice(0, 12)}…)`);
}

before(async () => {
  t = await startTestApp();
  sftpRoot = tempDir('fg-canary-sftp-');
  sftp = await startSftpServer({ username: 'sftpuser', password: C.sftpPass, root: sftpRoot.dir });
  // An HTTP server that rejects and echoes the Authorization header back in its body.
  http = await startHttpServer((req, res) => {
    res.writeHead(401, { 'content-type': 'application/json', 'x-echo': String(req.headers.authorization ?? '') });
    res.end(JSON.stringify({ seen: req.headers.authorization, hint: C.errorBody }));
  });
});
after(async () => {
  await t.close();
  await http.close();
  await sftp.close();
  sftpRoot.remove();
});

test('canaries never leave: responses, errors, logs, audit events, database', async () => {
  // --- create, with a canary in every secret field
  const created = await call('POST', '/v1/connector-auths', {
    connector_id: HTTP_CONNECTOR_ID, name: CLEAR_MARKER, auth_type: 'basic_auth',
    auth_token: C.token, auth_details: JSON.stringify({ refresh_token: C.details, note: 'x' }),
    api_endpoint: `http://user:${C.urlPass}@127.0.0.1:${http.port}/api`, user_input: { region: 'eu' },
    username: 'user', password: C.password, tags: ['canary'],
  });
  assert.equal(created.statusCode, 201, created.body);
  const id = created.json().id;
  assert.equal(created.json().api_endpoint, `http://user:***@127.0.0.1:${http.port}/api`);
  const sftpAuth = await call('POST', '/v1/connector-auths', {
    connector_id: SFTP_CONNECTOR_ID, name: 'sftp canary', auth_type: 'username_password', auth_token: '', auth_details: '',
    api_endpoint: `sftp://sftpuser:${C.sftpPass}@127.0.0.1:${sftp.port}/`, user_input: {}, username: '', password: '', tags: [],
  });
  assert.equal(sftpAuth.statusCode, 201, sftpAuth.body);

  // --- reads
  await call('GET', `/v1/connector-auths/${id}`);
  await call('GET', '/v1/connector-auths?limit=200');
  await call('GET', `/v1/connector-auths?filter=name,eq,%22${CLEAR_MARKER}%22`);

  // --- credential tests: the HTTP server answers 401 and echoes the credentials; SFTP succeeds, then fails
  const tested = await call('POST', `/v1/connector-auths/${id}/test`);
  assert.equal(tested.statusCode, 200, tested.body);
  assert.equal(tested.json().ok, false);
  assert.equal(tested.json().error.code, 'authentication_failed');
  assert.ok(http.requests.length >= 1 && String(http.requests[0].headers.authorization).startsWith('Basic '), 'the secret was really used');
  const sftpOk = await call('POST', `/v1/connector-auths/${sftpAuth.json().id}/test`);
  assert.equal(sftpOk.json().ok, true, sftpOk.body);

  // --- updates, with new canaries
  assert.equal((await call('PUT', `/v1/connector-auths/${id}`, { password: C.newPassword })).statusCode, 200);
  assert.equal((await call('PUT', `/v1/connector-auths/${id}`, { api_endpoint: `http://user:${C.newUrlPass}@127.0.0.1:${http.port}/api` })).statusCode, 200);
  await call('PUT', `/v1/connector-auths/${id}/permissions`, { visibility: 'restricted', grants: [] });
  await call('POST', `/v1/connector-auths/${id}/test`);

  // --- errors with canaries in the request
  const errors = [
    await call('POST', '/v1/connector-auths', { connector_id: HTTP_CONNECTOR_ID, name: '', auth_type: 'basic_auth', password: C.password, auth_token: C.token }),
    await call('POST', '/v1/connector-auths', { connector_id: HTTP_CONNECTOR_ID, name: 'x', auth_type: 'basic_auth', api_endpoint: `not a url ${C.urlPass}`, password: C.password }),
    await call('POST', '/v1/connector-auths', { connector_id: HTTP_CONNECTOR_ID, name: 'x', auth_type: 'basic_auth', password: 5, auth_details: C.details }),
    await call('PUT', `/v1/connector-auths/${id}`, { auth_token: C.token, password: C.password }),
    await call('PUT', `/v1/connector-auths/${id}`, { api_endpoint: `ftp://u:${C.urlPass}@h.example.com/`, password: C.newPassword }),
    await call('POST', '/v1/connector-auths', { connector_id: HTTP_CONNECTOR_ID, name: 'x', auth_type: 'basic_auth', api_endpoint: `http://u:${C.urlPass}@h.example.com`, password: 'x'.repeat(5000) }),
  ];
  const raw = await t.app.inject({ method: 'POST', url: '/v1/connector-auths', payload: `{"password": "${C.password}", `, headers: { authorization: `Bearer ${t.tenant.token}`, 'content-type': 'application/json' } });
  outputs.push(raw.body);
  for (const e of [...errors, raw]) assert.equal(e.statusCode, 400, e.body);

  // --- the secrets are really stored (positive control): resolveForRun hands them to the flow engine
  const r = await t.ctx.services.connectorAuths.resolveForRun({
    companyId: t.tenant.companyId, userId: t.tenant.admin.id, authId: id, connectorId: HTTP_CONNECTOR_ID, purpose: 'flow_run:canary',
  });
  assert.equal(r.password, C.newPassword);
  assert.equal(r.authToken, C.token);
  assert.ok(r.apiEndpoint?.includes(C.newUrlPass));
  for (const s of [C.newPassword, C.token, C.newUrlPass]) assert.ok(r.secrets.includes(s), 'secrets lists every secret');
  assert.ok(r.secrets.some((s) => s.includes(C.details)), 'auth_details is in secrets');

  // --- scan: responses
  for (const [i, o] of outputs.entries()) assertClean(o, `response #${i}`);
  assert.ok(outputs.some((o) => o.includes(CLEAR_MARKER)), 'control: responses carry the clear marker');

  // --- scan: audit events (every page)
  const events: unknown[] = [];
  let cursor: string | null = null;
  do {
    const page: any = (await t.call('GET', `/v1/audit-events?limit=200${cursor ? `&cursor=${cursor}` : ''}`)).json();
    events.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor);
  const auditText = JSON.stringify(events);
  assertClean(auditText, 'audit events');
  const actions = new Set((events as any[]).map((e) => e.action));
  for (const a of ['connector_auth.created', 'connector_auth.updated', 'connector_auth.tested', 'connector_auth.decrypted', 'connector_auth.permissions_changed']) {
    assert.ok(actions.has(a), `audit has ${a}`);
  }
  assert.ok((events as any[]).some((e) => e.action === 'connector_auth.decrypted' && e.details.purpose === 'flow_run:canary'));

  // --- scan: log lines
  const logText = t.logs.join('');
  assert.ok(logText.length > 0 && logText.includes('/v1/connector-auths'), 'control: the logs saw the requests');
  assertClean(logText, 'logs');

  // --- scan: the database itself
  const dbText = await databaseText(t);
  assert.ok(dbText.includes(CLEAR_MARKER), 'control: the database scan finds a value stored in clear');
  assertClean(dbText, 'database');
});

/** Everything the database holds, as text. */
async function databaseText(app: TestApp): Promise<string> {
  if (TEST_DB === 'sqlite') {
    const file = app.ctx.database.file!;
    const parts: string[] = [];
    for (const f of [file, `${file}-wal`]) if (fs.existsSync(f)) parts.push(fs.readFileSync(f).toString('latin1'));
    // The canaries are ASCII, so latin1 keeps them byte for byte; also read after a checkpoint.
    await sql`pragma wal_checkpoint(truncate)`.execute(app.ctx.database.db);
    parts.push(fs.readFileSync(file).toString('latin1'));
    assert.ok(parts.join('').length > 10_000, 'control: the files were read');
    return parts.join('\n');
  }
  const schema = app.store.pgSchema!;
  const c = new pg.Client({ connectionString: TEST_PG_URL });
  await c.connect();
  try {
    const tables = (await c.query('select table_name from information_schema.tables where table_schema = $1', [schema])).rows.map((r) => r.table_name as string);
    assert.ok(tables.includes('connector_auths') && tables.includes('audit_events'), 'control: the schema holds the tables');
    const out: string[] = [];
    for (const table of tables) {
      const rows = await c.query(`select t::text as row from "${schema}"."${table}" t`);
      for (const r of rows.rows) out.push(r.row);
    }
    return out.join('\n');
  } finally {
    await c.end();
  }
}

test('the flowgate connector: e-mail and PAT stored as basic_auth, PAT never shown', async () => {
  const pat = `fgp_${C.password}`;
  const res = await call('POST', '/v1/connector-auths', {
    connector_id: FLOWGATE_CONNECTOR_ID, name: 'self', auth_type: 'basic_auth', username: t.tenant.admin.email, password: pat,
  });
  assert.equal(res.statusCode, 201, res.body);
  assertClean(res.body, 'flowgate connector response');
  const r = await t.ctx.services.connectorAuths.resolveForRun({
    companyId: t.tenant.companyId, userId: t.tenant.admin.id, authId: res.json().id, connectorId: FLOWGATE_CONNECTOR_ID, purpose: 'test',
  });
  assert.equal(r.apiEndpoint, t.config.baseUrl);
  assert.equal(r.username, t.tenant.admin.email);
  assert.equal(r.password, pat);
});
