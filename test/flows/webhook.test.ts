// The webhook's credentials (flow webhook token, PAT/OAuth with automation or
// automation:webhook_run, or none when the flow says so) and its per-IP rate limit.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, problem, type TestApp } from '../support/app.ts';
import { countRows, createFlow, webhook, ZERO_UUID } from './_helpers.ts';

let t: TestApp;
before(async () => { t = await startTestApp(); });
after(async () => { await t.close(); });

test('token required: no credential 401, wrong token 401, right token 202 (header, Bearer, query)', async () => {
  const flow = await createFlow(t, { steps: [] });
  const runs = await countRows(t, 'flow_runs');
  problem(await webhook(t, flow.id, {}), 401, 'missing_credentials');
  problem(await webhook(t, flow.id, { token: 'fgw_wrongwrongwrongwrongwrongwrong123456' }), 401, 'invalid_webhook_token');
  problem(await webhook(t, flow.id, { token: 'not-even-a-token' }), 401, 'invalid_webhook_token');
  // Another flow's valid token does not open this one, in any of the three places.
  const other = await createFlow(t, { steps: [] });
  problem(await webhook(t, flow.id, { token: other.webhook_token }), 401, 'invalid_webhook_token');
  problem(await webhook(t, flow.id, { headers: { authorization: `Bearer ${other.webhook_token}` } }), 401, 'invalid_webhook_token');
  problem(await webhook(t, flow.id, { query: { webhook_token: other.webhook_token } }), 401, 'invalid_webhook_token');
  assert.equal(await countRows(t, 'flow_runs'), runs, 'no run stored by a refused call');

  assert.equal((await webhook(t, flow.id, { token: flow.webhook_token })).statusCode, 202);
  assert.equal((await webhook(t, flow.id, { headers: { authorization: `Bearer ${flow.webhook_token}` } })).statusCode, 202);
  const viaQuery = await webhook(t, flow.id, { query: { webhook_token: flow.webhook_token, customer: 'c1' } });
  assert.equal(viaQuery.statusCode, 202);
  // The token never reaches the run (templates see request.query without it).
  const row = await t.ctx.database.db.selectFrom('flow_runs' as never).selectAll().where('id' as never, '=', viaQuery.json().run_id as never).executeTakeFirst() as { request: string; triggered_by_user_id: string | null };
  assert.doesNotMatch(row.request, /fgw_/);
  assert.deepEqual(JSON.parse(row.request).query, { customer: 'c1' });
  assert.equal(row.triggered_by_user_id, null);
});

test('an unknown flow answers exactly like a protected one (no oracle for flow ids)', async () => {
  const a = await webhook(t, ZERO_UUID, {});
  problem(a, 401, 'missing_credentials');
  problem(await webhook(t, ZERO_UUID, { token: 'fgw_wrongwrongwrongwrongwrongwrong123456' }), 401, 'invalid_webhook_token');
  problem(await webhook(t, 'not-a-uuid', {}), 400, 'validation_failed');
});

test('webhook_token_required: false needs no credential at all', async () => {
  const flow = await createFlow(t, { steps: [], webhook_token_required: false });
  const res = await webhook(t, flow.id, { body: { a: 1 } });
  assert.equal(res.statusCode, 202, res.body);
  // Setting it back to true closes the door again.
  await t.call('PUT', `/v1/flows/${flow.id}`, { body: { webhook_token_required: true } });
  problem(await webhook(t, flow.id, {}), 401, 'missing_credentials');
});

test('regenerating the token refuses the old one at once', async () => {
  const flow = await createFlow(t, { steps: [] });
  const res = await t.call('POST', `/v1/flows/${flow.id}/webhook-token`);
  assert.equal(res.statusCode, 200, res.body);
  const fresh = res.json().webhook_token;
  assert.notEqual(fresh, flow.webhook_token);
  problem(await webhook(t, flow.id, { token: flow.webhook_token }), 401, 'invalid_webhook_token');
  problem(await webhook(t, flow.id, { headers: { authorization: `Bearer ${flow.webhook_token}` } }), 401, 'invalid_token');
  assert.equal((await webhook(t, flow.id, { token: fresh })).statusCode, 202);
});

test('a webhook token is good for its webhook only, never for the API', async () => {
  const flow = await createFlow(t, { steps: [] });
  for (const [method, url] of [['GET', '/v1/flows'], ['GET', `/v1/flows/${flow.id}`], ['POST', `/v1/flows/${flow.id}/run`], ['GET', '/v1/flow-runs'], ['GET', '/v1/connector-auths']] as const) {
    problem(await t.call(method, url, { token: flow.webhook_token }), 403, 'insufficient_scope');
  }
});

test('automation:webhook_run triggers the webhook (even of a token-protected flow) but reads nothing', async () => {
  const flow = await createFlow(t, { steps: [] });
  const hook = await t.newUser(t.tenant.companyId, { scopes: ['automation:webhook_run'] });
  const res = await webhook(t, flow.id, { headers: { authorization: `Bearer ${hook.token}` }, body: {} });
  assert.equal(res.statusCode, 202, res.body);
  const row = await t.ctx.database.db.selectFrom('flow_runs' as never).select('triggered_by_user_id' as never).where('id' as never, '=', res.json().run_id as never).executeTakeFirst() as { triggered_by_user_id: string };
  assert.equal(row.triggered_by_user_id, hook.id);
  // Basic e-mail:PAT works as well.
  const basic = 'Basic ' + Buffer.from(`${hook.email}:${hook.token}`).toString('base64');
  assert.equal((await webhook(t, flow.id, { headers: { authorization: basic } })).statusCode, 202);
  problem(await t.call('GET', '/v1/flows', { token: hook.token }), 403, 'insufficient_scope');
  problem(await t.call('GET', `/v1/flows/${flow.id}`, { token: hook.token }), 403, 'insufficient_scope');
  problem(await t.call('GET', `/v1/flow-runs/${res.json().run_id}`, { token: hook.token }), 403, 'insufficient_scope');
  problem(await t.call('POST', `/v1/flows/${flow.id}/run`, { token: hook.token }), 403, 'insufficient_scope');
  // Scopes without automation are refused on the webhook; a bad PAT is 401 even when the flow is open.
  const other = await t.newUser(t.tenant.companyId, { scopes: ['connectors'] });
  problem(await webhook(t, flow.id, { headers: { authorization: `Bearer ${other.token}` } }), 403, 'insufficient_scope');
  const open = await createFlow(t, { steps: [], webhook_token_required: false });
  problem(await webhook(t, open.id, { headers: { authorization: 'Bearer fgp_nonsense' } }), 401, 'invalid_token');
});

test('a PAT of another company gets 404 on the webhook of this company\'s flow', async () => {
  const flow = await createFlow(t, { steps: [] });
  const other = await t.newTenant();
  problem(await webhook(t, flow.id, { headers: { authorization: `Bearer ${other.token}` } }), 404, 'not_found');
});

test('the query and body reach the run; credential headers do not', async () => {
  const flow = await createFlow(t, { steps: [] });
  const res = await webhook(t, flow.id, {
    token: flow.webhook_token, query: { zendesk_auth_id: ZERO_UUID, google_sheet_auth_id: ZERO_UUID },
    body: { ticket: 7 }, headers: { cookie: 'session=abc', 'x-custom': 'yes' },
  });
  assert.equal(res.statusCode, 202);
  const row = await t.ctx.database.db.selectFrom('flow_runs' as never).select('request' as never).where('id' as never, '=', res.json().run_id as never).executeTakeFirst() as { request: string };
  const req = JSON.parse(row.request);
  assert.deepEqual(req.query, { zendesk_auth_id: ZERO_UUID, google_sheet_auth_id: ZERO_UUID });
  assert.deepEqual(req.body, { ticket: 7 });
  assert.equal(req.headers['x-custom'], 'yes');
  assert.equal(req.headers.cookie, undefined);
  assert.equal(req.headers['x-webhook-token'], undefined);
});

test('rate limit per client IP: 429 problem+json with Retry-After; other IPs unaffected', async () => {
  const t2 = await startTestApp({ FLOWGATE_WEBHOOK_RATE_LIMIT: '3', FLOWGATE_WEBHOOK_RATE_WINDOW_SECONDS: '120' });
  try {
    const flow = await createFlow(t2, { steps: [], webhook_token_required: false });
    for (let i = 0; i < 3; i++) assert.equal((await webhook(t2, flow.id, { remoteAddress: '10.0.0.1' })).statusCode, 202);
    const runs = await countRows(t2, 'flow_runs');
    const limited = await webhook(t2, flow.id, { remoteAddress: '10.0.0.1' });
    const body = problem(limited, 429, 'rate_limited');
    const retry = Number(limited.headers['retry-after']);
    assert.ok(retry > 0 && retry <= 120, `Retry-After ${limited.headers['retry-after']}`);
    assert.match(body.detail, /at most 3 per 120 seconds/);
    assert.equal(await countRows(t2, 'flow_runs'), runs, 'a limited call stores nothing');
    // Bad tokens count too (no unlimited guessing), and another address has its own budget.
    problem(await webhook(t2, flow.id, { remoteAddress: '10.0.0.1', token: 'fgw_x' }), 429, 'rate_limited');
    assert.equal((await webhook(t2, flow.id, { remoteAddress: '10.0.0.2' })).statusCode, 202);
    // The rest of the API is not limited by the webhook's budget.
    assert.equal((await t2.call('GET', '/v1/flows')).statusCode, 200);
  } finally {
    await t2.close();
  }
});
