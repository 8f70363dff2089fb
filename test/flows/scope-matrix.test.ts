// The full scope matrix of the flow, run, step, webhook, env-variable and file-upload
// endpoints: every valid scope string x every endpoint. The expected answer is written out here
// from the seed's table (section 5.1), independent of src: allowed -> anything but
// 403 insufficient_scope; refused -> 403 insufficient_scope and nothing changed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app.ts';
import { createFlow, multipart } from './_helpers.ts';

type Op = 'create' | 'read' | 'update' | 'delete';
type Entity = 'Flows' | 'Flow Runs' | 'Flow Run Steps' | 'Run Flows' | 'Webhook Runs' | 'Env Variables' | 'File Uploads';

const SCOPES = ['automation', 'company', 'connector_auth', 'connectors', 'dashboard', 'embed']
  .flatMap((s) => [s, `${s}:manage`, `${s}:view`]).concat('automation:webhook_run');

function expected(scope: string, entity: Entity, op: Op): boolean {
  const [name, level = 'full'] = scope.split(':');
  if (level === 'webhook_run') return entity === 'Webhook Runs' && op === 'create';
  const ops: Op[] = level === 'full' ? ['create', 'read', 'update', 'delete'] : level === 'manage' ? ['create', 'read', 'update'] : ['read'];
  if (name === 'automation') {
    if (['Flows', 'Flow Runs', 'Flow Run Steps', 'Run Flows', 'Webhook Runs'].includes(entity)) return ops.includes(op);
    if (entity === 'Env Variables' || entity === 'File Uploads') return op === 'read';
  }
  if (name === 'company' && (entity === 'Env Variables' || entity === 'File Uploads')) return ops.includes(op);
  return false;
}

interface Fixture { flow: Record<string, any>; runId: string; envId: string; uploadId: string }
interface Endpoint {
  entity: Entity; op: Op; name: string;
  request(t: TestApp, token: string, f: Fixture): Promise<{ statusCode: number; json(): any; body: string }>;
}

const upload = (t: TestApp, token: string) => {
  const mp = multipart('file', 'a.txt', Buffer.from('hello'));
  return t.app.inject({ method: 'POST', url: '/v1/file-uploads', payload: mp.payload, headers: { ...mp.headers, authorization: `Bearer ${token}` } });
};

const ENDPOINTS: Endpoint[] = [
  { entity: 'Flows', op: 'read', name: 'GET /v1/flows', request: (t, tok) => t.call('GET', '/v1/flows', { token: tok }) },
  { entity: 'Flows', op: 'create', name: 'POST /v1/flows', request: (t, tok) => t.call('POST', '/v1/flows', { token: tok, body: { name: 'm', steps: [] } }) },
  { entity: 'Flows', op: 'read', name: 'GET /v1/flows/{id}', request: (t, tok, f) => t.call('GET', `/v1/flows/${f.flow.id}`, { token: tok }) },
  { entity: 'Flows', op: 'update', name: 'PUT /v1/flows/{id}', request: (t, tok, f) => t.call('PUT', `/v1/flows/${f.flow.id}`, { token: tok, body: { name: 'renamed' } }) },
  { entity: 'Flows', op: 'update', name: 'POST /v1/flows/{id}/webhook-token', request: (t, tok, f) => t.call('POST', `/v1/flows/${f.flow.id}/webhook-token`, { token: tok }) },
  { entity: 'Flows', op: 'delete', name: 'DELETE /v1/flows/{id}', request: (t, tok, f) => t.call('DELETE', `/v1/flows/${f.flow.id}`, { token: tok }) },
  { entity: 'Run Flows', op: 'create', name: 'POST /v1/flows/{id}/run', request: (t, tok, f) => t.call('POST', `/v1/flows/${f.flow.id}/run`, { token: tok }) },
  { entity: 'Webhook Runs', op: 'create', name: 'POST /v1/flow-webhook/{id}', request: (t, tok, f) => t.call('POST', `/v1/flow-webhook/${f.flow.id}`, { token: tok }) },
  { entity: 'Flow Runs', op: 'read', name: 'GET /v1/flow-runs', request: (t, tok) => t.call('GET', '/v1/flow-runs', { token: tok }) },
  { entity: 'Flow Runs', op: 'read', name: 'GET /v1/flow-runs/{id}', request: (t, tok, f) => t.call('GET', `/v1/flow-runs/${f.runId}`, { token: tok }) },
  { entity: 'Flow Run Steps', op: 'read', name: 'GET /v1/flow-runs/{id}/steps', request: (t, tok, f) => t.call('GET', `/v1/flow-runs/${f.runId}/steps`, { token: tok }) },
  { entity: 'Env Variables', op: 'read', name: 'GET /v1/env-variables', request: (t, tok) => t.call('GET', '/v1/env-variables', { token: tok }) },
  { entity: 'Env Variables', op: 'create', name: 'POST /v1/env-variables', request: (t, tok) => t.call('POST', '/v1/env-variables', { token: tok, body: { name: `V_${Math.random().toString(36).slice(2, 8).toUpperCase()}`, value: 'v' } }) },
  { entity: 'Env Variables', op: 'read', name: 'GET /v1/env-variables/{id}', request: (t, tok, f) => t.call('GET', `/v1/env-variables/${f.envId}`, { token: tok }) },
  { entity: 'Env Variables', op: 'update', name: 'PUT /v1/env-variables/{id}', request: (t, tok, f) => t.call('PUT', `/v1/env-variables/${f.envId}`, { token: tok, body: { value: 'changed' } }) },
  { entity: 'Env Variables', op: 'delete', name: 'DELETE /v1/env-variables/{id}', request: (t, tok, f) => t.call('DELETE', `/v1/env-variables/${f.envId}`, { token: tok }) },
  { entity: 'File Uploads', op: 'read', name: 'GET /v1/file-uploads', request: (t, tok) => t.call('GET', '/v1/file-uploads', { token: tok }) },
  { entity: 'File Uploads', op: 'create', name: 'POST /v1/file-uploads', request: (t, tok) => upload(t, tok) },
  { entity: 'File Uploads', op: 'read', name: 'GET /v1/file-uploads/{id}', request: (t, tok, f) => t.call('GET', `/v1/file-uploads/${f.uploadId}`, { token: tok }) },
  { entity: 'File Uploads', op: 'read', name: 'GET /v1/file-uploads/{id}/content', request: (t, tok, f) => t.call('GET', `/v1/file-uploads/${f.uploadId}/content`, { token: tok }) },
  { entity: 'File Uploads', op: 'delete', name: 'DELETE /v1/file-uploads/{id}', request: (t, tok, f) => t.call('DELETE', `/v1/file-uploads/${f.uploadId}`, { token: tok }) },
];

let t: TestApp;
let n = 0;
before(async () => { t = await startTestApp(); });
after(async () => { await t.close(); });

async function fixture(): Promise<Fixture> {
  const flow = await createFlow(t, { name: `matrix ${++n}`, steps: [], webhook_token_required: true });
  const runId = (await t.call('POST', `/v1/flows/${flow.id}/run`)).json().run_id;
  const env = await t.call('POST', '/v1/env-variables', { body: { name: `MATRIX_${n}`, value: 'x' } });
  const up = await upload(t, t.tenant.token);
  assert.equal(up.statusCode, 201, up.body);
  return { flow, runId, envId: env.json().id, uploadId: up.json().id };
}

test('every scope x every endpoint answers as the seed\'s scope table says', async () => {
  let shared = await fixture();
  const failures: string[] = [];
  for (const scope of SCOPES) {
    // An admin, so that only the token's scope decides (admin-only writes stay possible).
    const user = await t.newUser(t.tenant.companyId, { role: 'admin', scopes: [scope] });
    for (const ep of ENDPOINTS) {
      const f = ep.op === 'delete' ? await fixture() : shared;
      const res = await ep.request(t, user.token, f);
      const refused = res.statusCode === 403 && res.json().code === 'insufficient_scope';
      const want = expected(scope, ep.entity, ep.op);
      if (want === refused) failures.push(`${scope} ${ep.name}: expected ${want ? 'allowed' : 'refused'}, got ${res.statusCode} ${res.body.slice(0, 120)}`);
      else if (want && res.statusCode >= 400) failures.push(`${scope} ${ep.name}: allowed but failed ${res.statusCode} ${res.body.slice(0, 160)}`);
      if (refused && ep.op === 'delete') {
        // Refused deletes changed nothing.
        assert.equal((await t.call('GET', `/v1/flows/${f.flow.id}`)).statusCode, 200);
      }
    }
    shared = await fixture();
  }
  assert.deepEqual(failures, []);
});
