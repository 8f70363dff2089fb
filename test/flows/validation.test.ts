// Flow definitions are validated whole at save time: every problem is a 400 that names the
// step and the field, and nothing is stored. Plus CRUD, ownership and the paused state.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, problem, type TestApp } from '../support/app.ts';
import { HTTP_CONNECTOR_ID, SFTP_CONNECTOR_ID, ZENDESK_CONNECTOR_ID } from '../../src/modules/connectors/catalogue.ts';
import { countRows, createFlow, waitRun, webhook, worker, ZERO_UUID } from './_helpers.ts';

let t: TestApp;
before(async () => { t = await startTestApp(); });
after(async () => { await t.close(); });

const upload = (over: Record<string, unknown> = {}) => ({
  name: 'upload', connector_id: SFTP_CONNECTOR_ID, action: 'upload_file', connector_auth_id: '{{ request.query.customer_auth_id }}',
  input: { path: 'a.txt', content: '{{ request.body.text }}' }, ...over,
});

async function expect400(steps: unknown[], field: string, message: RegExp) {
  const before = await countRows(t, 'flows');
  const res = await t.call('POST', '/v1/flows', { body: { name: 'bad', steps } });
  const body = problem(res, 400, 'validation_failed');
  const hit = body.errors.find((e: { field: string }) => e.field === field);
  assert.ok(hit, `no error for ${field}: ${res.body}`);
  assert.match(hit.message, message);
  assert.equal(await countRows(t, 'flows'), before, 'nothing stored');
  // PUT on an existing flow refuses the same definition.
  const flow = await createFlow(t, { steps: [] });
  const put = await t.call('PUT', `/v1/flows/${flow.id}`, { body: { steps } });
  assert.ok(problem(put, 400, 'validation_failed').errors.some((e: { field: string }) => e.field === field));
  assert.deepEqual((await t.call('GET', `/v1/flows/${flow.id}`)).json().steps, []);
}

test('unknown connector', async () => {
  await expect400([upload(), upload({ name: 'second', connector_id: ZERO_UUID })], 'steps.1.connector_id', /step 1 "second": unknown connector/);
});

test('unknown action of the connector', async () => {
  await expect400([upload({ action: 'teleport' })], 'steps.0.action', /step 0 "upload": connector "SFTP" has no action "teleport"/);
});

test('duplicate step names', async () => {
  await expect400([upload(), upload()], 'steps.1.name', /step 1 "upload": duplicate step name/);
});

test('step names must be identifiers (they are used as steps.<name>)', async () => {
  await expect400([upload({ name: 'my step' })], 'steps.0.name', /must match/);
});

test('bad template syntax in an input field names the field', async () => {
  await expect400([upload({ input: { path: 'a.txt', content: '{{ request.body.text ' } })], 'steps.0.input.content', /step 0 "upload": bad template: syntax error/);
  await expect400([upload({ input: { path: 'a.txt', nested: { deep: ['ok', '{% if %}'] } } })], 'steps.0.input.nested.deep.1', /bad template/);
});

test('bad template in connector_auth_id, or neither a uuid nor a template', async () => {
  await expect400([upload({ connector_auth_id: '{{ request.query.x }' })], 'steps.0.connector_auth_id', /bad template/);
  await expect400([upload({ connector_auth_id: 'customer-42' })], 'steps.0.connector_auth_id', /must be a uuid4 or a template/);
});

test('a file step without a connector auth is refused; an HTTP step may go without', async () => {
  await expect400([upload({ connector_auth_id: null })], 'steps.0.connector_auth_id', /needs a connector auth/);
  const ok = await createFlow(t, { steps: [{ name: 'call', connector_id: HTTP_CONNECTOR_ID, action: 'request', input: { url: 'https://example.com' } }] });
  assert.equal(ok.steps[0].connector_auth_id, null);
});

test('sandbox: templates that reach for constructors, functions, files or globals are refused at save time', async () => {
  const escapes = [
    '{{ range.constructor("return process")() }}',
    '{{ cycler.constructor("return process.env")() }}',
    '{{ "".constructor.constructor("return process")() }}',
    '{{ request.constructor }}',
    '{{ request.__proto__ }}',
    '{{ request["__proto__"] }}',
    '{{ request.body.prototype }}',
    '{% set x = "constructor" %}{{ request[x] }}',
    '{% include "/etc/passwd" %}',
    '{% import "x" as y %}',
    '{% extends "base" %}',
    '{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}',
    '{{ lipsum() }}',
    '{{ joiner() }}',
    '{{ "x" | center(100000000) }}',
    '{{ r/(a+)+$/ }}',
  ];
  for (const [i, tpl] of escapes.entries()) {
    const res = await t.call('POST', '/v1/flows', { body: { name: `escape ${i}`, steps: [upload({ input: { path: 'a.txt', content: tpl } })] } });
    const body = problem(res, 400, 'validation_failed');
    assert.equal(body.errors[0].field, 'steps.0.input.content', tpl);
    assert.match(body.errors[0].message, /not allowed|syntax error/, tpl);
  }
});

test('schema-level problems name the field too (strict bodies)', async () => {
  const res = await t.call('POST', '/v1/flows', { body: { name: 'x', steps: [{ ...upload(), extra: 1 }] } });
  assert.equal(problem(res, 400, 'validation_failed').errors[0].field, 'steps.0.extra');
  const res2 = await t.call('POST', '/v1/flows', { body: { name: 'x', status: 'running' } });
  assert.equal(problem(res2, 400, 'validation_failed').errors[0].field, 'status');
  const res3 = await t.call('POST', '/v1/flows', { body: { name: 'x', steps: [{ ...upload(), connector_id: 'sftp' }] } });
  assert.equal(problem(res3, 400, 'validation_failed').errors[0].field, 'steps.0.connector_id');
});

test('a connector without a runtime cannot be a step', async () => {
  // Zendesk carries a runtime (HTTP) in the catalogue; a company connector without one cannot run.
  const c = await t.call('POST', '/v1/connectors', { body: { name: 'No runtime', auth_types: ['api_key'] } });
  assert.equal(c.statusCode, 201, c.body);
  await expect400([{ name: 's', connector_id: c.json().id, action: 'request', connector_auth_id: ZERO_UUID }], 'steps.0.connector_id', /no runtime/);
  const z = await createFlow(t, { steps: [{ name: 'z', connector_id: ZENDESK_CONNECTOR_ID, action: 'request', connector_auth_id: '{{ request.query.zendesk_auth_id }}' }] });
  assert.equal(z.steps[0].action, 'request');
});

test('CRUD: create shows the webhook token once; get, list, update, delete', async () => {
  const flow = await createFlow(t, { name: 'crud', status: 'draft', steps: [upload()] });
  assert.match(flow.webhook_token, /^fgw_[0-9A-Za-z]{36}$/);
  assert.equal(flow.webhook_token_required, true);
  assert.equal(flow.owner_user_id, t.tenant.admin.id);
  assert.equal(flow.webhook_url, `http://localhost:8080/v1/flow-webhook/${flow.id}`);
  assert.equal(flow.webhook_token_hint, `fgw_...${flow.webhook_token.slice(-4)}`);
  const got = (await t.call('GET', `/v1/flows/${flow.id}`)).json();
  assert.equal(got.webhook_token, undefined);
  assert.deepEqual(got.steps, [upload()]);
  const list = (await t.call('GET', '/v1/flows?filter=name,eq,"crud"')).json();
  assert.deepEqual(list.data.map((f: { id: string }) => f.id), [flow.id]);
  const put = await t.call('PUT', `/v1/flows/${flow.id}`, { body: { name: 'crud 2', webhook_token_required: false } });
  assert.equal(put.statusCode, 200, put.body);
  assert.equal(put.json().name, 'crud 2');
  assert.equal(put.json().status, 'draft');
  assert.equal(put.json().webhook_token_required, false);
  assert.equal((await t.call('DELETE', `/v1/flows/${flow.id}`)).statusCode, 204);
  problem(await t.call('GET', `/v1/flows/${flow.id}`), 404, 'not_found');
});

test('only the owner or an admin may change a flow; other members may read and run it', async () => {
  const owner = await t.newUser(t.tenant.companyId);
  const member = await t.newUser(t.tenant.companyId);
  const flow = await createFlow(t, { steps: [] }, owner.token);
  assert.equal((await t.call('GET', `/v1/flows/${flow.id}`, { token: member.token })).statusCode, 200);
  problem(await t.call('PUT', `/v1/flows/${flow.id}`, { token: member.token, body: { name: 'hijack' } }), 403, 'forbidden');
  problem(await t.call('DELETE', `/v1/flows/${flow.id}`, { token: member.token }), 403, 'forbidden');
  problem(await t.call('POST', `/v1/flows/${flow.id}/webhook-token`, { token: member.token }), 403, 'forbidden');
  assert.equal((await t.call('POST', `/v1/flows/${flow.id}/run`, { token: member.token })).statusCode, 202);
  assert.equal((await t.call('PUT', `/v1/flows/${flow.id}`, { body: { name: 'by admin' } })).statusCode, 200);
  assert.equal((await t.call('PUT', `/v1/flows/${flow.id}`, { token: owner.token, body: { name: 'by owner' } })).statusCode, 200);
});

test('a paused flow answers 409 flow_paused and stores nothing; draft and active flows run', async () => {
  const flow = await createFlow(t, { status: 'paused', steps: [] });
  const runsBefore = await countRows(t, 'flow_runs');
  problem(await webhook(t, flow.id, { token: flow.webhook_token, body: { a: 1 } }), 409, 'flow_paused');
  problem(await t.call('POST', `/v1/flows/${flow.id}/run`, { body: {} }), 409, 'flow_paused');
  assert.equal(await countRows(t, 'flow_runs'), runsBefore);
  for (const status of ['draft', 'active']) {
    await t.call('PUT', `/v1/flows/${flow.id}`, { body: { status } });
    assert.equal((await webhook(t, flow.id, { token: flow.webhook_token })).statusCode, 202, status);
  }
  assert.equal(await countRows(t, 'flow_runs'), runsBefore + 2);
});

test('deleting a flow deletes its runs and steps', async () => {
  const flow = await createFlow(t, { steps: [] });
  const run = (await t.call('POST', `/v1/flows/${flow.id}/run`)).json().run_id;
  assert.equal((await t.call('DELETE', `/v1/flows/${flow.id}`)).statusCode, 204);
  problem(await t.call('GET', `/v1/flow-runs/${run}`), 404, 'not_found');
});

test('runs list filters by flow_id and status', async () => {
  const a = await createFlow(t, { steps: [] });
  const b = await createFlow(t, { steps: [] });
  const ra = (await t.call('POST', `/v1/flows/${a.id}/run`)).json().run_id;
  await t.call('POST', `/v1/flows/${b.id}/run`);
  const list = (await t.call('GET', `/v1/flow-runs?filter=flow_id,eq,"${a.id}"&filter=status,eq,"queued"`)).json();
  assert.deepEqual(list.data.map((r: { id: string }) => r.id), [ra]);
  problem(await t.call('GET', '/v1/flow-runs?filter=secret,eq,1'), 400, 'invalid_filter');
});

test('runs still queued when their flow is paused end in error flow_paused without running a step', async () => {
  const flow = await createFlow(t, { steps: [{ name: 'call', connector_id: HTTP_CONNECTOR_ID, action: 'request', input: { url: 'http://127.0.0.1:9/' } }] });
  const id = (await t.call('POST', `/v1/flows/${flow.id}/run`)).json().run_id;
  await t.call('PUT', `/v1/flows/${flow.id}`, { body: { status: 'paused' } });
  worker(t);
  const run = await waitRun(t, id);
  assert.equal(run.status, 'error');
  assert.equal(run.error.code, 'flow_paused');
  assert.deepEqual((await t.call('GET', `/v1/flow-runs/${id}/steps`)).json().data, []);
});
