// The durable queue: several workers (on PostgreSQL: several contexts, as several instances
// would be) never execute a run twice; a run whose worker died is queued again when its lease
// runs out; and a real `flowgate serve` killed with SIGKILL loses no accepted run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app.ts';
import { makeTestStore, TEST_DB } from '../support/db.ts';
import { startServer } from '../support/process.ts';
import { startHttpServer } from '../support/servers.ts';
import { createContext } from '../../src/context.ts';
import { startFlowWorker } from '../../src/modules/flows/index.ts';
import { HTTP_CONNECTOR_ID } from '../../src/modules/connectors/catalogue.ts';
import { createFlow, waitRun, worker } from './_helpers.ts';

const silent = { error() {}, warn() {} };

function recorder(delayMs = 0) {
  const seen = new Map<string, number>();
  return {
    seen,
    server: startHttpServer(async (req, res) => {
      const id = JSON.parse(req.body || '{}').run as string;
      seen.set(id, (seen.get(id) ?? 0) + 1);
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    }),
  };
}

async function countingFlow(t: TestApp, url: string) {
  return createFlow(t, {
    webhook_token_required: false,
    steps: [{ name: 'count', connector_id: HTTP_CONNECTOR_ID, action: 'request', input: { method: 'POST', url, body: { run: '{{ run.id }}' } } }],
  });
}

async function waitAll(t: TestApp, ids: string[], ms = 60_000) {
  const until = Date.now() + ms;
  for (;;) {
    const rows = await t.ctx.database.db.selectFrom('flow_runs' as never).select(['id', 'status', 'attempts'] as never).execute() as Array<{ id: string; status: string; attempts: number }>;
    const mine = rows.filter((r) => ids.includes(r.id));
    if (mine.every((r) => r.status === 'success' || r.status === 'error')) return mine;
    if (Date.now() > until) throw new Error(`runs did not end: ${JSON.stringify(mine.filter((r) => r.status !== 'success').slice(0, 5))}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test(`several workers${TEST_DB === 'postgres' ? ' in two instances on one PostgreSQL schema' : ''} execute each of many runs exactly once`, async () => {
  const t = await startTestApp();
  const rec = recorder(3);
  const srv = await rec.server;
  const second = TEST_DB === 'postgres' ? await createContext(t.config, { pgSchema: t.store.pgSchema }) : null;
  try {
    const flow = await countingFlow(t, srv.url);
    const ids: string[] = [];
    for (let i = 0; i < 150; i++) {
      const res = await t.app.inject({ method: 'POST', url: `/v1/flow-webhook/${flow.id}`, payload: {} });
      assert.equal(res.statusCode, 202);
      ids.push(res.json().run_id);
    }
    // All queued first, then the workers start together: the most contention for each run.
    const workers = [
      worker(t, { concurrency: 4, pollMs: 10 }),
      worker(t, { concurrency: 4, pollMs: 10 }),
      second ? startFlowWorker(second, silent, { concurrency: 4, pollMs: 10 }) : worker(t, { concurrency: 3, pollMs: 10 }),
    ];
    const rows = await waitAll(t, ids);
    assert.ok(rows.every((r) => r.status === 'success' && r.attempts === 1), JSON.stringify(rows.filter((r) => r.status !== 'success' || r.attempts !== 1).slice(0, 3)));
    assert.equal(rec.seen.size, ids.length);
    const twice = [...rec.seen].filter(([, n]) => n !== 1);
    assert.deepEqual(twice, [], 'a run executed more than once');
    for (const id of ids) assert.equal(rec.seen.get(id), 1);
    // Every worker took part (otherwise the test proves nothing about concurrency).
    for (const w of workers) assert.ok(w.executed > 0, `worker ${w.id} executed nothing`);
  } finally {
    await second?.close();
    await t.close();
    await srv.close();
  }
});

test('a running run whose worker stopped renewing its lease is queued again and completes; after too many tries it ends in error', async () => {
  const t = await startTestApp();
  const rec = recorder();
  const srv = await rec.server;
  try {
    const flow = await countingFlow(t, srv.url);
    const db = t.ctx.database.db;
    const past = new Date(Date.now() - 60_000).toISOString();
    const accept = async () => (await t.app.inject({ method: 'POST', url: `/v1/flow-webhook/${flow.id}`, payload: {} })).json().run_id as string;
    const dead = await accept();
    const hopeless = await accept();
    const alive = await accept();
    // As a worker that crashed mid-run would leave them.
    await db.updateTable('flow_runs' as never).set({ status: 'running', lease_owner: 'dead-worker', lease_expires_at: past, attempts: 1 } as never).where('id' as never, '=', dead as never).execute();
    await db.updateTable('flow_runs' as never).set({ status: 'running', lease_owner: 'dead-worker', lease_expires_at: past, attempts: 3 } as never).where('id' as never, '=', hopeless as never).execute();
    // A run held by a live worker (lease in the future) is left alone.
    const future = new Date(Date.now() + 600_000).toISOString();
    await db.updateTable('flow_runs' as never).set({ status: 'running', lease_owner: 'live-worker', lease_expires_at: future, attempts: 1 } as never).where('id' as never, '=', alive as never).execute();

    worker(t, { leaseSeconds: 2 });
    const run = await waitRun(t, dead);
    assert.equal(run.status, 'success');
    assert.equal(run.attempts, 2);
    const failed = await waitRun(t, hopeless);
    assert.equal(failed.status, 'error');
    assert.equal(failed.error.code, 'run_interrupted');
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal((await t.call('GET', `/v1/flow-runs/${alive}`)).json().status, 'running');
    assert.equal(rec.seen.get(alive), undefined);
  } finally {
    await t.close();
    await srv.close();
  }
});

test('kill -9 and restart: accepted runs are executed, a run cut off mid-step runs again', { timeout: 120_000 }, async () => {
  const store = makeTestStore();
  const rec = recorder();
  const fast = await rec.server;
  let release: () => void = () => {};
  let hung = new Promise<void>((r) => { release = r; });
  const slowSeen: string[] = [];
  const slow = await startHttpServer(async (req, res) => {
    slowSeen.push(JSON.parse(req.body).run);
    await hung;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  const servers: Array<{ stop(signal?: NodeJS.Signals): Promise<number | null> }> = [];
  try {
    // Set up with an in-process flowgate on the same store, then hand the store to real servers.
    const t = await startTestApp({}, store);
    const token = t.tenant.token;
    const flow = await countingFlow(t, fast.url);
    const slowFlow = await countingFlow(t, slow.url);
    await t.close();

    const post = (port: number, id: string) => fetch(`http://127.0.0.1:${port}/v1/flow-webhook/${id}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    const getRun = async (port: number, id: string) => (await fetch(`http://127.0.0.1:${port}/v1/flow-runs/${id}`, { headers: { authorization: `Bearer ${token}` } })).json();

    // 1. The worker is off: runs are accepted (202) and only queued. Then SIGKILL.
    const s1 = await startServer(store, { FLOWGATE_WORKER_CONCURRENCY: '0' });
    servers.push(s1);
    const queued: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await post(s1.port, flow.id);
      assert.equal(res.status, 202);
      queued.push((await res.json()).run_id);
    }
    await s1.stop('SIGKILL');
    assert.equal(rec.seen.size, 0);

    // 2. Restarted with a worker: every accepted run is executed, once. A slow run is then
    //    caught in the middle of its step by another SIGKILL.
    const s2 = await startServer(store, { FLOWGATE_WORKER_CONCURRENCY: '2', FLOWGATE_WORKER_LEASE_SECONDS: '2' });
    servers.push(s2);
    for (const id of queued) {
      const until = Date.now() + 30_000;
      let run;
      while ((run = await getRun(s2.port, id)).status !== 'success') {
        assert.notEqual(run.status, 'error', JSON.stringify(run));
        assert.ok(Date.now() < until, `run ${id} did not complete: ${JSON.stringify(run)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    for (const id of queued) assert.equal(rec.seen.get(id), 1);
    const slowRun = (await (await post(s2.port, slowFlow.id)).json()).run_id;
    const until = Date.now() + 20_000;
    while (!slowSeen.includes(slowRun)) {
      assert.ok(Date.now() < until, 'the slow step never started');
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.equal((await getRun(s2.port, slowRun)).status, 'running');
    await s2.stop('SIGKILL');

    // 3. Restarted again: the interrupted run's lease runs out, it is queued again and completes.
    release();
    hung = Promise.resolve();
    const s3 = await startServer(store, { FLOWGATE_WORKER_CONCURRENCY: '2', FLOWGATE_WORKER_LEASE_SECONDS: '2' });
    servers.push(s3);
    const until3 = Date.now() + 30_000;
    let run;
    while ((run = await getRun(s3.port, slowRun)).status !== 'success') {
      assert.ok(Date.now() < until3, `the interrupted run did not complete: ${JSON.stringify(run)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(run.attempts, 2);
    assert.equal(slowSeen.filter((id) => id === slowRun).length, 2, 'at-least-once: the cut-off step ran again');
    await s3.stop('SIGTERM');
  } finally {
    for (const s of servers) await s.stop('SIGKILL');
    release();
    await fast.close();
    await slow.close();
    await store.destroy();
  }
});

test('stopping a worker gives a run still in progress after the grace period back to the queue', async () => {
  const t = await startTestApp();
  let release: () => void = () => {};
  const hung = new Promise<void>((r) => { release = r; });
  let hits = 0;
  const slow = await startHttpServer(async (_req, res) => {
    hits++;
    if (hits === 1) await hung;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  try {
    const flow = await countingFlow(t, slow.url);
    const w = worker(t, { shutdownGraceMs: 200 });
    const id = (await t.app.inject({ method: 'POST', url: `/v1/flow-webhook/${flow.id}`, payload: {} })).json().run_id;
    while (hits === 0) await new Promise((r) => setTimeout(r, 20));
    await w.stop();
    const run = (await t.call('GET', `/v1/flow-runs/${id}`)).json();
    assert.equal(run.status, 'queued', JSON.stringify(run));
    assert.equal(run.error, null);
    worker(t);
    assert.equal((await waitRun(t, id)).status, 'success');
  } finally {
    release();
    await t.close();
    await slow.close();
  }
});
