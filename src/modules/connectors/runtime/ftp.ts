// FTP / FTPS connector (basic-ftp). ftp:// is plain FTP; ftps:// is explicit FTPS (AUTH TLS on
// the control port) with normal certificate verification. Passive mode only (basic-ftp has no
// active mode); a server may not redirect data connections to another host.
import { Readable } from 'node:stream';
import { Client, FTPError } from 'basic-ftp';
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

type Op = 'connect' | 'list_files' | 'upload_file' | 'download_file' | 'delete_file';

const PROTOCOLS = ['ftp', 'ftps'] as const;

/** Error of one FTP operation as a ConnectorError; never quotes the server's or library's text. */
function mapError(err: unknown, ep: Endpoint, op: Op, relPath: string): ConnectorError {
  if (err instanceof ConnectorError) return err;
  const where = hostLabel(ep);
  const net = mapNetworkError(err, where);
  if (net) return net;
  const shown = relPath === '' ? '(base path)' : relPath;
  if (err instanceof FTPError) {
    const code = err.code;
    if (code === 530 || (op === 'connect' && (code === 331 || code === 332))) {
      return new ConnectorError('authentication_failed', `authentication failed for user ${ep.user ?? 'anonymous'} at ${where}`);
    }
    if (op === 'connect') return new ConnectorError('protocol_error', `FTP server at ${where} refused the session (reply ${code})`);
    // 550: file unavailable (not found / no access); 450 is transient, kept as protocol_error.
    if (code === 550) return new ConnectorError('not_found', `no such file or directory: ${shown}`);
    return new ConnectorError('protocol_error', `FTP ${op} failed for ${shown} (reply ${code})`);
  }
  const message = (err as { message?: unknown })?.message;
  if (typeof message === 'string' && /timeout/i.test(message)) {
    return new ConnectorError('timeout', `FTP connection to ${where} timed out`);
  }
  if (op === 'connect') return new ConnectorError('protocol_error', `FTP session with ${where} could not be established`);
  return new ConnectorError('protocol_error', `FTP ${op} failed for ${shown}`);
}

async function withSession<T>(
  cred: ResolvedCredential,
  ep: Endpoint,
  ctx: ActionContext,
  op: Op,
  relPath: string,
  fn: (client: Client) => Promise<T>,
): Promise<T> {
  const secrets = credentialSecrets(cred, [ep.password]);
  const where = hostLabel(ep);
  // basic-ftp's own inactivity timeout, in addition to the overall deadline below.
  const client = new Client(ctx.timeoutMs > 0 ? ctx.timeoutMs : 30_000);
  // No library logging at all (basic-ftp masks PASS, but server replies are logged verbatim).
  client.ftp.verbose = false;
  client.ftp.log = () => {};
  try {
    return await withDeadline(
      ctx,
      `FTP ${op === 'connect' ? 'connection to' : op + ' on'} ${where}`,
      () => client.close(),
      async () => {
        try {
          await client.access({
            host: ep.host,
            port: ep.port,
            user: ep.user ?? 'anonymous',
            password: ep.password ?? '',
            secure: ep.protocol === 'ftps',
          });
        } catch (err) {
          throw mapError(err, ep, 'connect', '');
        }
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
    client.close();
  }
}

/** Logs in and lists the base path. */
export async function testConnection(cred: ResolvedCredential, ctx: ActionContext): Promise<void> {
  const ep = parseEndpoint(cred, PROTOCOLS);
  await withSession(cred, ep, ctx, 'list_files', '', async (client) => {
    // CWD first: a missing directory answers 550 there, while LIST errors vary by server.
    await client.cd(ep.basePath);
    await client.list();
  });
}

async function listFiles(input: unknown, cred: ResolvedCredential, ctx: ActionContext): Promise<ListFilesOutput> {
  const obj = asInputObject(input, 'list_files');
  const ep = parseEndpoint(cred, PROTOCOLS);
  const p = resolveRemotePath(ep.basePath, obj.path);
  return withSession(cred, ep, ctx, 'list_files', p.relative, async (client) => {
    await client.cd(p.full); // see testConnection
    const items = await client.list();
    const files: FileEntry[] = items
      .filter((i) => i.name !== '.' && i.name !== '..')
      .map((i) => ({
        name: i.name,
        type: i.isDirectory ? 'directory' : 'file',
        size: Number(i.size) || 0,
        // Only MLSD listings carry a reliable time; LIST dates are left out rather than guessed.
        modified_at: i.modifiedAt && !Number.isNaN(i.modifiedAt.getTime()) ? i.modifiedAt.toISOString() : null,
      }));
    files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { files };
  });
}

async function uploadFile(input: unknown, cred: ResolvedCredential, ctx: ActionContext): Promise<UploadFileOutput> {
  const obj = asInputObject(input, 'upload_file');
  const data = decodeContent(obj, 'upload_file');
  const ep = parseEndpoint(cred, PROTOCOLS);
  const target = requireFilePath(obj, ep.basePath, 'upload_file');
  return withSession(cred, ep, ctx, 'upload_file', target.relative, async (client) => {
    await client.uploadFrom(Readable.from([data]), target.full);
    return { path: target.relative, size: data.length };
  });
}

async function downloadFile(input: unknown, cred: ResolvedCredential, ctx: ActionContext): Promise<DownloadFileOutput> {
  const obj = asInputObject(input, 'download_file');
  const ep = parseEndpoint(cred, PROTOCOLS);
  const target = requireFilePath(obj, ep.basePath, 'download_file');
  return withSession(cred, ep, ctx, 'download_file', target.relative, async (client) => {
    // SIZE answers 550 for a missing file on most servers, and lets us refuse big files early.
    let size: number | null = null;
    try {
      size = await client.size(target.full);
    } catch (err) {
      if (!(err instanceof FTPError) || err.code === 550) throw err;
      // SIZE not supported (502/504) or refused for this file type: go on with RETR.
    }
    if (size !== null && size > MAX_FILE_BYTES) throw tooLarge(`download_file: ${target.relative}`);
    const sink = new CappedCollector(MAX_FILE_BYTES);
    try {
      await client.downloadTo(sink, target.full);
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
  const ep = parseEndpoint(cred, PROTOCOLS);
  const target = requireFilePath(obj, ep.basePath, 'delete_file');
  return withSession(cred, ep, ctx, 'delete_file', target.relative, async (client) => {
    await client.remove(target.full);
    return { path: target.relative, deleted: true as const };
  });
}

export const actions = {
  list_files: listFiles,
  upload_file: uploadFile,
  download_file: downloadFile,
  delete_file: deleteFile,
} as const;
