// Environment -> one typed, validated config object. A bad value stops the process with a
// one-line message naming the variable (ConfigError), never a stack trace.
import path from 'node:path';

export class ConfigError extends Error {}

export interface Config {
  port: number;
  host: string;
  baseUrl: string;
  dataDir: string;
  databaseUrl: string | null;
  /** PostgreSQL schema for flowgate's tables; null: the server's default (public). */
  pgSchema: string | null;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  patMaxDays: number | null;
  adminEmail: string;
  /** base64 of 32 bytes; when null the key file in dataDir is used (created on first start). */
  encryptionKey: string | null;
  /** Seconds a repeated refresh token still returns a valid result (concurrent refreshes). */
  oauthRefreshGraceSeconds: number;
  oauthAccessTokenTtl: number;
  oauthRefreshTokenTtl: number;
  oauthRefreshTokenAbsoluteTtl: number;
  webhookRateLimit: number;
  webhookRateWindowSeconds: number;
  workerConcurrency: number;
  stepTimeoutSeconds: number;
  /** How long a worker's claim on a running flow run lasts without a heartbeat (then it is re-queued). */
  workerLeaseSeconds: number;
  uploadMaxBytes: number;
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, dflt: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function optionalInt(env: Env, name: string, min: number, max: number): number | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return null;
  return int(env, name, 0, min, max);
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export function loadConfig(env: Env = process.env): Config {
  const port = int(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  let baseUrl = env.FLOWGATE_BASE_URL || `http://localhost:${port}`;
  try {
    const u = new URL(baseUrl);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
    baseUrl = u.toString().replace(/\/$/, '');
  } catch {
    throw new ConfigError(`FLOWGATE_BASE_URL must be an http(s) URL, got "${baseUrl}"`);
  }
  const dataDir = path.resolve(env.FLOWGATE_DATA_DIR || './.flowgate');
  const databaseUrl = env.DATABASE_URL || null;
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must be a postgres:// or postgresql:// URL');
  }
  const pgSchema = env.FLOWGATE_PG_SCHEMA || null;
  if (pgSchema !== null && !/^[a-z_][a-z0-9_]{0,62}$/.test(pgSchema)) {
    throw new ConfigError(`FLOWGATE_PG_SCHEMA must be a lower-case SQL identifier, got "${pgSchema}"`);
  }
  const logLevel = (env.FLOWGATE_LOG_LEVEL || 'info') as Config['logLevel'];
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`FLOWGATE_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const adminEmail = (env.FLOWGATE_ADMIN_EMAIL || 'admin@example.com').trim();
  if (!/^[^@\s]+@[^@\s]+$/.test(adminEmail)) {
    throw new ConfigError(`FLOWGATE_ADMIN_EMAIL must be an e-mail address, got "${adminEmail}"`);
  }
  const encryptionKey = env.FLOWGATE_ENCRYPTION_KEY || null;
  if (encryptionKey !== null) {
    const raw = Buffer.from(encryptionKey, 'base64');
    if (raw.length !== 32 || raw.toString('base64') !== encryptionKey.replace(/\s/g, '')) {
      throw new ConfigError('FLOWGATE_ENCRYPTION_KEY must be the base64 encoding of exactly 32 bytes');
    }
  }
  return {
    port,
    host,
    baseUrl,
    dataDir,
    databaseUrl,
    pgSchema,
    logLevel,
    patMaxDays: optionalInt(env, 'FLOWGATE_PAT_MAX_DAYS', 1, 36500),
    adminEmail,
    encryptionKey,
    oauthRefreshGraceSeconds: int(env, 'FLOWGATE_OAUTH_REFRESH_GRACE_SECONDS', 5, 0, 300),
    oauthAccessTokenTtl: int(env, 'FLOWGATE_OAUTH_ACCESS_TOKEN_TTL', 3600, 60, 86400),
    oauthRefreshTokenTtl: int(env, 'FLOWGATE_OAUTH_REFRESH_TOKEN_TTL', 30 * 86400, 300, 365 * 86400),
    oauthRefreshTokenAbsoluteTtl: int(env, 'FLOWGATE_OAUTH_REFRESH_TOKEN_ABSOLUTE_TTL', 90 * 86400, 300, 3650 * 86400),
    webhookRateLimit: int(env, 'FLOWGATE_WEBHOOK_RATE_LIMIT', 300, 1, 1_000_000),
    webhookRateWindowSeconds: int(env, 'FLOWGATE_WEBHOOK_RATE_WINDOW_SECONDS', 300, 1, 86400),
    workerConcurrency: int(env, 'FLOWGATE_WORKER_CONCURRENCY', 4, 0, 256),
    stepTimeoutSeconds: int(env, 'FLOWGATE_STEP_TIMEOUT_SECONDS', 30, 1, 3600),
    workerLeaseSeconds: int(env, 'FLOWGATE_WORKER_LEASE_SECONDS', 30, 2, 3600),
    uploadMaxBytes: int(env, 'FLOWGATE_UPLOAD_MAX_BYTES', 25 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
  };
}
