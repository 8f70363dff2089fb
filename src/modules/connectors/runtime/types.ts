// Shared types of the connector runtime: the clients that test a stored credential and run
// flow steps against external systems (SFTP, FTP, HTTP).
//
// Everything here receives credentials already decrypted. The rule for every module of the
// runtime: no secret (password, token, auth details) ever goes into an error message, a
// returned output, or a log line. Errors are ConnectorErrors whose messages are built by the
// runtime itself (never copied from a library error) and passed through scrubSecrets().

export interface ResolvedCredential {
  /** 'username_password' | 'basic_auth' | 'api_key' | 'oauth2' | 'refreshable_token' | 'none' */
  authType: string;
  /** e.g. 'sftp://user:pass@127.0.0.1:2222/base/path', 'ftp://host:21/dir', 'https://api.example.com/v2' */
  apiEndpoint: string | null;
  /** When set (non-empty), wins over the URL's user-info. */
  username: string | null;
  /** When set (non-empty), wins over the URL's user-info. */
  password: string | null;
  authToken: string | null;
  authDetails: string | null;
}

export interface ActionContext {
  /** Cancels the operation; an aborted operation fails with code 'timeout'. */
  signal: AbortSignal;
  /** Overall deadline of one runAction/testConnection call, connection set-up included. */
  timeoutMs: number;
}

export type ConnectorKind = 'sftp' | 'ftp' | 'http';

export type ConnectorErrorCode =
  | 'refused'
  | 'timeout'
  | 'authentication_failed'
  | 'not_found'
  | 'bad_input'
  | 'protocol_error'
  | 'http_error';

/**
 * The only error type the runtime lets out. `message` is short, human, and free of secrets.
 * It deliberately carries no `cause`: library errors may quote credentials.
 */
export class ConnectorError extends Error {
  code: ConnectorErrorCode;
  /** HTTP status for 'http_error' / 'authentication_failed' from an HTTP endpoint; else null. */
  status: number | null;

  constructor(code: ConnectorErrorCode, message: string, status: number | null = null) {
    super(message);
    this.name = 'ConnectorError';
    this.code = code;
    this.status = status;
  }
}

export interface TestConnectionResult {
  ok: boolean;
  error: { code: ConnectorErrorCode; message: string } | null;
}

// ---- file connectors (sftp, ftp) ----

export type ContentEncoding = 'utf8' | 'base64';

export interface FileEntry {
  name: string;
  type: 'file' | 'directory';
  size: number;
  /** ISO 8601, or null when the server does not report a reliable time (plain FTP LIST). */
  modified_at: string | null;
}

export interface ListFilesOutput { files: FileEntry[] }
export interface UploadFileOutput { path: string; size: number }
export interface DownloadFileOutput { path: string; content: string; content_encoding: ContentEncoding; size: number }
export interface DeleteFileOutput { path: string; deleted: true }

// ---- http ----

export interface HttpRequestOutput {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}
