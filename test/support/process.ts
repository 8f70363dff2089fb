// Runs the real `flowgate` command and server as child processes on a test store.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { TestStore } from './db.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
export const BIN = path.join(ROOT, 'bin/flowgate.js');

export function storeEnv(store: TestStore, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, FLOWGATE_DATA_DIR: store.dataDir, FLOWGATE_LOG_LEVEL: 'info', ...extra };
  delete env.DATABASE_URL;
  delete env.FLOWGATE_PG_SCHEMA;
  if (store.databaseUrl) {
    env.DATABASE_URL = store.databaseUrl;
    env.FLOWGATE_PG_SCHEMA = store.pgSchema;
  }
  return { ...env, ...extra };
}

export function runCli(store: TestStore, args: string[], extra: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', BIN, ...args], { env: storeEnv(store, extra), encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

export interface ServerProcess { child: ChildProcess; port: number; output: () => string; stop(signal?: NodeJS.Signals): Promise<number | null> }

export async function startServer(store: TestStore, extra: Record<string, string> = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', BIN, 'serve'], {
    env: storeEnv(store, { PORT: '0', ...extra }), stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => { out += d; });
  child.stderr!.on('data', (d) => { out += d; });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server did not start:\n' + out)), 30_000);
    const check = () => {
      const m = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    };
    child.stdout!.on('data', check);
    child.on('exit', () => { clearTimeout(timer); reject(new Error('server exited:\n' + out)); });
  });
  return {
    child, port, output: () => out,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}
