// Tenant isolation: another company's full-rights admin gets 404 (never 403, never data) on
// every flow, run, step, webhook, env-variable and file-upload endpoint of this company's
// objects, sees none of them in lists, and changes nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, problem, type TestApp, type Tenant } from '../support/app.ts';
import { createFlow, multipart, worker, waitRun } from './_helpers.ts';
import { startHttpServer } from '../support/servers.ts';
import { HTTP_CONNECTOR_ID } from '../../src/modules/connectors/catalogue.ts';

let t: TestApp;
let other: Tenant;
before(async () => {
  t = await startTestApp();
  other = await t.newTenant();
  worker(t);
});
after(async () => { await t.close(); });

test('every endpoint answers 404 to another company', async () => {
  const flow = await createFlow(t, { steps: [] });
  const runId = (await t.call('POST', `/v1/flows/${flow.id}/run`)).json().run_id;
  await waitRun(t, runId);
  const env = (await t.call('POST', '/v1/env-variables', { body: { name: 'TENANT_SECRET', value: 'tenant-a-only', secret: true } })).json();
  const mp = multipart('file', 'a.txt', Buffer.from('tenant A file'));
  const up = (await t.app.inject({ method: 'POST', url: '/v1/file-uploads', payload: mp.payload, headers: { ...mp.headers, authorization: `Bearer ${t.tenant.token}` } })).json();

  const tok = other.token;
  const calls: Array<[string, string, unknown?]> = [
    ['GET', `/v1/flows/${flow.id}`],
    ['PUT', `/v1/flows/${flow.id}`, { name: 'stolen' }],
    ['DELETE', `/v1/flows/${flow.id}`],
    ['POST', `/v1/flows/${flow.id}/webhook-token`],
    ['POST', `/v1/flows/${flow.id}/run`, {}],
    ['POST', `/v1/flow-webhook/${flow.id}`, {}],
    ['GET', `/v1/flow-runs/${runId}`],
    ['GET', `/v1/flow-runs/${runId}/steps`],
    ['GET', `/v1/env-variables/${env.id}`],
    ['PUT', `/v1/env-variables/${env.id}`, { value: 'overwritten' }],
    ['DELETE', `/v1/env-variables/${env.id}`],
    ['GET', `/v1/file-uploads/${up.id}`],
    ['GET', `/v1/file-uploads/${up.id}/content`],
    ['DELETE', `/v1/file-uploads/${up.id}`],
  ];
  for (const [method, url, body] of calls) {
    const res = await t.call(method, url, { token: tok, ...(body !== undefined ? { body } : {}) });
    problem(res, 404, 'not_found');
    assert.doesNotMatch(res.body, /tenant-a-only|tenant A file/);
  }

  const lists = ['/v1/flows', '/v1/flow-runs', `/v1/flow-runs?filter=flow_id,eq,"${flow.id}"`, '/v1/env-variables', '/v1/file-uploads'];
  for (const url of lists) {
    const res = await t.call('GET', url, { token: tok });
    assert.equal(res.statusCode, 200, url);
    assert.deepEqual(res.json().data, [], url);
  }

  // Nothing changed for the owner.
  assert.equal((await t.call('GET', `/v1/flows/${flow.id}`)).json().name, flow.name);
  assert.equal((await t.call('GET', `/v1/env-variables/${env.id}`)).statusCode, 200);
  const content = await t.call('GET', `/v1/file-uploads/${up.id}/content`);
  assert.equal(content.body, 'tenant A file');
  assert.equal((await t.call('GET', `/v1/flow-runs?filter=flow_id,eq,"${flow.id}"`)).json().data.length, 1);
});

test('another company\'s templates see only their own env variables', async () => {
  await t.call('POST', '/v1/env-variables', { body: { name: 'ONLY_A', value: 'value-of-company-a' } });
  const api = await startHttpServer();
  try {
    const b = await t.call('POST', '/v1/flows', {
      token: other.token,
      body: { name: 'b', status: 'active', steps: [{ name: 'call', connector_id: HTTP_CONNECTOR_ID, action: 'request', input: { method: 'POST', url: api.url, body: { a: '{{ env.ONLY_A }}', all: '{{ env }}' } } }] },
    });
    assert.equal(b.statusCode, 201, b.body);
    const run = await t.call('POST', `/v1/flows/${b.json().id}/run`, { token: other.token });
    assert.equal((await waitRun(t, run.json().run_id, 15_000, other.token)).status, 'success');
    assert.deepEqual(JSON.parse(api.requests[0].body), { a: null, all: {} });
  } finally {
    await api.close();
  }
});
