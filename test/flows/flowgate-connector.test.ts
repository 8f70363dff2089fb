// The flowgate connector: a flow step calls flowgate's own API with Basic e-mail:PAT (seed 5.1
// point 3), against this very app listening on 127.0.0.1; the PAT's scopes still apply.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { startTestApp, type TestApp } from '../support/app.ts';
import { FLOWGATE_CONNECTOR_ID } from '../../src/modules/connectors/catalogue.ts';
import { createAuth, createFlow, steps, waitRun, webhook, worker } from './_helpers.ts';

let t: TestApp;
let base: string;
before(async () => {
  t = await startTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  worker(t);
});
after(async () => { await t.close(); });

test('a step reads and writes flowgate through its API with Basic e-mail:PAT', async () => {
  const apiUser = await t.newUser(t.tenant.companyId, { role: 'admin', scopes: ['automation:view', 'company'] });
  const auth = await createAuth(t, {
    connector_id: FLOWGATE_CONNECTOR_ID, auth_type: 'basic_auth', username: apiUser.email, password: apiUser.token, api_endpoint: base,
  });
  const flow = await createFlow(t, {
    steps: [
      { name: 'me', connector_id: FLOWGATE_CONNECTOR_ID, action: 'request', connector_auth_id: auth, input: { url: '/v1/flows/{{ flow.id }}' } },
      { name: 'save', connector_id: FLOWGATE_CONNECTOR_ID, action: 'request', connector_auth_id: auth, input: { method: 'POST', url: '/v1/env-variables', body: { name: 'LAST_FLOW', value: '{{ steps.me.output.body.name }}' } } },
      { name: 'denied', connector_id: FLOWGATE_CONNECTOR_ID, action: 'request', connector_auth_id: auth, input: { method: 'DELETE', url: '/v1/flows/{{ flow.id }}' } },
    ],
  });
  const res = await webhook(t, flow.id, { token: flow.webhook_token });
  const run = await waitRun(t, res.json().run_id);
  const s = await steps(t, run.id);
  assert.equal(run.status, 'success', JSON.stringify(s));
  assert.equal(s[0].output.status, 200);
  assert.equal(s[0].output.body.id, flow.id);
  assert.equal(s[1].output.status, 201);
  assert.equal(s[1].output.body.value, flow.name);
  // The PAT's scopes hold inside flows too: automation:view may not delete a flow.
  assert.equal(s[2].output.status, 403);
  assert.equal(s[2].output.body.code, 'insufficient_scope');
  assert.equal((await t.call('GET', `/v1/flows/${flow.id}`)).statusCode, 200);
  // The PAT is nowhere in the records.
  assert.ok(!JSON.stringify(s).includes(apiUser.token));
  assert.ok(!JSON.stringify(s).includes(Buffer.from(`${apiUser.email}:${apiUser.token}`).toString('base64')));
});
