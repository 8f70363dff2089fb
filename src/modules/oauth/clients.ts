// OAuth clients "issued by the provider's staff" (`flowgate clients ...`). The client secret is
// shown once at creation (or rotation) and stored only as keyring ciphertext bound to the
// client id; it is decrypted only when oidc-provider authenticates the client.
import crypto from 'node:crypto';
import type { Keyring } from '../../crypto/keyring.ts';
import { registerSecretColumn } from '../../crypto/secret-registry.ts';
import { nowIso } from '../../db/time.ts';
import { compiledOnce, type OAuthDb } from './db.ts';
import type { OAuthClientRow } from './tables.ts';

registerSecretColumn({
  table: 'oauth_clients',
  idColumn: 'client_id',
  column: 'client_secret',
  aadColumns: ['client_id'],
  aad: (row) => clientSecretAad(String(row.client_id)),
});

export function clientSecretAad(clientId: string): string {
  return `oauth_client:${clientId}`;
}

export const ID_TOKEN_ALGS = ['ES256', 'RS256'] as const;
export type IdTokenAlg = (typeof ID_TOKEN_ALGS)[number];

/** Invalid input to a client operation; the message is meant for the operator. */
export class OAuthClientError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OAuthClientError';
  }
}

export interface CreateClientInput {
  name: string;
  redirectUris: string[];
  /** Public clients have no secret and must use PKCE. */
  public?: boolean;
  /** Algorithm of the client's ID tokens; default ES256. */
  idTokenAlg?: IdTokenAlg;
}

export interface ClientInfo {
  clientId: string;
  name: string;
  redirectUris: string[];
  public: boolean;
  idTokenAlg: string;
  createdAt: string;
}

const CLIENT_ID_RE = /^fgc_[A-Za-z0-9_-]{22}$/;
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

export function validateRedirectUri(raw: unknown): string {
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > 2000) {
    throw new OAuthClientError('A redirect URI must be a non-empty string of at most 2000 characters.');
  }
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new OAuthClientError(`Redirect URI "${raw}" is not an absolute URL.`);
  }
  if (u.hash || raw.includes('#')) throw new OAuthClientError(`Redirect URI "${raw}" must not contain a fragment.`);
  if (u.username || u.password) throw new OAuthClientError(`Redirect URI "${raw}" must not contain credentials.`);
  if (u.protocol === 'https:') return raw;
  if (u.protocol === 'http:' && LOOPBACK.has(u.hostname)) return raw;
  throw new OAuthClientError(`Redirect URI "${raw}" must use https (plain http is allowed only for localhost).`);
}

export class ClientStore {
  readonly #db: OAuthDb;
  readonly #keyring: Keyring;
  /** Extra validation by the provider (its client schema); set once the provider exists. */
  validate: ((metadata: Record<string, unknown>) => Promise<void>) | null = null;
  /** Told when a stored secret cannot be decrypted (the client then does not authenticate). */
  onDecryptError: ((clientId: string, err: Error) => void) | null = null;
  /**
   * Metadata per client for a few seconds: every token request authenticates its client, and
   * changes made in this process clear the entry at once. (A secret rotated or a client deleted
   * by another process, e.g. the CLI, takes effect within cacheMs.)
   */
  readonly #cache = new Map<string, { at: number; metadata: Record<string, unknown> }>();
  readonly #cacheMs: number;
  /** Bumped by every change made here, so that a load racing a change is not cached. */
  #generation = 0;

  readonly #byId: (id: string) => Promise<{ rows: Record<string, any>[] }>;

  constructor(db: OAuthDb, keyring: Keyring, opts: { cacheMs?: number } = {}) {
    this.#db = db;
    this.#byId = compiledOnce(db, (id: string) => db.selectFrom('oauth_clients').selectAll().where('client_id', '=', id), ['$id']);
    this.#keyring = keyring;
    this.#cacheMs = opts.cacheMs ?? 5000;
  }

  async create(input: CreateClientInput): Promise<{ clientId: string; clientSecret: string | null }> {
    const name = typeof input.name === 'string' ? input.name.trim() : '';
    if (!name || name.length > 200) throw new OAuthClientError('The client name must be 1 to 200 characters.');
    if (!Array.isArray(input.redirectUris) || input.redirectUris.length === 0) {
      throw new OAuthClientError('At least one redirect URI is needed.');
    }
    if (input.redirectUris.length > 20) throw new OAuthClientError('At most 20 redirect URIs are allowed.');
    const redirectUris = [...new Set(input.redirectUris.map(validateRedirectUri))];
    const idTokenAlg = input.idTokenAlg ?? 'ES256';
    if (!ID_TOKEN_ALGS.includes(idTokenAlg)) throw new OAuthClientError(`idTokenAlg must be one of ${ID_TOKEN_ALGS.join(', ')}.`);
    const isPublic = input.public === true;
    const clientId = 'fgc_' + crypto.randomBytes(16).toString('base64url');
    const clientSecret = isPublic ? null : newSecret();
    const metadata = toMetadata({ clientId, name, redirectUris, isPublic, idTokenAlg, secret: clientSecret });
    if (this.validate) {
      try {
        await this.validate(metadata);
      } catch (err) {
        const e = err as { error_description?: string; message?: string };
        throw new OAuthClientError(`Invalid client: ${e.error_description ?? e.message ?? 'rejected by the provider'}`);
      }
    }
    const now = nowIso();
    await this.#db.insertInto('oauth_clients').values({
      client_id: clientId,
      name,
      redirect_uris: JSON.stringify(redirectUris),
      client_secret: clientSecret === null ? null : this.#keyring.encrypt(clientSecret, clientSecretAad(clientId)),
      is_public: isPublic ? 1 : 0,
      id_token_alg: idTokenAlg,
      created_at: now,
      updated_at: now,
    }).execute();
    return { clientId, clientSecret };
  }

  async list(): Promise<ClientInfo[]> {
    const rows = await this.#db.selectFrom('oauth_clients')
      .select(['client_id', 'name', 'redirect_uris', 'is_public', 'id_token_alg', 'created_at'])
      .orderBy('created_at').orderBy('client_id')
      .execute();
    return rows.map((r) => ({
      clientId: r.client_id,
      name: r.name,
      redirectUris: JSON.parse(r.redirect_uris) as string[],
      public: r.is_public === 1,
      idTokenAlg: r.id_token_alg,
      createdAt: r.created_at,
    }));
  }

  async rotateSecret(clientId: string): Promise<{ clientSecret: string }> {
    const row = await this.#db.selectFrom('oauth_clients').select(['is_public']).where('client_id', '=', clientId).executeTakeFirst();
    if (!row) throw new OAuthClientError(`No client ${clientId}.`);
    if (row.is_public === 1) throw new OAuthClientError(`Client ${clientId} is public and has no secret.`);
    const clientSecret = newSecret();
    this.#forget(clientId);
    await this.#db.updateTable('oauth_clients')
      .set({ client_secret: this.#keyring.encrypt(clientSecret, clientSecretAad(clientId)), updated_at: nowIso() })
      .where('client_id', '=', clientId)
      .execute();
    this.#forget(clientId);
    return { clientSecret };
  }

  /** Deletes the client and everything issued to it (grants, codes, tokens). */
  async delete(clientId: string): Promise<boolean> {
    this.#forget(clientId);
    const deleted = await this.#db.transaction().execute(async (trx) => {
      const res = await trx.deleteFrom('oauth_clients').where('client_id', '=', clientId).executeTakeFirst();
      await trx.deleteFrom('oauth_models').where('client_id', '=', clientId).execute();
      return Number(res.numDeletedRows) > 0;
    });
    this.#forget(clientId);
    return deleted;
  }

  /** Client metadata for oidc-provider, secret decrypted (only here, at use). */
  async metadataFor(clientId: string): Promise<Record<string, unknown> | undefined> {
    if (!CLIENT_ID_RE.test(clientId)) return undefined;
    const now = Date.now();
    const hit = this.#cache.get(clientId);
    if (hit && now - hit.at < this.#cacheMs) return hit.metadata;
    const generation = this.#generation;
    const metadata = await this.#load(clientId);
    if (metadata && this.#cacheMs > 0 && generation === this.#generation) {
      if (this.#cache.size >= 1000) this.#cache.clear();
      this.#cache.set(clientId, { at: now, metadata });
    }
    return metadata;
  }

  #forget(clientId: string): void {
    this.#generation++;
    this.#cache.delete(clientId);
  }

  async #load(clientId: string): Promise<Record<string, unknown> | undefined> {
    const row = (await this.#byId(clientId)).rows[0] as OAuthClientRow | undefined;
    if (!row) return undefined;
    let secret: string | null = null;
    if (row.client_secret !== null) {
      try {
        secret = await this.#keyring.decryptStringAsync(row.client_secret, clientSecretAad(row.client_id));
      } catch (err) {
        // A tampered or foreign row: the client cannot authenticate (invalid_client), never a 500.
        this.onDecryptError?.(row.client_id, err as Error);
        return undefined;
      }
    }
    return toMetadata({
      clientId: row.client_id,
      name: row.name,
      redirectUris: JSON.parse(row.redirect_uris) as string[],
      isPublic: row.is_public === 1,
      idTokenAlg: row.id_token_alg,
      secret,
    });
  }
}

function newSecret(): string {
  return 'fgcs_' + crypto.randomBytes(32).toString('base64url');
}

function toMetadata(c: {
  clientId: string; name: string; redirectUris: string[]; isPublic: boolean; idTokenAlg: string; secret: string | null;
}): Record<string, unknown> {
  return {
    client_id: c.clientId,
    ...(c.secret !== null ? { client_secret: c.secret } : {}),
    client_name: c.name,
    application_type: 'web',
    redirect_uris: c.redirectUris,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: c.isPublic ? 'none' : 'client_secret_basic',
    id_token_signed_response_alg: c.idTokenAlg,
  };
}
