// oidc-provider's storage adapter on flowgate's database (SQLite and PostgreSQL alike).
//
// One table, oauth_models, keyed by (model, id). Bearer-token models are stored under the
// SHA-256 of the token and without their `jti`, so the table never holds a usable token.
// Clients are not stored here: model 'Client' reads oauth_clients (see clients.ts).
//
// The refresh-token grace window lives here too (see `find` and `consume`): within
// `graceMs` after a refresh token was first consumed, the token endpoint's refresh grant sees it
// as not yet consumed, so a repeat by the same client is answered instead of revoking the grant.
// The repeat yields the same successor refresh token because successor ids are derived from
// the predecessor (see provider.ts, successorId).
import crypto from 'node:crypto';
import { Provider, errors } from 'oidc-provider';
import { compiledOnce, type OAuthDb } from './db.ts';
import type { ClientStore } from './clients.ts';

/** Models whose id is a bearer credential: stored hashed, payload without jti. */
const HASHED = new Set([
  'AccessToken', 'AuthorizationCode', 'RefreshToken', 'ClientCredentials', 'RegistrationAccessToken',
  'InitialAccessToken', 'BackchannelAuthenticationRequest', 'PushedAuthorizationRequest',
]);

export function hashTokenId(value: string): string {
  return crypto.createHash('sha256').update(value).digest('base64url');
}

export function storageId(model: string, id: string): string {
  return HASHED.has(model) ? hashTokenId(id) : id;
}

const iso = (ms: number) => new Date(ms).toISOString();

export interface AdapterDeps {
  db: OAuthDb;
  clients: ClientStore;
  /** Refresh-token grace window in milliseconds (0 = none). */
  graceMs: number;
}

/** True while oidc-provider handles a refresh_token grant at the token endpoint. */
function inRefreshGrant(): boolean {
  const ctx = Provider.ctx;
  return ctx?.oidc?.route === 'token' && ctx.oidc.params?.grant_type === 'refresh_token';
}

type Payload = Record<string, any>;

export function makeAdapter(deps: AdapterDeps) {
  const { db, clients, graceMs } = deps;

  // The queries of every token request, compiled once.
  const findRow = compiledOnce(db, (model: string, id: string) => db.selectFrom('oauth_models')
    .select(['payload', 'consumed_at']).where('model', '=', model).where('id', '=', id), ['$model', '$id']);
  const consumeRow = compiledOnce(db, (at: string, model: string, id: string) => db.updateTable('oauth_models')
    .set({ consumed_at: at }).where('model', '=', model).where('id', '=', id).where('consumed_at', 'is', null), ['$at', '$model', '$id']);
  type Cols = [string, string, string, string | null, string | null, string | null, string | null, string | null];
  const placeholders: Cols = ['$model', '$id', '$payload', '$grant', '$client', '$code', '$uid', '$exp'];
  const insert = (model: string, id: string, payload: string, grant: string | null, client: string | null, code: string | null, uid: string | null, exp: string | null) =>
    db.insertInto('oauth_models').values({ model, id, payload, grant_id: grant, client_id: client, user_code: code, uid, expires_at: exp });
  // A refresh token id is written once. A repeat inside the grace window derives the same
  // successor id again; the first one written stays (and keeps its consumed state).
  const insertOnce = compiledOnce(db, (...v: Cols) => insert(...v).onConflict((oc) => oc.columns(['model', 'id']).doNothing()), placeholders);
  const upsertRow = compiledOnce(db, (...v: Cols) => insert(...v).onConflict((oc) => oc.columns(['model', 'id']).doUpdateSet((eb) => ({
    payload: eb.ref('excluded.payload'),
    grant_id: eb.ref('excluded.grant_id'),
    client_id: eb.ref('excluded.client_id'),
    user_code: eb.ref('excluded.user_code'),
    uid: eb.ref('excluded.uid'),
    expires_at: eb.ref('excluded.expires_at'),
  }))), placeholders);

  return class FlowgateAdapter {
    readonly name: string;
    constructor(name: string) {
      this.name = name;
    }

    async upsert(id: string, payload: Payload, expiresIn?: number): Promise<void> {
      if (this.name === 'Client') throw new Error('clients are managed with `flowgate clients`, not through the provider');
      const key = storageId(this.name, id);
      const stored: Payload = { ...payload };
      if (HASHED.has(this.name)) delete stored.jti;
      const str = (v: unknown) => (typeof v === 'string' ? v : null);
      await (this.name === 'RefreshToken' ? insertOnce : upsertRow)(
        this.name,
        key,
        JSON.stringify(stored),
        str(payload.grantId),
        str(payload.clientId),
        str(payload.userCode),
        str(payload.uid),
        typeof expiresIn === 'number' && expiresIn > 0 ? iso(Date.now() + expiresIn * 1000) : null,
      );
    }

    async find(id: string): Promise<Payload | undefined> {
      if (typeof id !== 'string' || id === '' || id.length > 512) return undefined;
      if (this.name === 'Client') return clients.metadataFor(id);
      const [row] = (await findRow(this.name, storageId(this.name, id))).rows;
      if (!row) return undefined;
      return this.#toPayload(id, row.payload, row.consumed_at);
    }

    #toPayload(id: string, json: string, consumedAt: string | null): Payload {
      const payload = JSON.parse(json) as Payload;
      if (HASHED.has(this.name)) payload.jti = id;
      if (consumedAt) {
        const at = Date.parse(consumedAt);
        const inGrace = this.name === 'RefreshToken' && graceMs > 0 && Date.now() - at <= graceMs && inRefreshGrant();
        if (!inGrace) payload.consumed = Math.floor(at / 1000) || 1;
        else delete payload.consumed;
      }
      return payload;
    }

    async findByUid(uid: string): Promise<Payload | undefined> {
      const row = await db.selectFrom('oauth_models')
        .select(['id', 'payload', 'consumed_at'])
        .where('uid', '=', uid)
        .where('model', '=', this.name)
        .executeTakeFirst();
      if (!row) return undefined;
      // Only unhashed models (Session) carry a uid; their id is the jti.
      return this.#toPayload(row.id, row.payload, row.consumed_at);
    }

    async findByUserCode(userCode: string): Promise<Payload | undefined> {
      const row = await db.selectFrom('oauth_models')
        .select(['id', 'payload', 'consumed_at'])
        .where('user_code', '=', userCode)
        .where('model', '=', this.name)
        .executeTakeFirst();
      if (!row) return undefined;
      if (HASHED.has(this.name)) return undefined;
      return this.#toPayload(row.id, row.payload, row.consumed_at);
    }

    async consume(id: string): Promise<void> {
      const key = storageId(this.name, id);
      const now = Date.now();
      // Compare-and-set: only the first use records the moment of consumption.
      const res = await consumeRow(iso(now), this.name, key);
      if (Number(res.numAffectedRows ?? 0) > 0) return;
      // Lost the race (or a repeat): decide whether the caller may go on.
      const row = await db.selectFrom('oauth_models').select('consumed_at')
        .where('model', '=', this.name).where('id', '=', key).executeTakeFirst();
      if (!row) throw new errors.InvalidGrant(`${this.name === 'RefreshToken' ? 'refresh token' : 'grant'} not found`);
      if (this.name === 'RefreshToken' && row.consumed_at && graceMs > 0 && now - Date.parse(row.consumed_at) <= graceMs) return;
      if (this.name === 'AuthorizationCode') throw new errors.InvalidGrant('authorization code already used');
      if (this.name === 'RefreshToken') throw new errors.InvalidGrant('refresh token already used');
    }

    async destroy(id: string): Promise<void> {
      if (this.name === 'Client') throw new Error('clients are managed with `flowgate clients`, not through the provider');
      await db.deleteFrom('oauth_models')
        .where('model', '=', this.name)
        .where('id', '=', storageId(this.name, id))
        .execute();
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await db.deleteFrom('oauth_models')
        .where('grant_id', '=', grantId)
        .where('model', '=', this.name)
        .execute();
    }
  };
}

/** Deletes expired rows; returns how many. */
export async function deleteExpired(db: OAuthDb, now = Date.now()): Promise<number> {
  const res = await db.deleteFrom('oauth_models')
    .where('expires_at', 'is not', null)
    .where('expires_at', '<', iso(now))
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}
