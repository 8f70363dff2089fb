// Canary secrets (connector-auth passwords and tokens, a secret env variable) go through flow
// runs that do their best to leak them: an HTTP echo server sends the credentials back, inputs
// carry the env secret (raw and base64), a failing server quotes it in its error. None may
// appear in a response, a log line, a run or step record, or the database's contents; the
// records show *** where they were.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startTestApp, type TestApp } from '../support/app.ts';
import { startHttpServer, type TestHttpServer } from '../support/servers.ts';
import { HTTP_CONNECTOR_ID, SFTP_CONNECTOR_ID } from '../../src/modules/connectors/catalogue.ts';
import { createAuth, createFlow, dumpDatabase, fileServer, steps, waitRun, webhook, worker } from './_helpers.ts';

const CANARY_PASSWORD = 'canary-sftp-Pw-5f1e9a7c';
const CANARY_TOKEN = 'canary-api-TOKEN-0b2c4d6e';
const CANARY_ENV = 'canary-env-SECRET-9d8c7b6a';
const CANARIES = [CANARY_PASSWORD, CANARY_TOKEN, CANARY_ENV];
const forms = (s: string) => [s, Buffer.from(s).toString('base64'), encodeURIComponent(s)];

let t: TestApp;
let echo: TestHttpServer;
let failing: TestHttpServer;
const responses: string[] = [];
const closers: Array<() => Promise<void>> = [];

before(async () => {
  t = await startTestApp();
  worker(t);
  echo = await startHttpServer();
  failing = await startHttpServer((req, res) => {
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: `bad credential ${req.headers.authorization} and ${req.body}` }));
  });
  closers.push(echo.close, failing.close);
});
after(async () => {
  for (const c of closers) await c();
  await t.close();
});

function assertNoCanary(where: string, text: string) {
  for (const c of CANARIES) for (const f of forms(c)) assert.ok(!text.includes(f), `${where} contains a canary (${c} as ${f})`);
}

async function call(method: string, url: string, body?: unknown) {
  const res = await t.call(method, url, body !== undefined ? { body } : {});
  responses.push(res.body);
  return res;
}

test('canary secrets never leave flowgate\'s vault through a run', async () => {
  const env = await call('POST', '/v1/env-variables', { name: 'CANARY', value: CANARY_ENV, secret: true });
  assert.equal(env.statusCode, 201);
  assert.equal(env.json().value, null);
  assert.equal(env.json().value_set, true);

  const apiAuth = await createAuth(t, { connector_id: HTTP_CONNECTOR_ID, auth_type: 'api_key', auth_token: CANARY_TOKEN, api_endpoint: echo.url });
  const failAuth = await createAuth(t, { connector_id: HTTP_CONNECTOR_ID, auth_type: 'basic_auth', username: 'u', password: CANARY_PASSWORD, api_endpoint: failing.url });
  const sftp = await fileServer('sftp', 'sam', CANARY_PASSWORD);
  closers.push(sftp.close);
  const sftpAuth = await createAuth(t, {
    connector_id: SFTP_CONNECTOR_ID, auth_type: 'username_password', username: 'sam', password: CANARY_PASSWORD,
    api_endpoint: `sftp://sam:${encodeURIComponent(CANARY_PASSWORD)}@127.0.0.1:${sftp.port}/`,
  });

  const flow = await createFlow(t, {
    steps: [
      { name: 'upload', connector_id: SFTP_CONNECTOR_ID, action: 'upload_file', connector_auth_id: '{{ request.query.sftp }}', input: { path: 'secret.txt', content: '{{ env.CANARY }}' } },
      {
        name: 'echo', connector_id: HTTP_CONNECTOR_ID, action: 'request', connector_auth_id: '{{ request.query.api }}',
        input: { method: 'POST', url: '/echo', headers: { 'x-env': '{{ env.CANARY }}' }, body: { env: '{{ env.CANARY }}', b64: '{{ env.CANARY | b64encode }}', prev: '{{ steps.upload.output }}' } },
      },
      { name: 'fail', connector_id: HTTP_CONNECTOR_ID, action: 'request', connector_auth_id: failAuth, input: { method: 'POST', url: '/', body: '{{ env.CANARY }}' } },
      { name: 'missing', connector_id: SFTP_CONNECTOR_ID, action: 'download_file', connector_auth_id: '{{ request.query.sftp }}', input: { path: 'no-such-{{ env.CANARY }}.txt' } },
    ],
  });
  const res = await webhook(t, flow.id, { token: flow.webhook_token, query: { sftp: sftpAuth, api: apiAuth }, body: { hello: 'world' } });
  responses.push(res.body);
  const run = await waitRun(t, res.json().run_id);
  responses.push(JSON.stringify(run));
  assert.equal(run.status, 'error');
  assert.equal(run.error.step, 'missing');
  assert.match(run.error.message, /\*\*\*/, 'the error quoted the secret, scrubbed');

  // The secret really went where it was meant to go (so the test would see a leak)...
  assert.equal(fs.readFileSync(path.join(sftp.root, 'secret.txt'), 'utf8'), CANARY_ENV);
  assert.equal(echo.requests[0].headers.authorization, `Bearer ${CANARY_TOKEN}`);
  assert.equal(JSON.parse(echo.requests[0].body).env, CANARY_ENV);
  assert.match(failing.requests[0].body, new RegExp(CANARY_ENV));

  // ...and the records show *** instead.
  const s = await steps(t, run.id);
  responses.push(JSON.stringify(s));
  assert.equal(s[0].input.content, '***');
  assert.equal(s[1].input.body.env, '***');
  assert.equal(s[1].input.body.b64, '***');
  assert.match(s[1].output.body.headers.authorization, /^(Bearer )?\*\*\*$/);
  assert.equal(s[1].output.body.headers['x-env'], '***');
  assert.equal(s[2].input.body, '***');
  assert.equal(s[2].output.status, 500);
  assert.match(s[2].output.body.error, /bad credential (Basic )?\*\*\* and \*\*\*/);
  assert.equal(s[3].status, 'error');
  assert.equal(s[3].input.path, 'no-such-***.txt');
  assert.match(s[3].error.message, /\*\*\*/);

  for (const url of ['/v1/flow-runs', `/v1/flow-runs/${run.id}`, `/v1/flow-runs/${run.id}/steps`, '/v1/env-variables', `/v1/env-variables/${env.json().id}`,
    `/v1/connector-auths/${sftpAuth}`, '/v1/connector-auths', `/v1/flows/${flow.id}`, '/v1/audit-events?limit=200']) {
    await call('GET', url);
  }
  // A run waited for with Prefer: wait returns the run itself.
  const waited = await webhook(t, flow.id, { token: flow.webhook_token, query: { sftp: sftpAuth, api: apiAuth }, headers: { prefer: 'wait=20' } });
  assert.equal(waited.statusCode, 200);
  responses.push(waited.body);

  assertNoCanary('a response', responses.join('\n'));
  assertNoCanary('the log', t.logs.join(''));
  assertNoCanary('the database', await dumpDatabase(t));
});
