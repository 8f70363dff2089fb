// Personal access tokens: format, keyed digest, lifetime, the no-escalation rule.
import crypto from 'node:crypto';
import type { TokenStore } from './store.ts';
import type { PersonalAccessTokenRow } from '../identity/tables.ts';
import type { Actor, Principal } from '../access/principal.ts';
import { parseScope, formatScope, grantCovers, VALID_SCOPES, type ScopeGrant } from '../access/scopes.ts';
import { scopeAllows } from '../access/gate.ts';
import { AppError, badRequest, conflict, notFound } from '../../http/errors.ts';
import { digestKey, generateToken, hasValidChecksum, tokenDigest, tokenHint } from '../../crypto/token.ts';
import type { KeyObject } from 'node:crypto';
import { nowIso, addDays } from '../../db/time.ts';
import type { AuditService } from '../audit/service.ts';
import type { FilterSpec } from '../../http/filter.ts';
import { type ListQuery, type Page, listPage } from '../../http/pagination.ts';

export const PAT_PREFIX = 'fgp';

export type TokenState = 'active' | 'expired' | 'revoked';
export interface TokenView {
  id: string;
  user_id: string;
  token_hint: string;
  state: TokenState;
  expiration: string | null;
  note: string;
  scopes: string[];
  last_used: string | null;
  created_at: string;
  revoked_at: string | null;
}
export interface IssuedToken {
  id: string; token: string; expiration: string | null; note: string; last_used: null; scopes: string[]; created_at: string;
}

export const TOKEN_FILTERS: FilterSpec = {
  user_id: { column: 'user_id', type: 'string' },
  note: { column: 'note', type: 'string' },
  created_at: { column: 'created_at', type: 'timestamp' },
  expiration: { column: 'expires_at', type: 'timestamp' },
  last_used: { column: 'last_used_at', type: 'timestamp' },
};

const LAST_USED_EVERY_MS = 60_000;

function stateOf(r: PersonalAccessTokenRow, now: string): TokenState {
  if (r.revoked_at) return 'revoked';
  if (r.expires_at && r.expires_at <= now) return 'expired';
  return 'active';
}

function view(r: PersonalAccessTokenRow, now = nowIso()): TokenView {
  return {
    id: r.id, user_id: r.user_id, token_hint: r.hint, state: stateOf(r, now), expiration: r.expires_at,
    note: r.note, scopes: JSON.parse(r.scopes), last_used: r.last_used_at, created_at: r.created_at, revoked_at: r.revoked_at,
  };
}

export class TokensService {
  readonly #store: TokenStore;
  readonly #audit: AuditService;
  readonly #digestKey: KeyObject;
  readonly #maxDays: number | null;
  // Last time we wrote last_used per token, so a busy token writes at most once a minute.
  readonly #touched = new Map<string, number>();

  constructor(store: TokenStore, audit: AuditService, rawDigestKey: Buffer, maxDays: number | null) {
    this.#store = store; this.#audit = audit; this.#digestKey = digestKey(rawDigestKey); this.#maxDays = maxDays;
  }

  /** Resolves a PAT to a principal, or null (unknown, expired, revoked, bad checksum, disabled user). */
  async authenticate(token: string): Promise<Principal | null> {
    if (!hasValidChecksum(token, PAT_PREFIX)) return null;
    const row = await this.#store.byDigest(tokenDigest(this.#digestKey, token));
    if (!row) return null;
    const now = nowIso();
    if (row.revoked_at || (row.expires_at && row.expires_at <= now) || row.disabled) return null;
    this.#touch(row.id, now);
    return {
      kind: 'pat', userId: row.user_id, companyId: row.company_id, email: row.email, role: row.role,
      scopes: (JSON.parse(row.scopes) as string[]).map((s) => parseScope(s)).filter((g): g is ScopeGrant => g !== null),
      credentialId: row.id, credentialExpiresAt: row.expires_at,
    };
  }

  #touch(id: string, now: string): void {
    const t = Date.parse(now);
    const last = this.#touched.get(id);
    if (last !== undefined && t - last < LAST_USED_EVERY_MS) return;
    this.#touched.set(id, t);
    if (this.#touched.size > 10_000) this.#touched.clear();
    // Fire and forget: a failed bookkeeping write must not fail the request.
    this.#store.touch(id, now, new Date(t - LAST_USED_EVERY_MS).toISOString()).catch(() => {});
  }

  #parseScopes(scopes: string[]): ScopeGrant[] {
    const bad = scopes.filter((s) => parseScope(s) === null);
    if (bad.length) {
      throw badRequest('invalid_scope', `Unknown scope(s): ${bad.join(', ')}. Valid scopes: ${VALID_SCOPES.join(', ')}.`,
        bad.map((s) => ({ field: `scopes.${scopes.indexOf(s)}`, message: `unknown scope "${s}"; valid: ${VALID_SCOPES.join(', ')}` })));
    }
    return [...new Map(scopes.map((s) => [s, parseScope(s)!])).values()];
  }

  #expiresAt(days: number | null, now: string): string | null {
    if (days === null) {
      if (this.#maxDays !== null) {
        throw badRequest('expiration_required', `Tokens must expire: this installation allows at most ${this.#maxDays} days.`,
          [{ field: 'expiration', message: `must be 1 to ${this.#maxDays} days` }]);
      }
      return null;
    }
    if (this.#maxDays !== null && days > this.#maxDays) {
      throw badRequest('expiration_too_long', `This installation allows tokens of at most ${this.#maxDays} days.`,
        [{ field: 'expiration', message: `must be at most ${this.#maxDays} days` }]);
    }
    return addDays(now, days);
  }

  /**
   * A credential may hand out only what it has: a scoped credential (a PAT, or an OAuth token
   * limited to API scopes) only scopes it covers; a PAT also no expiry later than its own.
   * Unrestricted credentials (the CLI, an OAuth session with full user rights) may create any.
   */
  #checkNoEscalation(actor: Actor | null, wanted: ScopeGrant[], expiresAt: string | null): void {
    const p = actor?.principal;
    if (!p || p.scopes === null) return;
    const held = p.scopes;
    const wider = wanted.filter((w) => !held.some((h) => grantCovers(h, w)));
    if (wider.length) {
      throw new AppError(403, 'scope_escalation',
        `A credential cannot grant scopes it does not hold: ${wider.map(formatScope).join(', ')}.`,
        { extra: { scopes: wider.map(formatScope) } });
    }
    if (p.kind === 'pat' && p.credentialExpiresAt && (expiresAt === null || expiresAt > p.credentialExpiresAt)) {
      throw new AppError(403, 'scope_escalation',
        `A personal access token cannot create a token that outlives it (it expires ${p.credentialExpiresAt}).`);
    }
  }

  /** Acting on another user's tokens is user administration: admin role and the right to update Users. */
  #canManageOthers(p: Principal): boolean {
    return p.role === 'admin' && scopeAllows(p, 'Users', 'update');
  }

  async create(actor: Actor | null, owner: { companyId: string; userId: string },
    input: { expiration: number | null; scopes: string[]; note: string }): Promise<IssuedToken> {
    const grants = this.#parseScopes(input.scopes);
    const now = nowIso();
    const expiresAt = this.#expiresAt(input.expiration, now);
    this.#checkNoEscalation(actor, grants, expiresAt);
    const token = generateToken(PAT_PREFIX);
    const scopes = grants.map(formatScope);
    const row: PersonalAccessTokenRow = {
      id: crypto.randomUUID(), company_id: owner.companyId, user_id: owner.userId,
      digest: tokenDigest(this.#digestKey, token), hint: tokenHint(token), scopes: JSON.stringify(scopes),
      note: input.note, expires_at: expiresAt, revoked_at: null, last_used_at: null, created_at: now, updated_at: now,
    };
    await this.#store.db.transaction().execute(async (trx) => {
      await this.#store.insert(row, trx);
      await this.#audit.record(actor, owner.companyId, 'token.created', { type: 'personal_access_token', id: row.id },
        { owner_user_id: owner.userId, scopes, expiration: expiresAt, hint: row.hint }, trx);
    });
    return { id: row.id, token, expiration: expiresAt, note: row.note, last_used: null, scopes, created_at: now };
  }

  async #visible(actor: Actor, id: string): Promise<PersonalAccessTokenRow> {
    const p = actor.principal;
    const row = await this.#store.byId(p.companyId, id);
    if (!row || (row.user_id !== p.userId && !this.#canManageOthers(p))) throw notFound('personal access token');
    return row;
  }

  async regenerate(actor: Actor, id: string, input: { expiration?: number | null }): Promise<IssuedToken> {
    const p = actor.principal;
    const row = await this.#visible(actor, id);
    if (row.revoked_at) throw conflict('token_revoked', 'A revoked token cannot be regenerated; create a new one.');
    // Another user's token is regenerated only by its owner: an admin must not learn its value.
    if (row.user_id !== p.userId) {
      throw new AppError(403, 'not_token_owner', 'Only the owner of a token can regenerate it; admins may revoke it.');
    }
    const now = nowIso();
    // Without an expiration the token keeps its expiry date; an already expired one gets
    // its original lifetime again, counted from now.
    let expiresAt: string | null;
    if (input.expiration !== undefined) expiresAt = this.#expiresAt(input.expiration, now);
    else if (row.expires_at === null || row.expires_at > now) expiresAt = row.expires_at;
    else expiresAt = this.#expiresAt(Math.max(1, Math.ceil((Date.parse(row.expires_at) - Date.parse(row.created_at)) / 86_400_000)), now);
    const scopes: string[] = JSON.parse(row.scopes);
    this.#checkNoEscalation(actor, scopes.map((s) => parseScope(s)!).filter(Boolean), expiresAt);
    const token = generateToken(PAT_PREFIX);
    const set = { digest: tokenDigest(this.#digestKey, token), hint: tokenHint(token), expires_at: expiresAt, updated_at: now };
    await this.#store.db.transaction().execute(async (trx) => {
      if (!(await this.#store.replaceDigest(p.companyId, id, row.digest, set, trx))) {
        throw conflict('token_changed', 'The token was regenerated or revoked at the same moment; list it again and retry.');
      }
      await this.#audit.record(actor, p.companyId, 'token.regenerated', { type: 'personal_access_token', id },
        { expiration: expiresAt, hint: set.hint }, trx);
    });
    this.#touched.delete(id);
    return { id, token, expiration: expiresAt, note: row.note, last_used: null, scopes, created_at: row.created_at };
  }

  async list(actor: Actor, q: ListQuery): Promise<Page<TokenView>> {
    const p = actor.principal;
    const now = nowIso();
    const owner = this.#canManageOthers(p) ? null : p.userId;
    return listPage(q, TOKEN_FILTERS, (r) => this.#store.list(p.companyId, owner, r.conds, r.cursor, r.limit), (r) => view(r, now));
  }

  /** For the CLI: one user's tokens. */
  async listForUser(companyId: string, userId: string): Promise<TokenView[]> {
    const now = nowIso();
    return (await this.#store.list(companyId, userId, [], null, 10_000)).map((r) => view(r, now));
  }

  async get(actor: Actor, id: string): Promise<TokenView> {
    return view(await this.#visible(actor, id));
  }

  async revoke(actor: Actor | null, companyId: string, id: string): Promise<void> {
    if (actor) await this.#visible(actor, id);
    const now = nowIso();
    await this.#store.db.transaction().execute(async (trx) => {
      const row = await this.#store.byId(companyId, id, trx);
      if (!row) throw notFound('personal access token');
      if (!(await this.#store.revoke(companyId, id, now, trx))) return; // already revoked: idempotent
      await this.#audit.record(actor, companyId, 'token.revoked', { type: 'personal_access_token', id }, { owner_user_id: row.user_id, hint: row.hint }, trx);
    });
  }

  /** Finds a token by id across companies: only for the CLI, which is trusted. */
  async findCompanyOfToken(id: string): Promise<string | null> {
    const r = await this.#store.db.selectFrom('personal_access_tokens').select('company_id').where('id', '=', id).executeTakeFirst();
    return r?.company_id ?? null;
  }
}
