// `npm run bench`: starts a bare Fastify baseline and flowgate (SQLite, then PostgreSQL) as
// child processes, drives each scenario with autocannon from this process, and prints
// requests/s, p50, p99 and the ratio to the baseline. Results go to bench/results.json.
// BENCH_SECONDS (default 10) and BENCH_CONNECTIONS (default 50) tune the run;
// BENCH_DB=sqlite|postgres|both (default both).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import autocannon from 'autocannon';
import pg from 'pg';
import { scenarios, type BenchTarget, type Scenario } from './scenarios.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const WARMUP = Math.max(1, Math.min(3, SECONDS / 3));
const PG_URL = process.env.FLOWGATE_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const DBS = (process.env.BENCH_DB ?? 'both') === 'both' ? ['sqlite', 'postgres'] : [process.env.BENCH_DB!];

interface Result { scenario: string; db: string; rps: number; p50: number; p99: number; ratio: number; errors: number; non2xx: number }

function startProcess(args: string[], env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('did not start: ' + out)), 30_000);
    const onData = (d: Buffer) => {
      out += d;
      const m = /listening (http:\/\/[^\s"]+)|Server listening at (http:\/\/[^\s"]+)/.exec(out);
      if (m) { clearTimeout(timer); resolve({ child, url: (m[1] ?? m[2]).replace(/"$/, '') }); }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d) => { out += d; });
    child.on('exit', (c) => { clearTimeout(timer); reject(new Error(`exited ${c}: ${out}`)); });
  });
}

async function freePort(): Promise<number> {
  const net = await import('node:net');
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

async function waitHealthy(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error('flowgate exited during start');
    try {
      if ((await fetch(url + '/healthz')).ok) return;
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('flowgate did not become healthy');
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const done = new Promise((r) => child.on('exit', r));
  child.kill('SIGTERM');
  await done;
}

async function load(url: string, opts: { method?: string; headers?: Record<string, string>; body?: string; requests?: autocannon.Request[]; connections?: number; seconds?: number }) {
  const base = { url, connections: opts.connections ?? CONNECTIONS, method: (opts.method ?? 'GET') as 'GET', headers: opts.headers, body: opts.body, requests: opts.requests };
  await autocannon({ ...base, duration: WARMUP });
  const r = await autocannon({ ...base, duration: opts.seconds ?? SECONDS });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts, non2xx: r.non2xx };
}

async function flowgateTarget(db: string, httpTarget: string): Promise<{ target: BenchTarget; close(): Promise<void> }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flowgate-bench-'));
  const schema = 'bench_' + crypto.randomBytes(4).toString('hex');
  // The webhook rate limit would otherwise stop the load after 300 requests.
  const env: NodeJS.ProcessEnv = { ...process.env, FLOWGATE_DATA_DIR: dataDir, FLOWGATE_LOG_LEVEL: 'warn', PORT: '0', FLOWGATE_ADMIN_EMAIL: 'bench@example.com', FLOWGATE_WEBHOOK_RATE_LIMIT: '1000000' };
  delete env.DATABASE_URL;
  if (db === 'postgres') Object.assign(env, { DATABASE_URL: PG_URL, FLOWGATE_PG_SCHEMA: schema });
  const cli = (...args: string[]) => {
    const r = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', path.join(ROOT, 'bin/flowgate.js'), '--json', ...args], { env, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`flowgate ${args.join(' ')}: ${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  // Logs at warn: per-request info lines would measure pino and the pipe, not flowgate.
  const port = await freePort();
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', path.join(ROOT, 'bin/flowgate.js'), 'serve'], { env: { ...env, PORT: String(port) }, stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  await waitHealthy(url, child);
  const token: string = cli('tokens', 'create', '--email', 'bench@example.com', '--scopes', 'automation,company,connector_auth,connectors', '--expiration', 'never', '--note', 'bench').token;
  const me = await (await fetch(`${url}/v1/users?filter=email,eq,"bench@example.com"`, { headers: { authorization: `Bearer ${token}` } })).json() as { data: Array<{ id: string }> };
  const target: BenchTarget = { db, url, token, userId: me.data[0].id, env, cli, dataDir, pgUrl: db === 'postgres' ? PG_URL : null, pgSchema: db === 'postgres' ? schema : null, httpTarget };
  return {
    target,
    async close() {
      await stop(child);
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (db === 'postgres') {
        const c = new pg.Client({ connectionString: PG_URL });
        await c.connect();
        await c.query(`drop schema if exists "${schema}" cascade`);
        await c.end();
      }
    },
  };
}

const results: Result[] = [];
const baseline = await startProcess([path.join(ROOT, 'bench/baseline.ts')], process.env);
const base = await load(baseline.url, {});
await stop(baseline.child);
// The same hello-world serves as the external system that flow steps call.
const stepTarget = await startProcess([path.join(ROOT, 'bench/baseline.ts')], process.env);
process.stdout.write(`baseline (bare Fastify hello-world): ${base.rps.toFixed(0)} req/s, p50 ${base.p50} ms, p99 ${base.p99} ms\n`);
results.push({ scenario: 'baseline: bare Fastify GET /', db: '-', ...base, ratio: 1 });

for (const db of DBS) {
  const ft = await flowgateTarget(db, stepTarget.url + '/');
  try {
    for (const s of scenarios as Scenario[]) {
      if (s.dbs && !s.dbs.includes(db)) continue;
      const spec = await s.setup(ft.target);
      const r = spec.custom ? await spec.custom() : await load(ft.target.url + spec.path, spec);
      const res: Result = { scenario: s.name, db, ...r, ratio: r.rps / base.rps };
      results.push(res);
      process.stdout.write(`${db.padEnd(8)} ${s.name.padEnd(52)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${String(r.p50).padStart(4)} ms  p99 ${String(r.p99).padStart(4)} ms  ratio ${res.ratio.toFixed(2)}${r.errors || r.non2xx ? `  (errors ${r.errors}, non-2xx ${r.non2xx})` : ''}\n`);
    }
  } finally {
    await ft.close();
  }
}

await stop(stepTarget.child);
const out = { measured_at: new Date().toISOString(), machine: { cpus: os.cpus().length, node: process.version }, seconds: SECONDS, connections: CONNECTIONS, results };
fs.writeFileSync(path.join(ROOT, 'bench/results.json'), JSON.stringify(out, null, 2) + '\n');
process.stdout.write('\nwritten to bench/results.json\n');
