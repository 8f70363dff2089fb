// Helpers for the connector runtime tests (not a test file itself).
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { ActionContext, ResolvedCredential } from '../../src/modules/connectors/runtime/types.ts';

export function ctx(timeoutMs = 5_000, signal: AbortSignal = new AbortController().signal): ActionContext {
  return { signal, timeoutMs };
}

export function cred(over: Partial<ResolvedCredential>): ResolvedCredential {
  return {
    authType: 'username_password',
    apiEndpoint: null,
    username: null,
    password: null,
    authToken: null,
    authDetails: null,
    ...over,
  };
}

export function tempDir(prefix: string): { dir: string; remove(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** A port on 127.0.0.1 that nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

/** Accepts TCP connections and never says a word: every protocol's handshake hangs. */
export async function startSilentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const srv = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return {
    port: (srv.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        srv.close(() => r());
      }),
  };
}

/** A password with characters that URL-encode differently, so encoded leaks are caught too. */
export const TRICKY_PASSWORD = 'pä$$ w/rd:@#%?+zq7';
