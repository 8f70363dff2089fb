import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startTestApp, problem, type TestApp } from '../support/app.ts';
import { makeTestStore } from '../support/db.ts';
import { runCli, startServer } from '../support/process.ts';
import { loadConfig, ConfigError } from '../../src/config.ts';
import { buildApp } from '../../src/app.ts';

let t: TestApp;
before(async () => { t = await startTestApp(); });
after(async () => { await t.close(); });

test('healthz and readyz', async () => {
  assert.equal((await t.app.inject({ url: '/healthz' })).statusCode, 200);
  assert.equal((await t.app.inject({ url: '/readyz' })).json().status, 'ready');
});

test('readyz answers 503 when the database is gone', async () => {
  const x = await startTestApp();
  await x.ctx.database.close();
  const res = await x.app.inject({ url: '/readyz' });
  assert.equal(res.statusCode, 503);
  await x.app.close();
  await x.store.destroy();
});

test('metrics in Prometheus format, by route pattern (ids do not leak into labels)', async () => {
  await t.call('GET', `/v1/users/${t.tenant.admin.id}`);
  const res = await t.app.inject({ url: '/metrics' });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /text\/plain/);
  assert.match(res.body, /flowgate_http_requests_total\{method="GET",route="\/v1\/users\/:id",status="200"\} \d+/);
  assert.match(res.body, /flowgate_http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/v1\/users\/:id"\}/);
  assert.ok(!res.body.includes(t.tenant.admin.id));
});

test('OpenAPI 3.1 generated from route schemas; /docs serves the reference', async () => {
  const doc = (await t.app.inject({ url: '/openapi.json' })).json();
  assert.equal(doc.openapi, '3.1.0');
  for (const p of ['/v1/personal-access-tokens', '/v1/personal-access-tokens/{id}/regenerate', '/v1/users/{id}', '/v1/teams']) {
    assert.ok(doc.paths[p], `path ${p} documented`);
  }
  const create = doc.paths['/v1/personal-access-tokens'].post;
  assert.deepEqual(Object.keys(create.requestBody.content['application/json'].schema.properties).sort(), ['expiration', 'note', 'scopes']);
  assert.ok(create.responses['201']);
  const docs = await t.app.inject({ url: '/docs/' });
  assert.equal(docs.statusCode, 200);
  assert.match(docs.body, /<html/i);
});

test('a /v1 route without an entity stops the app from starting', async () => {
  const app = await buildApp(t.ctx);
  assert.throws(() => app.get('/v1/sneaky', async () => ({ ok: true })), /declares no entity/);
  await app.close();
});

test('unknown routes and methods answer problem+json', async () => {
  problem(await t.call('GET', '/v1/nothing-here'), 404, 'route_not_found');
  problem(await t.call('PATCH', '/v1/users'), 404, 'route_not_found');
});

test('request id on every log line and response; Authorization and tokens never logged', async () => {
  const before = t.logs.length;
  const res = await t.app.inject({ url: `/v1/users?access_token=${t.tenant.token}`, headers: { 'x-request-id': 'abc-123' } });
  assert.equal(res.headers['x-request-id'], 'abc-123');
  await t.call('GET', '/v1/users', { headers: { 'x-request-id': 'abc-456' } });
  const lines = t.logs.slice(before).map((l) => JSON.parse(l));
  assert.ok(lines.length >= 4);
  for (const l of lines) if (l.req || l.res) assert.ok(l.request_id, JSON.stringify(l));
  const all = t.logs.join('\n');
  assert.ok(!all.includes(t.tenant.token), 'token value never logged');
  assert.ok(!all.includes(t.tenant.token.slice(4, 20)));
  const bad = await t.app.inject({ url: '/v1/users', headers: { 'x-request-id': 'bad id with spaces' } });
  assert.match(String(bad.headers['x-request-id']), /^[0-9a-f-]{36}$/);
});

test('configuration: a bad value names the variable', () => {
  const bad: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: 'eighty' }, /^PORT/],
    [{ PORT: '70000' }, /^PORT/],
    [{ FLOWGATE_BASE_URL: 'ftp://x' }, /^FLOWGATE_BASE_URL/],
    [{ DATABASE_URL: 'mysql://x' }, /^DATABASE_URL/],
    [{ FLOWGATE_LOG_LEVEL: 'loud' }, /^FLOWGATE_LOG_LEVEL/],
    [{ FLOWGATE_PAT_MAX_DAYS: '0' }, /^FLOWGATE_PAT_MAX_DAYS/],
    [{ FLOWGATE_ENCRYPTION_KEY: 'c2hvcnQ=' }, /^FLOWGATE_ENCRYPTION_KEY/],
    [{ FLOWGATE_ADMIN_EMAIL: 'nope' }, /^FLOWGATE_ADMIN_EMAIL/],
  ];
  for (const [env, re] of bad) assert.throws(() => loadConfig(env), (e: unknown) => e instanceof ConfigError && re.test((e as Error).message), JSON.stringify(env));
  const c = loadConfig({});
  assert.equal(c.port, 8080);
  assert.equal(c.host, '127.0.0.1');
  assert.equal(c.baseUrl, 'http://localhost:8080');
  assert.equal(c.patMaxDays, null);
  assert.equal(loadConfig({ PORT: '9000' }).baseUrl, 'http://localhost:9000');
});

test('first start bootstraps once; second start prints nothing new; SIGTERM exits 0', async () => {
  const store = makeTestStore();
  try {
    const s1 = await startServer(store, { FLOWGATE_ADMIN_EMAIL: 'root@boot.test' });
    const pwFile = path.join(store.dataDir, 'initial-admin-password');
    const password = fs.readFileSync(pwFile, 'utf8').trim();
    assert.equal(fs.statSync(pwFile).mode & 0o777, 0o600);
    assert.ok(s1.output().includes(password), 'password printed once to stdout');
    const logLines = s1.output().split('\n').filter((l) => l.startsWith('{'));
    assert.ok(!logLines.some((l) => l.includes(password)), 'not in any log line');
    const health = await fetch(`http://127.0.0.1:${s1.port}/healthz`);
    assert.equal(health.status, 200);
    assert.equal(await s1.stop('SIGTERM'), 0);
    const s2 = await startServer(store, { FLOWGATE_ADMIN_EMAIL: 'root@boot.test' });
    assert.ok(!s2.output().includes('initial admin password'));
    assert.equal(fs.readFileSync(pwFile, 'utf8').trim(), password, 'unchanged');
    assert.equal((await fetch(`http://127.0.0.1:${s2.port}/readyz`)).status, 200);
    assert.equal(await s2.stop('SIGTERM'), 0);
    assert.match(s2.output(), /shutting down/);
  } finally {
    await store.destroy();
  }
});

test('CLI: companies, users, tokens with --json; errors on stderr, exit 1, no stack trace', async () => {
  const store = makeTestStore();
  try {
    let r = runCli(store, ['--json', 'migrate']);
    assert.equal(r.code, 0, r.stderr);
    r = runCli(store, ['--json', 'companies', 'create', '--name', 'Acme']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).name, 'Acme');
    r = runCli(store, ['--json', 'users', 'create', '--email', 'bot@acme.test', '--name', 'Bot', '--company', 'Acme', '--role', 'admin']);
    assert.equal(r.code, 0, r.stderr);
    r = runCli(store, ['--json', 'tokens', 'create', '--email', 'bot@acme.test', '--scopes', 'connector_auth,automation:view', '--expiration', '30', '--note', 'ci bot']);
    assert.equal(r.code, 0, r.stderr);
    const tok = JSON.parse(r.stdout);
    assert.match(tok.token, /^fgp_/);
    r = runCli(store, ['--json', 'tokens', 'list', '--email', 'bot@acme.test']);
    const list = JSON.parse(r.stdout);
    assert.equal(list.length, 1);
    assert.ok(!r.stdout.includes(tok.token));
    r = runCli(store, ['tokens', 'revoke', '--id', tok.id]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(runCli(store, ['--json', 'tokens', 'list', '--email', 'bot@acme.test']).stdout)[0].state, 'revoked');
    for (const args of [
      ['tokens', 'create', '--email', 'bot@acme.test', '--scopes', 'root', '--expiration', 'never'],
      ['tokens', 'create', '--email', 'ghost@acme.test', '--scopes', 'company', '--expiration', 'never'],
      ['tokens', 'create', '--email', 'bot@acme.test', '--scopes', 'company', '--expiration', 'soon'],
      ['users', 'create', '--email', 'x@acme.test', '--name', 'X', '--company', 'Nope'],
      ['companies', 'create', '--name', 'Acme'],
      ['tokens', 'revoke', '--id', 'nope'],
    ]) {
      const e = runCli(store, args);
      assert.equal(e.code, 1, args.join(' '));
      assert.match(e.stderr, /^flowgate: /, args.join(' '));
      assert.ok(!/\n\s+at /.test(e.stderr), 'no stack trace: ' + e.stderr);
    }
    const h = runCli(store, ['tokens', '--help']);
    assert.equal(h.code, 0);
    assert.match(h.stdout, /create/);
    const badEnv = runCli(store, ['migrate'], { PORT: 'x' });
    assert.equal(badEnv.code, 1);
    assert.match(badEnv.stderr, /PORT must be/);
  } finally {
    await store.destroy();
  }
});
