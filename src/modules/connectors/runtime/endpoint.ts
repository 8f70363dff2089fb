// Parsing of a credential's apiEndpoint, URL redaction, and safe joining of remote paths.
import { ConnectorError, type ResolvedCredential } from './types.ts';

export type EndpointProtocol = 'sftp' | 'ftp' | 'ftps' | 'http' | 'https';

export interface Endpoint {
  protocol: EndpointProtocol;
  /** Host name or address, IPv6 without brackets. */
  host: string;
  port: number;
  /**
   * Absolute, normalised, no trailing slash except for the root ('/'). For http(s) this is the
   * URL's path as written (percent-encoded); for file protocols it is decoded.
   */
  basePath: string;
  /** Effective user: the username field when non-empty, else the URL's user-info, else null. */
  user: string | null;
  /** Effective password: the password field when non-empty, else the URL's user-info, else null. */
  password: string | null;
}

const DEFAULT_PORTS: Record<EndpointProtocol, number> = { sftp: 22, ftp: 21, ftps: 21, http: 80, https: 443 };

function isEmpty(v: string | null | undefined): v is null | undefined | '' {
  return v === null || v === undefined || v === '';
}

function decodeUserInfo(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** "host:port" for messages; brackets around IPv6 addresses. */
export function hostLabel(ep: Pick<Endpoint, 'host' | 'port'>): string {
  return `${ep.host.includes(':') ? `[${ep.host}]` : ep.host}:${ep.port}`;
}

/**
 * Parses cred.apiEndpoint. The username/password fields win; the URL's user-info is used only
 * for a field that is empty (null or ''), each field on its own.
 * Throws ConnectorError('bad_input') when the endpoint is missing, unparsable, or of a protocol
 * not in `allowed`. The messages never quote the endpoint (it may hold a password).
 */
export function parseEndpoint(
  cred: Pick<ResolvedCredential, 'apiEndpoint' | 'username' | 'password'>,
  allowed: readonly EndpointProtocol[] = ['sftp', 'ftp', 'ftps', 'http', 'https'],
): Endpoint {
  if (isEmpty(cred.apiEndpoint)) throw new ConnectorError('bad_input', 'the credential has no API endpoint');
  let url: URL;
  try {
    url = new URL(cred.apiEndpoint.trim());
  } catch {
    throw new ConnectorError('bad_input', 'the credential API endpoint is not a valid URL');
  }
  const protocol = url.protocol.replace(/:$/, '').toLowerCase() as EndpointProtocol;
  if (!allowed.includes(protocol)) {
    throw new ConnectorError(
      'bad_input',
      `the credential API endpoint must be a ${allowed.map((p) => p + '://').join(' or ')} URL, not ${protocol}://`,
    );
  }
  let host = url.hostname;
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (host === '') throw new ConnectorError('bad_input', 'the credential API endpoint has no host');
  const port = url.port === '' ? DEFAULT_PORTS[protocol] : Number(url.port);

  let basePath: string;
  if (protocol === 'http' || protocol === 'https') {
    basePath = url.pathname === '' ? '/' : url.pathname;
  } else {
    // URL parsing already removed dot segments; decode each segment for the remote file system.
    const segments = url.pathname.split('/').filter((s) => s !== '').map(decodeUserInfo);
    if (segments.some((s) => s === '.' || s === '..' || /[\0\r\n]/.test(s))) {
      throw new ConnectorError('bad_input', 'the credential API endpoint has an invalid path');
    }
    basePath = '/' + segments.join('/');
  }
  if (basePath.length > 1 && basePath.endsWith('/')) basePath = basePath.replace(/\/+$/, '') || '/';

  const urlUser = url.username === '' ? null : decodeUserInfo(url.username);
  const urlPassword = url.password === '' ? null : decodeUserInfo(url.password);
  return {
    protocol,
    host,
    port,
    basePath,
    user: isEmpty(cred.username) ? urlUser : cred.username,
    password: isEmpty(cred.password) ? urlPassword : cred.password,
  };
}

/**
 * Replaces the password part of a URL's user-info by '***', keeping the user name and the rest
 * of the string as written. Input without '@' is returned unchanged. Input that does not parse
 * as a URL but contains '@' is redacted on a best-effort basis: whatever lies between the first
 * ':' after the scheme and the last '@' (or, without such a ':', the whole user-info) is replaced.
 */
export function redactUrl(input: string): string {
  if (typeof input !== 'string' || !input.includes('@')) return input;
  const schemeMatch = /^\s*[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.exec(input);
  const prefix = schemeMatch ? schemeMatch[0] : '';
  const rest = input.slice(prefix.length);

  let parsed: URL | null = null;
  try {
    parsed = new URL(input);
  } catch {
    parsed = null;
  }

  if (parsed && prefix !== '') {
    if (parsed.password === '' && parsed.username === '') return input; // '@' is in the path/query
    // Locate the authority in the string as written, and its user-info before the last '@'.
    const authorityEnd = rest.search(/[/?#\\]/);
    const authority = authorityEnd === -1 ? rest : rest.slice(0, authorityEnd);
    const at = authority.lastIndexOf('@');
    if (at !== -1) {
      if (parsed.password === '') return input;
      const userinfo = authority.slice(0, at);
      const colon = userinfo.indexOf(':');
      if (colon !== -1) {
        return prefix + userinfo.slice(0, colon) + ':***' + rest.slice(at);
      }
    }
    // The string does not look as the parser saw it (e.g. stripped control characters):
    // fall back to the serialised URL.
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  }

  // Not a URL: best effort on the part before the last '@'.
  const at = rest.lastIndexOf('@');
  const userinfo = rest.slice(0, at);
  const colon = userinfo.indexOf(':');
  if (colon !== -1) return prefix + userinfo.slice(0, colon) + ':***' + rest.slice(at);
  return prefix + '***' + rest.slice(at);
}

export interface RemotePath {
  /** Absolute path on the server: basePath joined with the relative path. */
  full: string;
  /** Normalised path relative to basePath ('' for basePath itself). */
  relative: string;
}

/**
 * Joins a user-supplied path onto basePath. The path is always taken as relative to basePath
 * (a leading '/' does not escape it); '.' segments are dropped and '..' segments are resolved,
 * but a '..' that would climb above basePath is refused with ConnectorError('bad_input').
 * Backslashes and control characters (NUL, CR, LF: FTP command injection) are refused too.
 */
export function resolveRemotePath(basePath: string, input: unknown, field = 'path'): RemotePath {
  if (input === undefined || input === null) input = '';
  if (typeof input !== 'string') throw new ConnectorError('bad_input', `${field} must be a string`);
  if (/[\0-\x1f\x7f]/.test(input)) throw new ConnectorError('bad_input', `${field} contains control characters`);
  if (input.includes('\\')) throw new ConnectorError('bad_input', `${field} must use '/' as separator, not '\\'`);
  const stack: string[] = [];
  for (const seg of input.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (stack.length === 0) throw new ConnectorError('bad_input', `${field} escapes the base path`);
      stack.pop();
    } else {
      stack.push(seg);
    }
  }
  const relative = stack.join('/');
  const base = basePath === '' ? '/' : basePath;
  const full = relative === '' ? base : base === '/' ? '/' + relative : base + '/' + relative;
  return { full, relative };
}
