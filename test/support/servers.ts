// Real protocol servers for tests, all on 127.0.0.1 with OS-assigned ports:
//   startSftpServer  ssh2 Server with an SFTP subsystem over a directory on disk
//   startFtpServer   ftp-srv over a directory on disk
//   startHttpServer  node:http, records requests, answers through a handler (default: JSON echo)
// Each returns { port, close() }; close() ends open connections so `node --test` can exit.
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';
import ssh2 from 'ssh2';
import { FtpSrv } from 'ftp-srv';

export interface UserPassServerOptions {
  username: string;
  password: string;
  /** Directory on disk served as '/'. */
  root: string;
}

export interface TestServer {
  port: number;
  close(): Promise<void>;
}

function sameSecret(given: string, expected: string): boolean {
  const a = crypto.createHash('sha256').update(given).digest();
  const b = crypto.createHash('sha256').update(expected).digest();
  return crypto.timingSafeEqual(a, b);
}

// ---------------------------------------------------------------- SFTP

let hostKey: string | undefined;
/** An ECDSA P-256 host key in SEC1 PEM ("EC PRIVATE KEY"), a format ssh2's key parser reads. */
function sftpHostKey(): string {
  hostKey ??= crypto
    .generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
    .privateKey.export({ type: 'sec1', format: 'pem' })
    .toString();
  return hostKey;
}

const { STATUS_CODE, flagsToString } = ssh2.utils.sftp;

function statusFor(err: unknown): number {
  switch ((err as NodeJS.ErrnoException)?.code) {
    case 'ENOENT':
    case 'ENOTDIR':
      return STATUS_CODE.NO_SUCH_FILE;
    case 'EACCES':
    case 'EPERM':
      return STATUS_CODE.PERMISSION_DENIED;
    default:
      return STATUS_CODE.FAILURE;
  }
}

function toAttrs(st: fs.Stats): ssh2.Attributes {
  return {
    mode: st.mode,
    uid: st.uid,
    gid: st.gid,
    size: st.size,
    atime: Math.floor(st.atimeMs / 1000),
    mtime: Math.floor(st.mtimeMs / 1000),
  };
}

function longname(name: string, st: fs.Stats): string {
  const type = st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : '-';
  const perms = (st.mode & 0o777).toString(8).padStart(3, '0');
  const rwx = [...perms].map((d) => {
    const n = Number(d);
    return (n & 4 ? 'r' : '-') + (n & 2 ? 'w' : '-') + (n & 1 ? 'x' : '-');
  });
  const date = st.mtime.toUTCString().slice(5, 16); // "01 Jan 2026"
  return `${type}${rwx.join('')} 1 ${st.uid} ${st.gid} ${st.size} ${date} ${name}`;
}

type OpenHandle = { kind: 'file'; fd: number } | { kind: 'dir'; entries: ssh2.FileEntry[]; sent: boolean };

export async function startSftpServer(opts: UserPassServerOptions): Promise<TestServer> {
  const root = path.resolve(opts.root);
  /** Client path (absolute, or relative to the login directory '/') to a path on disk below root. */
  const toDisk = (p: string) => path.join(root, path.posix.resolve('/', p));
  const clients = new Set<ssh2.Connection>();

  const server = new ssh2.Server({ hostKeys: [sftpHostKey()] }, (client) => {
    clients.add(client);
    // Small request/response packets: without this, Nagle + delayed ACKs cost ~80 ms per SFTP op.
    (client as unknown as { setNoDelay(on: boolean): void }).setNoDelay(true);
    client.on('close', () => clients.delete(client));
    client.on('error', () => {
      // clients that vanish mid-session (tests abort on purpose)
    });
    client.on('authentication', (ctx) => {
      if (
        ctx.method === 'password' &&
        sameSecret(ctx.username, opts.username) &&
        sameSecret(ctx.password, opts.password)
      ) {
        ctx.accept();
      } else {
        ctx.reject(['password']);
      }
    });
    client.on('ready', () => {
      client.on('session', (acceptSession) => {
        const session = acceptSession();
        session.on('sftp', (acceptSftp) => {
          const sftp = acceptSftp();
          const handles = new Map<number, OpenHandle>();
          let nextHandle = 1;
          const newHandle = (h: OpenHandle) => {
            const id = nextHandle++;
            handles.set(id, h);
            const buf = Buffer.alloc(4);
            buf.writeUInt32BE(id, 0);
            return buf;
          };
          const lookup = (handle: Buffer) => (handle.length === 4 ? handles.get(handle.readUInt32BE(0)) : undefined);
          const fail = (reqid: number) => (err: unknown) => sftp.status(reqid, statusFor(err));
          const ok = (reqid: number) => () => sftp.status(reqid, STATUS_CODE.OK);

          sftp.on('close', () => {
            for (const h of handles.values()) if (h.kind === 'file') fs.close(h.fd, () => {});
            handles.clear();
          });

          sftp.on('OPEN', (reqid, filename, flags) => {
            const mode = flagsToString(flags);
            if (!mode) return sftp.status(reqid, STATUS_CODE.OP_UNSUPPORTED);
            fs.open(toDisk(filename), mode, 0o644, (err, fd) =>
              err ? sftp.status(reqid, statusFor(err)) : sftp.handle(reqid, newHandle({ kind: 'file', fd })),
            );
          });
          sftp.on('READ', (reqid, handle, offset, length) => {
            const h = lookup(handle);
            if (h?.kind !== 'file') return sftp.status(reqid, STATUS_CODE.FAILURE);
            const buf = Buffer.alloc(length);
            fs.read(h.fd, buf, 0, length, offset, (err, n) => {
              if (err) return sftp.status(reqid, statusFor(err));
              if (n === 0) return sftp.status(reqid, STATUS_CODE.EOF);
              sftp.data(reqid, buf.subarray(0, n));
            });
          });
          sftp.on('WRITE', (reqid, handle, offset, data) => {
            const h = lookup(handle);
            if (h?.kind !== 'file') return sftp.status(reqid, STATUS_CODE.FAILURE);
            fs.write(h.fd, data, 0, data.length, offset, (err) =>
              sftp.status(reqid, err ? statusFor(err) : STATUS_CODE.OK),
            );
          });
          sftp.on('FSTAT', (reqid, handle) => {
            const h = lookup(handle);
            if (h?.kind !== 'file') return sftp.status(reqid, STATUS_CODE.FAILURE);
            fs.fstat(h.fd, (err, st) => (err ? sftp.status(reqid, statusFor(err)) : sftp.attrs(reqid, toAttrs(st))));
          });
          sftp.on('FSETSTAT', (reqid) => sftp.status(reqid, STATUS_CODE.OK));
          sftp.on('SETSTAT', (reqid) => sftp.status(reqid, STATUS_CODE.OK));
          sftp.on('CLOSE', (reqid, handle) => {
            const h = lookup(handle);
            if (!h) return sftp.status(reqid, STATUS_CODE.FAILURE);
            handles.delete(handle.readUInt32BE(0));
            if (h.kind === 'file') fs.close(h.fd, (err) => sftp.status(reqid, err ? statusFor(err) : STATUS_CODE.OK));
            else sftp.status(reqid, STATUS_CODE.OK);
          });
          sftp.on('STAT', (reqid, p) => {
            fsp.stat(toDisk(p)).then((st) => sftp.attrs(reqid, toAttrs(st)), fail(reqid));
          });
          sftp.on('LSTAT', (reqid, p) => {
            fsp.lstat(toDisk(p)).then((st) => sftp.attrs(reqid, toAttrs(st)), fail(reqid));
          });
          sftp.on('OPENDIR', (reqid, p) => {
            const dir = toDisk(p);
            fsp
              .readdir(dir)
              .then(async (names) => {
                const entries: ssh2.FileEntry[] = [];
                for (const name of names.sort()) {
                  const st = await fsp.lstat(path.join(dir, name));
                  entries.push({ filename: name, longname: longname(name, st), attrs: toAttrs(st) as ssh2.Stats });
                }
                sftp.handle(reqid, newHandle({ kind: 'dir', entries, sent: false }));
              })
              .catch(fail(reqid));
          });
          sftp.on('READDIR', (reqid, handle) => {
            const h = lookup(handle);
            if (h?.kind !== 'dir') return sftp.status(reqid, STATUS_CODE.FAILURE);
            if (h.sent || h.entries.length === 0) return sftp.status(reqid, STATUS_CODE.EOF);
            h.sent = true;
            sftp.name(reqid, h.entries);
          });
          sftp.on('REMOVE', (reqid, p) => {
            fsp.unlink(toDisk(p)).then(ok(reqid), fail(reqid));
          });
          sftp.on('RMDIR', (reqid, p) => {
            fsp.rmdir(toDisk(p)).then(ok(reqid), fail(reqid));
          });
          sftp.on('MKDIR', (reqid, p) => {
            fsp.mkdir(toDisk(p)).then(ok(reqid), fail(reqid));
          });
          sftp.on('RENAME', (reqid, from, to) => {
            fsp.rename(toDisk(from), toDisk(to)).then(ok(reqid), fail(reqid));
          });
          sftp.on('REALPATH', (reqid, p) => {
            const abs = path.posix.resolve('/', p);
            sftp.name(reqid, [{ filename: abs, longname: abs, attrs: {} as ssh2.Stats }]);
          });
        });
      });
    });
  });
  server.on('error', () => {});

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of clients) c.end();
        server.close(() => resolve());
        // connections that do not end politely
        setTimeout(() => {
          for (const c of clients) (c as unknown as { _sock?: Socket })._sock?.destroy();
        }, 200).unref();
      }),
  };
}

// ---------------------------------------------------------------- FTP

/** A bunyan-shaped logger that drops everything (ftp-srv logs to stdout by default). */
function silentLogger(): Record<string, unknown> {
  const noop = () => {};
  const log: Record<string, unknown> = { trace: noop, debug: noop, info: noop, warn: noop, error: noop, fatal: noop };
  log.child = () => log;
  return log;
}

const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGQUIT'] as const;

export async function startFtpServer(opts: UserPassServerOptions): Promise<TestServer> {
  const root = path.resolve(opts.root);
  // ftp-srv adds process signal listeners in its constructor and never removes them; note them
  // so close() can.
  const before = new Map(SIGNALS.map((s) => [s, new Set(process.listeners(s))]));
  const server = new FtpSrv({
    url: 'ftp://127.0.0.1:0',
    // Passive data ports: pasv_min = pasv_max = 0 makes each passive listener bind port 0, so the
    // OS hands out a free ephemeral port (ftp-srv replies with the port it actually got).
    pasv_url: '127.0.0.1',
    pasv_min: 0,
    pasv_max: 0,
    anonymous: false,
    greeting: 'flowgate test ftp server',
    log: silentLogger(),
  });
  const added = SIGNALS.flatMap((s) =>
    process.listeners(s).filter((l) => !before.get(s)!.has(l)).map((l) => [s, l] as const),
  );
  server.on('login', ({ username, password }, resolve, reject) => {
    if (sameSecret(username, opts.username) && sameSecret(password, opts.password)) resolve({ root });
    else reject(new Error('Login incorrect'));
  });
  server.on('client-error', () => {});

  await server.listen();
  const inner = (server as unknown as { server: import('node:net').Server }).server;
  const port = (inner.address() as AddressInfo).port;
  return {
    port,
    close: async () => {
      for (const [s, l] of added) process.off(s, l as (...a: unknown[]) => void);
      await server.close();
    },
  };
}

// ---------------------------------------------------------------- HTTP

export interface RecordedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export type HttpHandler = (req: RecordedRequest, res: http.ServerResponse) => void | Promise<void>;

export interface TestHttpServer extends TestServer {
  /** 'http://127.0.0.1:<port>' (no trailing slash). */
  url: string;
  requests: RecordedRequest[];
}

/** Default handler: 200 with a JSON echo of the request. */
export const echoHandler: HttpHandler = (req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(req));
};

export async function startHttpServer(handler: HttpHandler = echoHandler): Promise<TestHttpServer> {
  const requests: RecordedRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rec: RecordedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(rec);
      Promise.resolve()
        .then(() => handler(rec, res))
        .catch(() => {
          if (!res.headersSent) res.writeHead(500);
          res.end();
        });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
