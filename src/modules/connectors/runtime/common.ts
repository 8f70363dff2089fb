// Helpers shared by the connectors: deadlines, input validation, file content encoding.
import { Writable } from 'node:stream';
import { ConnectorError, type ActionContext, type ContentEncoding } from './types.ts';
import { resolveRemotePath, type RemotePath } from './endpoint.ts';

export const DEFAULT_TIMEOUT_MS = 30_000;
/** Largest file download_file returns, and largest upload_file accepts (content is held in memory). */
export const MAX_FILE_BYTES = 5 * 1024 * 1024;

function effectiveTimeout(ctx: ActionContext): number {
  const t = ctx.timeoutMs;
  return typeof t === 'number' && Number.isFinite(t) && t > 0 ? t : DEFAULT_TIMEOUT_MS;
}

/**
 * Runs `fn` under ctx's deadline and abort signal. When either fires first, `cancel` is called
 * (it must tear the connection down so `fn` settles soon) and the call fails with
 * ConnectorError('timeout'). A late rejection of `fn` is swallowed.
 */
export function withDeadline<T>(
  ctx: ActionContext,
  what: string,
  cancel: () => void,
  fn: () => Promise<T>,
): Promise<T> {
  const timeoutMs = effectiveTimeout(ctx);
  if (ctx.signal?.aborted) return Promise.reject(new ConnectorError('timeout', `${what} was cancelled`));
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const stop = (err: ConnectorError) => {
      if (settled) return;
      settled = true;
      cleanup();
      try {
        cancel();
      } catch {
        // tearing down is best effort
      }
      reject(err);
    };
    const timer = setTimeout(() => stop(new ConnectorError('timeout', `${what} timed out after ${timeoutMs} ms`)), timeoutMs);
    const onAbort = () => stop(new ConnectorError('timeout', `${what} was cancelled`));
    ctx.signal?.addEventListener('abort', onAbort, { once: true });
    function cleanup() {
      clearTimeout(timer);
      ctx.signal?.removeEventListener('abort', onAbort);
    }
    let p: Promise<T>;
    try {
      p = fn();
    } catch (e) {
      p = Promise.reject(e);
    }
    p.then(
      (v) => {
        if (settled) return;
        settled = true;
        cleanup();
        resolve(v);
      },
      (e) => {
        if (settled) return;
        settled = true;
        cleanup();
        reject(e);
      },
    );
  });
}

// ---- input validation ----

export function asInputObject(input: unknown, action: string): Record<string, unknown> {
  if (input === undefined || input === null) return {};
  if (typeof input !== 'object' || Array.isArray(input)) {
    throw new ConnectorError('bad_input', `${action}: input must be an object`);
  }
  return input as Record<string, unknown>;
}

export function requireString(obj: Record<string, unknown>, key: string, action: string): string {
  const v = obj[key];
  if (typeof v !== 'string') throw new ConnectorError('bad_input', `${action}: ${key} must be a string`);
  return v;
}

/**
 * Resolves a path below basePath that must name a file (not basePath itself), see
 * resolveRemotePath.
 */
export function requireFilePath(obj: Record<string, unknown>, basePath: string, action: string): RemotePath {
  const p = resolveRemotePath(basePath, requireString(obj, 'path', action));
  if (p.relative === '') throw new ConnectorError('bad_input', `${action}: path must name a file below the base path`);
  return p;
}

// ---- file content ----

const BASE64_RE = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** Decodes upload_file's content; refuses malformed base64 and oversized content. */
export function decodeContent(obj: Record<string, unknown>, action: string): Buffer {
  const content = requireString(obj, 'content', action);
  const enc = obj.content_encoding ?? 'utf8';
  let buf: Buffer;
  if (enc === 'utf8') {
    buf = Buffer.from(content, 'utf8');
  } else if (enc === 'base64') {
    const compact = content.replace(/\s+/g, '');
    if (!BASE64_RE.test(compact) || compact.replace(/=+$/, '').length % 4 === 1) {
      throw new ConnectorError('bad_input', `${action}: content is not valid base64`);
    }
    buf = Buffer.from(compact, 'base64');
  } else {
    throw new ConnectorError('bad_input', `${action}: content_encoding must be 'utf8' or 'base64'`);
  }
  if (buf.length > MAX_FILE_BYTES) {
    throw new ConnectorError('bad_input', `${action}: content is larger than the ${MAX_FILE_BYTES} byte limit`);
  }
  return buf;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** utf8 when the bytes are valid UTF-8 text (no NUL bytes), else base64. Round-trips exactly. */
export function encodeContent(buf: Buffer): { content: string; content_encoding: ContentEncoding } {
  if (!buf.includes(0)) {
    try {
      return { content: strictUtf8.decode(buf), content_encoding: 'utf8' };
    } catch {
      // not UTF-8: fall through
    }
  }
  return { content: buf.toString('base64'), content_encoding: 'base64' };
}

/** A Writable that keeps what it is given, and fails once more than `limit` bytes arrive. */
export class CappedCollector extends Writable {
  chunks: Buffer[] = [];
  bytes = 0;
  exceeded = false;
  limit: number;

  constructor(limit: number) {
    super();
    this.limit = limit;
  }

  _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) {
      this.exceeded = true;
      cb(new Error('size limit exceeded'));
      return;
    }
    this.chunks.push(chunk);
    cb();
  }

  result(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

export function tooLarge(what: string): ConnectorError {
  return new ConnectorError('bad_input', `${what} is larger than the ${MAX_FILE_BYTES} byte limit`);
}

/** Error code of a Node system error, looking through fetch's `cause` and AggregateErrors. */
export function systemErrorCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++) {
    const o = e as { code?: unknown; errors?: unknown[]; cause?: unknown };
    if (typeof o.code === 'string' && /^E[A-Z]+/.test(o.code)) return o.code;
    if (Array.isArray(o.errors) && o.errors.length > 0) {
      const inner = systemErrorCode(o.errors[0]);
      if (inner) return inner;
    }
    e = o.cause;
  }
  return undefined;
}

/** Maps network-level failures shared by all connectors, or returns null. */
export function mapNetworkError(err: unknown, where: string): ConnectorError | null {
  const code = systemErrorCode(err);
  switch (code) {
    case 'ECONNREFUSED':
      return new ConnectorError('refused', `connection refused by ${where}`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new ConnectorError('refused', `could not resolve the host of ${where}`);
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'EADDRNOTAVAIL':
      return new ConnectorError('refused', `${where} is unreachable`);
    case 'ETIMEDOUT':
      return new ConnectorError('timeout', `connection to ${where} timed out`);
    case 'ECONNRESET':
    case 'EPIPE':
      return new ConnectorError('protocol_error', `connection to ${where} was reset`);
    default:
      return null;
  }
}
