// The white-label scenario of seed section 1, end to end: two customers, each with a connector
// auth for their own server, one flow whose step takes the connector auth id from the query
// string, two webhook calls, and each file lands on its own customer's server and nowhere else.
// SFTP, FTP and HTTP, with real local servers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startTestApp, type TestApp } from '../support/app.ts';
import { startHttpServer } from '../support/servers.ts';
import { FTP_CONNECTOR_ID, HTTP_CONNECTOR_ID, SFTP_CONNECTOR_ID } from '../../src/modules/connectors/catalogue.ts';
import { createAuth, createFlow, fileServer, filesUnder, steps, waitRun, webhook, worker, ZERO_UUID } from './_helpers.ts';

let t: TestApp;
const closers: Array<() => Promise<void>> = [];

before(async () => {
  t = await startTestApp();
  worker(t);
});
after(async () => {
  for (const c of closers) await c();
  await t.close();
});

async function customers(kind: 'sftp' | 'ftp') {
  const a = await fileServer(kind, 'alice', 'alice-pw-1');
  const b = await fileServer(kind, 'bob', 'bob-pw-2');
  closers.push(a.close, b.close);
  fs.mkdirSync(path.join(a.root, 'inbox'));
  fs.mkdirSync(path.join(b.root, 'inbox'));
  const connector = kind === 'sftp' ? SFTP_CONNECTOR_ID : FTP_CONNECTOR_ID;
  const authA = await createAuth(t, {
    connector_id: connector, name: 'Customer A', auth_type: 'username_password', username: 'alice', password: 'alice-pw-1',
    api_endpoint: `${kind}://127.0.0.1:${a.port}/inbox`, auth_token: '', auth_details: '', user_input: {}, tags: ['customer-a'],
  });
  // Customer B keeps the password in the endpoint URL, as the seed's sample does.
  const authB = await createAuth(t, {
    connector_id: connector, name: 'Customer B', auth_type: 'username_password', username: 'bob', password: 'bob-pw-2',
    api_endpoint: `${kind}://bob:bob-pw-2@127.0.0.1:${b.port}/inbox`,
  });
  return { a, b, authA, authB, connector };
}

for (const kind of ['sftp', 'ftp'] as const) {
  test(`${kind}: one flow, two customers, each file on its own customer's server only`, async () => {
    const { a, b, authA, authB, connector } = await customers(kind);
    const flow = await createFlow(t, {
      name: `White-label ${kind}`,
      steps: [{
        name: 'upload', connector_id: connector, action: 'upload_file',
        connector_auth_id: '{{ request.query.customer_auth_id }}',
        input: { path: 'order-{{ request.body.order_id }}.json', content: '{{ request.body | tojson }}' },
      }, {
        name: 'listing', connector_id: connector, action: 'list_files',
        connector_auth_id: '{{ request.query.customer_auth_id }}', input: { path: '' },
      }],
    });

    const r1 = await webhook(t, flow.id, { token: flow.webhook_token, query: { customer_auth_id: authA }, body: { order_id: 1, customer: 'A' } });
    const r2 = await webhook(t, flow.id, { token: flow.webhook_token, query: { customer_auth_id: authB }, body: { order_id: 2, customer: 'B' } });
    assert.equal(r1.statusCode, 202, r1.body);
    assert.equal(r2.statusCode, 202, r2.body);
    assert.deepEqual(Object.keys(r1.json()).sort(), ['run_id', 'status']);
    assert.equal(r1.json().status, 'queued');
    assert.equal(r1.headers.location, `/v1/flow-runs/${r1.json().run_id}`);

    const run1 = await waitRun(t, r1.json().run_id);
    const run2 = await waitRun(t, r2.json().run_id);
    assert.equal(run1.status, 'success', JSON.stringify(run1));
    assert.equal(run2.status, 'success', JSON.stringify(run2));
    assert.equal(run1.trigger, 'webhook');

    assert.deepEqual(filesUnder(a.root), ['inbox/order-1.json']);
    assert.deepEqual(filesUnder(b.root), ['inbox/order-2.json']);
    assert.deepEqual(JSON.parse(fs.readFileSync(path.join(a.root, 'inbox/order-1.json'), 'utf8')), { order_id: 1, customer: 'A' });
    assert.deepEqual(JSON.parse(fs.readFileSync(path.join(b.root, 'inbox/order-2.json'), 'utf8')), { order_id: 2, customer: 'B' });

    const s1 = await steps(t, run1.id);
    assert.deepEqual(s1.map((s) => [s.name, s.status, s.connector_auth_id]), [['upload', 'success', authA], ['listing', 'success', authA]]);
    assert.equal(s1[0].input.path, 'order-1.json');
    assert.deepEqual(s1[1].output.files.map((f: { name: string }) => f.name), ['order-1.json']);
    assert.ok(s1[0].duration_ms >= 0 && s1[0].started_at && s1[0].finished_at);
    const s2 = await steps(t, run2.id);
    assert.equal(s2[0].connector_auth_id, authB);

    // The decryptions are audited with the run id.
    const audit = (await t.call('GET', `/v1/audit-events?filter=action,eq,"connector_auth.decrypted"&limit=200`)).json();
    const purposes = audit.data.map((e: { details: { purpose: string } }) => e.details.purpose);
    assert.ok(purposes.includes(`flow_run:${run1.id}`) && purposes.includes(`flow_run:${run2.id}`), JSON.stringify(purposes));
  });
}

test('http: the request goes to the customer\'s own API with the customer\'s own credentials', async () => {
  const apiA = await startHttpServer();
  const apiB = await startHttpServer();
  closers.push(apiA.close, apiB.close);
  const authA = await createAuth(t, { connector_id: HTTP_CONNECTOR_ID, auth_type: 'api_key', auth_token: 'token-of-customer-a', api_endpoint: `${apiA.url}/api` });
  const authB = await createAuth(t, { connector_id: HTTP_CONNECTOR_ID, auth_type: 'basic_auth', username: 'b', password: 'pw-of-customer-b', api_endpoint: `${apiB.url}/api` });
  const flow = await createFlow(t, {
    steps: [{
      name: 'post', connector_id: HTTP_CONNECTOR_ID, action: 'request', connector_auth_id: '{{ request.query.api_auth }}',
      input: { method: 'POST', url: 'orders', body: { id: '{{ request.body.id }}', run: '{{ run.id }}' } },
    }],
  });
  const runs: string[] = [];
  for (const [auth, id] of [[authA, 'a-1'], [authB, 'b-1']]) {
    const res = await webhook(t, flow.id, { token: flow.webhook_token, query: { api_auth: auth }, body: { id } });
    assert.equal(res.statusCode, 202, res.body);
    runs.push(res.json().run_id);
  }
  for (const id of runs) assert.equal((await waitRun(t, id)).status, 'success');
  assert.equal(apiA.requests.length, 1);
  assert.equal(apiB.requests.length, 1);
  assert.equal(apiA.requests[0].url, '/api/orders');
  assert.equal(apiA.requests[0].headers.authorization, 'Bearer token-of-customer-a');
  assert.deepEqual(JSON.parse(apiA.requests[0].body), { id: 'a-1', run: runs[0] });
  assert.equal(apiB.requests[0].headers.authorization, 'Basic ' + Buffer.from('b:pw-of-customer-b').toString('base64'));
  assert.deepEqual(JSON.parse(apiB.requests[0].body), { id: 'b-1', run: runs[1] });
});

test('a connector auth id of another company fails the run with connector_auth_not_found naming the query parameter', async () => {
  const other = await t.newTenant();
  const srv = await fileServer('sftp', 'eve', 'eve-pw');
  closers.push(srv.close);
  const foreign = await createAuth(t, {
    connector_id: SFTP_CONNECTOR_ID, auth_type: 'username_password', username: 'eve', password: 'eve-pw', api_endpoint: `sftp://127.0.0.1:${srv.port}/`,
  }, other.token);
  const flow = await createFlow(t, {
    steps: [{ name: 'upload', connector_id: SFTP_CONNECTOR_ID, action: 'upload_file', connector_auth_id: '{{ request.query.customer_auth_id }}', input: { path: 'x.txt', content: 'x' } }],
  });
  for (const id of [foreign, ZERO_UUID, 'not-a-uuid']) {
    const res = await webhook(t, flow.id, { token: flow.webhook_token, query: { customer_auth_id: id }, body: {} });
    const run = await waitRun(t, res.json().run_id);
    assert.equal(run.status, 'error');
    assert.equal(run.error.code, 'connector_auth_not_found');
    assert.equal(run.error.step, 'upload');
    assert.match(run.error.message, /query parameter "customer_auth_id"/);
    const [s] = await steps(t, run.id);
    assert.equal(s.status, 'error');
    assert.equal(s.error.code, 'connector_auth_not_found');
  }
  assert.deepEqual(filesUnder(srv.root), []);

  // The query parameter left out entirely.
  const res = await webhook(t, flow.id, { token: flow.webhook_token, body: {} });
  const run = await waitRun(t, res.json().run_id);
  assert.equal(run.error.code, 'connector_auth_not_found');
  assert.match(run.error.message, /customer_auth_id/);
});

test('a connector auth of another connector fails with connector_mismatch; later steps do not run', async () => {
  const api = await startHttpServer();
  closers.push(api.close);
  const httpAuth = await createAuth(t, { connector_id: HTTP_CONNECTOR_ID, auth_type: 'api_key', auth_token: 'tok-12345', api_endpoint: api.url });
  const flow = await createFlow(t, {
    steps: [
      { name: 'upload', connector_id: SFTP_CONNECTOR_ID, action: 'upload_file', connector_auth_id: '{{ request.query.sftp_auth }}', input: { path: 'x', content: 'x' } },
      { name: 'notify', connector_id: HTTP_CONNECTOR_ID, action: 'request', connector_auth_id: httpAuth, input: { url: '/' } },
    ],
  });
  const res = await webhook(t, flow.id, { token: flow.webhook_token, query: { sftp_auth: httpAuth } });
  const run = await waitRun(t, res.json().run_id);
  assert.equal(run.status, 'error');
  assert.equal(run.error.code, 'connector_mismatch');
  assert.match(run.error.message, /query parameter "sftp_auth"/);
  assert.equal((await steps(t, run.id)).length, 1);
  assert.equal(api.requests.length, 0);
});

test('a private connector auth of another user is invisible to the flow owner', async () => {
  const owner = await t.newUser(t.tenant.companyId);
  const other = await t.newUser(t.tenant.companyId);
  const api = await startHttpServer();
  closers.push(api.close);
  const priv = await createAuth(t, { connector_id: HTTP_CONNECTOR_ID, auth_type: 'api_key', auth_token: 'private-token-1', api_endpoint: api.url }, other.token);
  const perm = await t.call('PUT', `/v1/connector-auths/${priv}/permissions`, { token: other.token, body: { visibility: 'private' } });
  assert.equal(perm.statusCode, 200, perm.body);
  const flow = await createFlow(t, {
    steps: [{ name: 'call', connector_id: HTTP_CONNECTOR_ID, action: 'request', connector_auth_id: '{{ request.query.a }}', input: {} }],
  }, owner.token);
  const res = await webhook(t, flow.id, { token: flow.webhook_token, query: { a: priv } });
  const run = await waitRun(t, res.json().run_id);
  assert.equal(run.error.code, 'connector_auth_not_found');
  assert.equal(api.requests.length, 0);
});

test('steps chain: a later step reads steps.<name>.output and env variables', async () => {
  const api = await startHttpServer();
  closers.push(api.close);
  assert.equal((await t.call('POST', '/v1/env-variables', { body: { name: 'REGION', value: 'eu-1' } })).statusCode, 201);
  const auth = await createAuth(t, { connector_id: HTTP_CONNECTOR_ID, auth_type: 'api_key', auth_token: 'chain-token', api_endpoint: api.url });
  const flow = await createFlow(t, {
    steps: [
      { name: 'first', connector_id: HTTP_CONNECTOR_ID, action: 'request', connector_auth_id: auth, input: { url: '/one', query: { q: '{{ request.query.q }}' } } },
      { name: 'second', connector_id: HTTP_CONNECTOR_ID, action: 'request', connector_auth_id: auth, input: { method: 'POST', url: '/two', body: { prev: '{{ steps.first.output.body.url }}', status: '{{ steps.first.output.status }}', region: '{{ env.REGION }}' } } },
    ],
  });
  const res = await t.call('POST', `/v1/flows/${flow.id}/run?q=hello`, { body: {} });
  assert.equal(res.statusCode, 202, res.body);
  const run = await waitRun(t, res.json().run_id);
  assert.equal(run.status, 'success', JSON.stringify(run));
  assert.equal(run.trigger, 'api');
  assert.equal(run.triggered_by_user_id, t.tenant.admin.id);
  assert.deepEqual(JSON.parse(api.requests[1].body), { prev: '/one?q=hello', status: 200, region: 'eu-1' });
});

test('Prefer: wait answers 200 with the finished run, or 202 when it does not end in time', async () => {
  const slow = await startHttpServer(async (_req, res) => {
    await new Promise((r) => setTimeout(r, 1500));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  const fast = await startHttpServer();
  closers.push(slow.close, fast.close);
  const flowFor = async (url: string) => createFlow(t, {
    steps: [{ name: 'call', connector_id: HTTP_CONNECTOR_ID, action: 'request', input: { url } }],
  });
  const fastFlow = await flowFor(fast.url + '/x');
  const res = await webhook(t, fastFlow.id, { token: fastFlow.webhook_token, headers: { prefer: 'wait=10' } });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().status, 'success');
  assert.equal(res.headers['preference-applied'], 'wait=10');
  assert.match(String(res.headers.location), /^\/v1\/flow-runs\//);

  const slowFlow = await flowFor(slow.url + '/x');
  const t0 = Date.now();
  const res2 = await t.call('POST', `/v1/flows/${slowFlow.id}/run`, { headers: { prefer: 'respond-async, wait=1' } });
  assert.equal(res2.statusCode, 202, res2.body);
  assert.ok(Date.now() - t0 >= 900, 'waited about a second');
  assert.equal(res2.headers['preference-applied'], 'wait=1');
  assert.equal(res2.json().status, 'queued');
  await waitRun(t, res2.json().run_id);

  // More than 60 seconds is capped at 60.
  const res3 = await webhook(t, fastFlow.id, { token: fastFlow.webhook_token, headers: { prefer: 'wait=3600' } });
  assert.equal(res3.statusCode, 200);
  assert.equal(res3.headers['preference-applied'], 'wait=60');
});

test('a step that exceeds the step timeout fails with timeout', async () => {
  const t2 = await startTestApp({ FLOWGATE_STEP_TIMEOUT_SECONDS: '1' });
  const hang = await startHttpServer(async (_req, res) => {
    await new Promise((r) => setTimeout(r, 3000));
    res.end('{}');
  });
  try {
    worker(t2);
    const flow = await createFlow(t2, { steps: [{ name: 'call', connector_id: HTTP_CONNECTOR_ID, action: 'request', input: { url: hang.url } }] });
    const res = await webhook(t2, flow.id, { token: flow.webhook_token });
    const run = await waitRun(t2, res.json().run_id, 10_000);
    assert.equal(run.status, 'error');
    assert.equal(run.error.code, 'timeout');
  } finally {
    await hang.close();
    await t2.close();
  }
});

