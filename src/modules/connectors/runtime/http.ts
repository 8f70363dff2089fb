// HTTP connector (global fetch). One action, `request`, plus testConnection.
//
// Authentication comes from the credential and always wins: when the credential supplies auth,
// an Authorization header in the step input is dropped (a flow cannot swap in other
// credentials, nor send the stored ones in another scheme). Only authType 'none' lets the
// input's Authorization header through.
//
// Credentials never leave the credential's origin: when the credential carries secrets, the
// request URL must have the same origin (scheme, host, port) as apiEndpoint, and redirects are
// not followed (a 3xx is returned to the caller as is).
import {
  asInputObject,
  mapNetworkError,
  systemErrorCode,
  withDeadline,
} from './common.ts';
import { parseEndpoint, type Endpoint } from './endpoint.ts';
import { credentialSecrets, scrubDeep, scrubSecrets } from './scrub.ts';
import { ConnectorError, type ActionContext, type HttpRequestOutput, type ResolvedCredential } from './types.ts';

export const MAX_RESPONSE_BYTES = 5 * 1024 * 1024;

const TOKEN_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Set by fetch itself, or meaningless for one request. */
const DROPPED_HEADERS = new Set(['host', 'content-length', 'connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'te', 'trailer']);

interface Target {
  /** Endpoint without user-info, or null when the credential has no apiEndpoint. */
  base: URL | null;
  ep: Endpoint | null;
}

function resolveTarget(cred: ResolvedCredential): Target {
  if (cred.apiEndpoint === null || cred.apiEndpoint === '') return { base: null, ep: null };
  const ep = parseEndpoint(cred, ['http', 'https']);
  const base = new URL(cred.apiEndpoint.trim());
  base.username = '';
  base.password = '';
  base.hash = '';
  return { base, ep };
}

/** Authorization header value for the credential, or null for authType 'none'. */
function authorization(cred: ResolvedCredential, ep: Endpoint | null): string | null {
  switch (cred.authType) {
    case 'none':
      return null;
    case 'basic_auth':
    case 'username_password': {
      const user = ep ? ep.user : cred.username;
      const password = ep ? ep.password : cred.password;
      if (!user && !password) throw new ConnectorError('bad_input', 'the credential has no username or password');
      return 'Basic ' + Buffer.from(`${user ?? ''}:${password ?? ''}`, 'utf8').toString('base64');
    }
    case 'api_key':
    case 'oauth2':
    case 'refreshable_token':
      if (!cred.authToken) throw new ConnectorError('bad_input', 'the credential has no token');
      if (/[\r\n]/.test(cred.authToken)) throw new ConnectorError('bad_input', 'the credential token is malformed');
      return `Bearer ${cred.authToken}`;
    default:
      throw new ConnectorError('bad_input', `unsupported auth type for HTTP: ${cred.authType}`);
  }
}

function secretsFor(cred: ResolvedCredential, auth: string | null): string[] {
  // The full header value and its token part (e.g. the base64 of user:password).
  const extra = auth ? [auth, auth.replace(/^\S+\s+/, '')] : [];
  return credentialSecrets(cred, extra);
}

/** Builds the request URL: relative URLs resolve against apiEndpoint, keeping its base path. */
function buildUrl(target: Target, rawUrl: unknown, query: unknown, sendsSecrets: boolean): URL {
  if (rawUrl === undefined || rawUrl === null) rawUrl = '';
  if (typeof rawUrl !== 'string') throw new ConnectorError('bad_input', 'request: url must be a string');
  let url: URL;
  if (target.base) {
    // 'items' against 'https://x/v2' must give 'https://x/v2/items': treat the base as a directory.
    const dir = new URL(target.base);
    if (!dir.pathname.endsWith('/')) dir.pathname += '/';
    let u: URL;
    try {
      u = rawUrl === '' ? new URL(target.base) : new URL(rawUrl, dir);
    } catch {
      throw new ConnectorError('bad_input', 'request: url is not a valid URL');
    }
    url = u;
    if (sendsSecrets && url.origin !== target.base.origin) {
      throw new ConnectorError('bad_input', `request: url must stay on the credential's endpoint ${target.base.origin}`);
    }
  } else {
    if (sendsSecrets) {
      throw new ConnectorError('bad_input', 'the credential has no API endpoint; its secrets are only sent to that endpoint');
    }
    try {
      url = new URL(rawUrl);
    } catch {
      throw new ConnectorError('bad_input', 'request: url must be an absolute URL (the credential has no API endpoint)');
    }
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConnectorError('bad_input', 'request: url must be http or https');
  }
  if (url.username || url.password) throw new ConnectorError('bad_input', 'request: url must not contain user-info');
  url.hash = '';
  if (query !== undefined && query !== null) {
    if (typeof query !== 'object' || Array.isArray(query)) throw new ConnectorError('bad_input', 'request: query must be an object');
    for (const [k, v] of Object.entries(query)) {
      for (const item of Array.isArray(v) ? v : [v]) {
        if (item === undefined || item === null) continue;
        if (!['string', 'number', 'boolean'].includes(typeof item)) {
          throw new ConnectorError('bad_input', `request: query parameter ${k} must be a string, number or boolean`);
        }
        url.searchParams.append(k, String(item));
      }
    }
  }
  return url;
}

function buildHeaders(raw: unknown, auth: string | null): Headers {
  const headers = new Headers();
  if (raw !== undefined && raw !== null) {
    if (typeof raw !== 'object' || Array.isArray(raw)) throw new ConnectorError('bad_input', 'request: headers must be an object');
    for (const [name, value] of Object.entries(raw)) {
      if (!TOKEN_RE.test(name)) throw new ConnectorError('bad_input', `request: invalid header name ${JSON.stringify(name.slice(0, 64))}`);
      if (value === undefined || value === null) continue;
      if (!['string', 'number', 'boolean'].includes(typeof value)) {
        throw new ConnectorError('bad_input', `request: header ${name} must be a string`);
      }
      const v = String(value);
      if (/[\0\r\n]/.test(v)) throw new ConnectorError('bad_input', `request: header ${name} contains line breaks`);
      const lower = name.toLowerCase();
      if (DROPPED_HEADERS.has(lower)) continue;
      if (lower === 'authorization' && auth !== null) continue; // the credential's auth wins
      headers.append(name, v);
    }
  }
  if (auth !== null) headers.set('authorization', auth);
  return headers;
}

function buildBody(method: string, body: unknown, headers: Headers): string | undefined {
  if (body === undefined || body === null) return undefined;
  if (method === 'GET' || method === 'HEAD') throw new ConnectorError('bad_input', `request: a ${method} request cannot have a body`);
  if (typeof body === 'string') return body;
  if (!headers.has('content-type')) headers.set('content-type', 'application/json');
  try {
    return JSON.stringify(body);
  } catch {
    throw new ConnectorError('bad_input', 'request: body cannot be serialised as JSON');
  }
}

function isJson(contentType: string | null): boolean {
  if (!contentType) return false;
  const mime = contentType.split(';')[0]!.trim().toLowerCase();
  return mime === 'application/json' || mime.endsWith('+json') || mime === 'text/json';
}

/** Reads at most MAX_RESPONSE_BYTES of the body; more fails the request. */
async function readCapped(res: Response, where: string): Promise<Buffer> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > MAX_RESPONSE_BYTES) {
    await res.body?.cancel().catch(() => {});
    throw new ConnectorError('protocol_error', `response from ${where} is larger than the ${MAX_RESPONSE_BYTES} byte limit`);
  }
  if (!res.body) return Buffer.alloc(0);
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > MAX_RESPONSE_BYTES) {
      await reader.cancel().catch(() => {});
      throw new ConnectorError('protocol_error', `response from ${where} is larger than the ${MAX_RESPONSE_BYTES} byte limit`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

function mapFetchError(err: unknown, where: string): ConnectorError {
  if (err instanceof ConnectorError) return err;
  const net = mapNetworkError(err, where);
  if (net) return net;
  const name = (err as { name?: unknown })?.name;
  if (name === 'AbortError' || name === 'TimeoutError') return new ConnectorError('timeout', `request to ${where} timed out`);
  const code = systemErrorCode(err);
  if (code && /^(ERR_TLS|CERT_|UNABLE_TO|SELF_SIGNED|DEPTH_ZERO)/.test(code)) {
    return new ConnectorError('protocol_error', `TLS failure talking to ${where}`);
  }
  const causeCode = (err as { cause?: { code?: unknown } })?.cause?.code;
  if (typeof causeCode === 'string' && /^(ERR_TLS|CERT_|UNABLE_TO|SELF_SIGNED|DEPTH_ZERO)/.test(causeCode)) {
    return new ConnectorError('protocol_error', `TLS failure talking to ${where}`);
  }
  return new ConnectorError('protocol_error', `request to ${where} failed`);
}

interface Prepared {
  url: URL;
  init: RequestInit;
  where: string;
  secrets: string[];
}

async function send(p: Prepared, ctx: ActionContext): Promise<{ res: Response; body: Buffer }> {
  const controller = new AbortController();
  try {
    return await withDeadline(ctx, `request to ${p.where}`, () => controller.abort(), async () => {
      let res: Response;
      try {
        res = await fetch(p.url, { ...p.init, signal: controller.signal, redirect: 'manual' });
      } catch (err) {
        throw mapFetchError(err, p.where);
      }
      try {
        return { res, body: await readCapped(res, p.where) };
      } catch (err) {
        throw mapFetchError(err, p.where);
      }
    });
  } catch (err) {
    const ce = err instanceof ConnectorError ? err : mapFetchError(err, p.where);
    throw new ConnectorError(ce.code, scrubSecrets(ce.message, p.secrets), ce.status);
  }
}

async function request(input: unknown, cred: ResolvedCredential, ctx: ActionContext): Promise<HttpRequestOutput> {
  const obj = asInputObject(input, 'request');
  const method = obj.method === undefined || obj.method === null ? 'GET' : obj.method;
  if (typeof method !== 'string' || !TOKEN_RE.test(method)) throw new ConnectorError('bad_input', 'request: method must be an HTTP method name');
  const m = method.toUpperCase();
  if (m === 'CONNECT' || m === 'TRACE' || m === 'TRACK') throw new ConnectorError('bad_input', `request: method ${m} is not allowed`);
  const target = resolveTarget(cred);
  const auth = authorization(cred, target.ep);
  const secrets = secretsFor(cred, auth);
  const url = buildUrl(target, obj.url, obj.query, auth !== null);
  const headers = buildHeaders(obj.headers, auth);
  const body = buildBody(m, obj.body, headers);
  const where = url.host;

  const { res, body: bytes } = await send({ url, init: { method: m, headers, body }, where, secrets }, ctx);

  const outHeaders: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    outHeaders[name] = value;
  });
  const text = new TextDecoder('utf-8').decode(bytes);
  let parsed: unknown = text;
  if (isJson(res.headers.get('content-type'))) {
    if (text.trim() === '') parsed = null;
    else {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text; // declared JSON but is not: hand back the text
      }
    }
  }
  // A server may echo the request (auth header included) back: keep secrets out of the output.
  return {
    status: res.status,
    headers: scrubDeep(outHeaders, secrets) as Record<string, string>,
    body: scrubDeep(parsed, secrets),
  };
}

/**
 * GET apiEndpoint with the credential's auth. 2xx and 3xx pass; 401/403 fail with
 * 'authentication_failed', any other status >= 400 with 'http_error'.
 */
export async function testConnection(cred: ResolvedCredential, ctx: ActionContext): Promise<void> {
  const target = resolveTarget(cred);
  if (!target.base || !target.ep) throw new ConnectorError('bad_input', 'the credential has no API endpoint');
  const auth = authorization(cred, target.ep);
  const secrets = secretsFor(cred, auth);
  const headers = buildHeaders(undefined, auth);
  headers.set('accept', 'application/json, */*;q=0.5');
  const where = target.base.host;
  const { res } = await send({ url: target.base, init: { method: 'GET', headers }, where, secrets }, ctx);
  if (res.status === 401 || res.status === 403) {
    const who = cred.authType === 'basic_auth' || cred.authType === 'username_password'
      ? ` for user ${target.ep.user ?? '(none)'}`
      : '';
    throw new ConnectorError(
      'authentication_failed',
      scrubSecrets(`authentication failed${who} at ${where} (HTTP ${res.status})`, secrets),
      res.status,
    );
  }
  if (res.status >= 400) {
    throw new ConnectorError('http_error', `${where} answered HTTP ${res.status}`, res.status);
  }
}

export const actions = { request } as const;
