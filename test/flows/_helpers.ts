// Helpers for the flow tests (not a test file itself).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import type { LightMyRequestResponse } from 'fastify';
import type { TestApp } from '../support/app.ts';
import { startFlowWorker, type Worker } from '../../src/modules/flows/index.ts';
import type { WorkerOptions } from '../../src/modules/flows/worker.ts';
import { startSftpServer, startFtpServer, type TestServer } from '../support/servers.ts';

export const ZERO_UUID = '00000000-0000-4000-8000-000000000000';

/** A worker on the test app's context with a quick poll; stopped by t.close(). */
export function worker(t: TestApp, opts: Partial<WorkerOptions> = {}): Worker {
  return startFlowWorker(t.ctx, t.app.log, { concurrency: 4, pollMs: 50, ...opts });
}

export async function createAuth(t: TestApp, body: Record<string, unknown>, token?: string): Promise<string> {
  const res = await t.call('POST', '/v1/connector-auths', { body: { name: 'auth', ...body }, ...(token ? { token } : {}) });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().id;
}

export async function createFlow(t: TestApp, body: Record<string, unknown>, token?: string): Promise<Record<string, any>> {
  const res = await t.call('POST', '/v1/flows', { body: { name: 'flow', status: 'active', ...body }, ...(token ? { token } : {}) });
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

/** POST to a flow's webhook with its token in X-Webhook-Token (or none), no Authorization. */
export function webhook(t: TestApp, flowId: string, opts: { query?: Record<string, string>; body?: unknown; token?: string | null; headers?: Record<string, string>; remoteAddress?: string } = {}): Promise<LightMyRequestResponse> {
  const qs = opts.query ? '?' + new URLSearchParams(opts.query).toString() : '';
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token) headers['x-webhook-token'] = opts.token;
  return t.app.inject({
    method: 'POST', url: `/v1/flow-webhook/${flowId}${qs}`, headers,
    ...(opts.body !== undefined ? { payload: opts.body as object } : {}),
    ...(opts.remoteAddress ? { remoteAddress: opts.remoteAddress } : {}),
  });
}

/** Polls the run until it ends (or fails the test after `ms`). */
export async function waitRun(t: TestApp, runId: string, ms = 15_000, token?: string): Promise<Record<string, any>> {
  const until = Date.now() + ms;
  for (;;) {
    const res = await t.call('GET', `/v1/flow-runs/${runId}`, token ? { token } : {});
    assert.equal(res.statusCode, 200, res.body);
    const run = res.json();
    if (run.status === 'success' || run.status === 'error') return run;
    if (Date.now() > until) throw new Error(`run ${runId} did not end in ${ms} ms: ${res.body}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export async function steps(t: TestApp, runId: string): Promise<Record<string, any>[]> {
  const res = await t.call('GET', `/v1/flow-runs/${runId}/steps`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json().data;
}

export async function countRows(t: TestApp, table: string): Promise<number> {
  const r = await sql<{ n: number }>`select count(*) as n from ${sql.table(table)}`.execute(t.ctx.database.db);
  return Number(r.rows[0].n);
}

/** Every text value of every row of every table: what an attacker reading the database sees. */
export async function dumpDatabase(t: TestApp): Promise<string> {
  const db = t.ctx.database;
  let tables: string[];
  if (db.kind === 'postgres') {
    const r = await sql<{ t: string }>`select table_name as t from information_schema.tables where table_schema = current_schema()`.execute(db.db);
    tables = r.rows.map((x) => x.t);
  } else {
    const r = await sql<{ t: string }>`select name as t from sqlite_master where type = 'table'`.execute(db.db);
    tables = r.rows.map((x) => x.t);
  }
  let out = '';
  for (const table of tables) {
    const rows = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(db.db);
    out += JSON.stringify(rows.rows) + '\n';
  }
  if (db.file) {
    // The raw file and its WAL as well: deleted or old row versions live there too.
    for (const f of [db.file, db.file + '-wal']) if (fs.existsSync(f)) out += fs.readFileSync(f).toString('latin1');
  }
  return out;
}

export interface FileServers {
  root: string;
  servers: TestServer[];
  close(): Promise<void>;
}

/** A directory on disk served by a fresh SFTP or FTP server with one user. */
export async function fileServer(kind: 'sftp' | 'ftp', user: string, password: string): Promise<{ root: string; port: number; close(): Promise<void> }> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `flowgate-${kind}-`));
  const srv = kind === 'sftp' ? await startSftpServer({ username: user, password, root }) : await startFtpServer({ username: user, password, root });
  return {
    root, port: srv.port,
    async close() {
      await srv.close();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Every file below `dir`, relative, sorted. */
export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(path.relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

/** A multipart/form-data body with one file part. */
export function multipart(field: string, filename: string, content: Buffer, type = 'application/octet-stream'): { payload: Buffer; headers: Record<string, string> } {
  const boundary = '----flowgate' + Math.random().toString(16).slice(2);
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: ${type}\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const payload = Buffer.concat([head, content, tail]);
  return { payload, headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(payload.length) } };
}
