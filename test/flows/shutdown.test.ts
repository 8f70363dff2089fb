// SIGTERM on a real `flowgate serve`: new connections stop, the request in flight (here a
// flow run answered under `Prefer: wait`, whose step is still talking to a slow server)
// finishes with its answer, and the process exits 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeTestStore } from '../support/db.ts';
import { runCli, startServer } from '../support/process.ts';
import { startHttpServer } from '../support/servers.ts';
import { HTTP_CONNECTOR_ID } from '../../src/modules/connectors/catalogue.ts';

test('SIGTERM lets the in-flight request finish, then exits 0', async () => {
  const store = makeTestStore();
  const slow = await startHttpServer(async (_req, res) => {
    await new Promise((r) => setTimeout(r, 1500));
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"slow":true}');
  });
  const server = await startServer(store, { FLOWGATE_ADMIN_EMAIL: 'ops@shutdown.test' });
  try {
    const base = `http://127.0.0.1:${server.port}`;
    const tok = runCli(store, ['--json', 'tokens', 'create', '--email', 'ops@shutdown.test', '--scopes', 'automation', '--expiration', '1']);
    assert.equal(tok.code, 0, tok.stderr);
    const headers = { authorization: `Bearer ${JSON.parse(tok.stdout).token}`, 'content-type': 'application/json' };
    const flow = await (await fetch(`${base}/v1/flows`, {
      method: 'POST', headers,
      body: JSON.stringify({ name: 'slow', status: 'active', steps: [{ name: 'call', connector_id: HTTP_CONNECTOR_ID, action: 'request', input: { method: 'GET', url: slow.url } }] }),
    })).json() as { id: string };
    assert.ok(flow.id);

    const inFlight = fetch(`${base}/v1/flows/${flow.id}/run`, { method: 'POST', headers: { ...headers, prefer: 'wait=20' }, body: '{}' });
    // Wait until the step is talking to the slow server, then ask the process to stop.
    for (let i = 0; i < 100 && slow.requests.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(slow.requests.length, 1, 'the step reached the slow server');
    const exited = server.stop('SIGTERM');

    const res = await inFlight;
    assert.equal(res.status, 200);
    const run = await res.json() as { status: string };
    assert.equal(run.status, 'success');
    assert.equal(await exited, 0);
    await assert.rejects(fetch(`${base}/healthz`), 'no longer accepting connections');
  } finally {
    await server.stop('SIGKILL');
    await slow.close();
    await store.destroy();
  }
});
