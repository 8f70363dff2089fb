// SFTP connector (ssh2-sftp-client over ssh2, pure JS).
//
// Host keys: every host key is accepted. The runtime has no store of known host keys yet, and a
// credential test is usually the first contact with a server, so there is nothing to compare a
// key against; tests also run against servers with freshly generated keys. Host-key pinning is
// not implemented: a network attacker between flowgate and the SFTP server can impersonate it.
import type { Client as SshClient } from 'ssh2';
import SftpClient from 'ssh2-sftp-client';
import {
  asInputObject,
  CappedCollector,
  decodeContent,
  encodeContent,
  mapNetworkError,
  MAX_FILE_BYTES,
  requireFilePath,
  tooLarge,
  withDeadline,
} from './common.ts';
import { hostLabel, parseEndpoint, resolveRemotePath, type Endpoint } from './endpoint.ts';
import { credentialSecrets, scrubSecrets } from './scrub.ts';
import {
  ConnectorError,
  type ActionContext,
  type DeleteFileOutput,
  type DownloadFileOutput,
  type FileEntry,
  type ListFilesOutput,
  type ResolvedCredential,
  type UploadFileOutput,
} from './types.ts';

// SFTP status codes (ssh2 reports them as err.code on failed requests).
const SFTP_NO_SUCH_FILE = 2;
const SFTP_PERMISSION_DENIED = 3;

const END_GRACE_MS = 2_000;

type Op = 'connect' | 'list_files' | 'upload_file' | 'download_file' | 'delete_file';

/** Error of one SFTP operation as a ConnectorError; never quotes the library message. */
function mapError(err: unknown, ep: Endpoint, op: Op, relPath: string): ConnectorError {
  if (err instanceof ConnectorError) return err;
  const where = hostLabel(ep);
  const e = err as { code?: unknown; message?: unknown; level?: unknown };
  const message = typeof e?.message === 'string' ? e.message : '';
  const net = mapNetworkError(err, where);
  if (net) return net;
  if (/authentication methods failed/i.test(message) || e?.code === 'ERR_BAD_AUTH') {
    return new ConnectorError('authentication_failed', `authentication failed for user ${ep.user ?? '(none)'} at ${where}`);
  }
  if (/timed out/i.test(message)) return new ConnectorError('timeout', `SFTP connection to ${where} timed out`);
  const shown = relPath === '' ? '(base path)' : relPath;
  if (e?.code === SFTP_NO_SUCH_FILE || e?.code === 'ENOENT') {
    return new ConnectorError('not_found', `no such file or directory: ${shown}`);
  }
  if (e?.code === SFTP_PERMISSION_DENIED || e?.code === 'EACCES') {
    return new ConnectorError('protocol_error', `permission denied: ${shown}`);
  }
  if (op === 'connect') return new ConnectorError('protocol_error', `SFTP session with ${where} could not be established`);
  const status = typeof e?.code === 'number' ? ` (SFTP status ${e.code})` : '';
  return new ConnectorError('protocol_error', `SFTP ${op} failed for ${shown}${status}`);
}

/**
 * Connects, runs `fn`, and always closes the connection. The whole call is bounded by
 * ctx.timeoutMs / ctx.signal; on expiry the socket is destroyed.
 */
async function withSession<T>(
  cred: ResolvedCredential,
  ep: Endpoint,
  ctx: ActionContext,
  op: Op,
  relPath: string,
  fn: (client: SftpClient) => Promise<T>,
): Promise<T> {
  const secrets = credentialSecrets(cred, [ep.password]);
  if (!ep.user) throw new ConnectorError('bad_input', 'the SFTP credential has no username');
  // Library-level logging goes nowhere: the default callbacks print library messages.
  const client = new SftpClient('flowgate', { error: () => {}, end: () => {}, close: () => {} });
  const ssh = (client as unknown as { client: SshClient }).client;
  const where = hostLabel(ep);
  let connected = false;
  let cancelled = false;
  try {
    return await withDeadline(
      ctx,
      `SFTP ${op === 'connect' ? 'connection to' : op + ' on'} ${where}`,
      () => {
        cancelled = true;
        ssh.destroy();
      },
      async () => {
        // Servers that take passwords only through keyboard-interactive get the password as the
        // answer to their prompts.
        ssh.on('keyboard-interactive', (_name, _instructions, _lang, prompts, finish) => {
          finish(prompts.map(() => ep.password ?? ''));
        });
        try {
          const connecting = client.connect({
            host: ep.host,
            port: ep.port,
            username: ep.user!,
            password: ep.password ?? undefined,
            readyTimeout: Math.max(1, Math.min(ctx.timeoutMs > 0 ? ctx.timeoutMs : 30_000, 60_000)),
            tryKeyboard: ep.password !== null,
            // See the file header: any host key is accepted (no pinning).
            hostVerifier: () => true,
          });
          // SFTP is many small request/response packets: disable Nagle (the socket exists now).
          ssh.setNoDelay(true);
          await connecting;
        } catch (err) {
          throw mapError(err, ep, 'connect', '');
        }
        connected = true;
        try {
          return await fn(client);
        } catch (err) {
          throw mapError(err, ep, op, relPath);
        }
      },
    );
  } catch (err) {
    const ce = err instanceof ConnectorError ? err : mapError(err, ep, op, relPath);
    throw new ConnectorError(ce.code, scrubSecrets(ce.message, secrets), ce.status);
  } finally {
    // After a cancel the socket is already destroyed: no polite goodbye to wait for.
    await closeQuietly(client, ssh, connected && !cancelled);
  }
}

async function closeQuietly(client: SftpClient, ssh: SshClient, connected: boolean): Promise<void> {
  if (connected) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      client.end().catch(() => false),
      new Promise((r) => {
        timer = setTimeout(r, END_GRACE_MS);
      }),
    ]);
    clearTimeout(timer);
  }
  try {
    ssh.destroy();
  } catch {
    // already gone
  }
}

/** Logs in and lists the base path. */
export async function testConnection(cred: ResolvedCredential, ctx: ActionContext): Promise<void> {
  const ep = parseEndpoint(cred, ['sftp']);
  await withSession(cred, ep, ctx, 'list_files', '', async (client) => {
    await client.list(ep.basePath);
  });
}

async function listFiles(input: unknown, cred: ResolvedCredential, ctx: ActionContext): Promise<ListFilesOutput> {
  const obj = asInputObject(input, 'list_files');
  const ep = parseEndpoint(cred, ['sftp']);
  const p = resolveRemotePath(ep.basePath, obj.path);
  return withSession(cred, ep, ctx, 'list_files', p.relative, async (client) => {
    const items = await client.list(p.full);
    const files: FileEntry[] = items
      .filter((i) => i.name !== '.' && i.name !== '..')
      .map((i) => ({
        name: i.name,
        type: i.type === 'd' ? 'directory' : 'file',
        size: Number(i.size) || 0,
        modified_at: Number.isFinite(i.modifyTime) && i.modifyTime > 0 ? new Date(i.modifyTime).toISOString() : null,
      }));
    files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { files };
  });
}

async function uploadFile(input: unknown, cred: ResolvedCredential, ctx: ActionContext): Promise<UploadFileOutput> {
  const obj = asInputObject(input, 'upload_file');
  const data = decodeContent(obj, 'upload_file');
  const ep = parseEndpoint(cred, ['sftp']);
  const target = requireFilePath(obj, ep.basePath, 'upload_file');
  return withSession(cred, ep, ctx, 'upload_file', target.relative, async (client) => {
    await client.put(data, target.full);
    return { path: target.relative, size: data.length };
  });
}

async function downloadFile(input: unknown, cred: ResolvedCredential, ctx: ActionContext): Promise<DownloadFileOutput> {
  const obj = asInputObject(input, 'download_file');
  const ep = parseEndpoint(cred, ['sftp']);
  const target = requireFilePath(obj, ep.basePath, 'download_file');
  return withSession(cred, ep, ctx, 'download_file', target.relative, async (client) => {
    const st = await client.stat(target.full);
    if (st.isDirectory) throw new ConnectorError('bad_input', `download_file: ${target.relative} is a directory`);
    if (st.size > MAX_FILE_BYTES) throw tooLarge(`download_file: ${target.relative}`);
    const sink = new CappedCollector(MAX_FILE_BYTES);
    try {
      await client.get(target.full, sink);
    } catch (err) {
      if (sink.exceeded) throw tooLarge(`download_file: ${target.relative}`);
      throw err;
    }
    const buf = sink.result();
    return { path: target.relative, ...encodeContent(buf), size: buf.length };
  });
}

async function deleteFile(input: unknown, cred: ResolvedCredential, ctx: ActionContext): Promise<DeleteFileOutput> {
  const obj = asInputObject(input, 'delete_file');
  const ep = parseEndpoint(cred, ['sftp']);
  const target = requireFilePath(obj, ep.basePath, 'delete_file');
  return withSession(cred, ep, ctx, 'delete_file', target.relative, async (client) => {
    await client.delete(target.full);
    return { path: target.relative, deleted: true as const };
  });
}

export const actions = {
  list_files: listFiles,
  upload_file: uploadFile,
  download_file: downloadFile,
  delete_file: deleteFile,
} as const;
