import type { Db, DbOrTx } from '../../db/index.ts';
import type { PersonalAccessTokenRow, UserRow } from '../identity/tables.ts';
import { applyFilters, afterCursor, type Condition } from '../../http/filter.ts';
import type { Cursor } from '../../http/pagination.ts';
import { prepared } from '../../db/prepared.ts';

export type TokenWithOwner = PersonalAccessTokenRow & Pick<UserRow, 'email' | 'role' | 'disabled'>;

export class TokenStore {
  readonly db: Db;
  readonly #byDigest: (digest: string) => Promise<TokenWithOwner[]>;
  constructor(db: Db) {
    this.db = db;
    this.#byDigest = prepared(db, (digest: string) => db.selectFrom('personal_access_tokens as t')
      .innerJoin('users as u', (j) => j.onRef('u.id', '=', 't.user_id').onRef('u.company_id', '=', 't.company_id'))
      .selectAll('t').select(['u.email', 'u.role', 'u.disabled'])
      .where('t.digest', '=', digest), ['$digest']);
  }

  /** The hot path of every PAT-authenticated request: one indexed lookup, precompiled. */
  async byDigest(digest: string): Promise<TokenWithOwner | undefined> {
    return (await this.#byDigest(digest))[0];
  }
  byId(companyId: string, id: string, db: DbOrTx = this.db): Promise<PersonalAccessTokenRow | undefined> {
    return db.selectFrom('personal_access_tokens').selectAll()
      .where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
  }
  list(companyId: string, userId: string | null, conds: Condition[], cursor: Cursor | null, limit: number): Promise<PersonalAccessTokenRow[]> {
    let qb = this.db.selectFrom('personal_access_tokens').selectAll().where('company_id', '=', companyId);
    if (userId) qb = qb.where('user_id', '=', userId);
    qb = afterCursor(applyFilters(qb, conds), cursor, 'personal_access_tokens');
    return qb.orderBy('created_at').orderBy('id').limit(limit).execute();
  }
  async insert(row: PersonalAccessTokenRow, db: DbOrTx = this.db): Promise<void> {
    await db.insertInto('personal_access_tokens').values(row).execute();
  }
  /** Compare-and-set on the digest: of two racing regenerations only one can win. */
  async replaceDigest(companyId: string, id: string, oldDigest: string, set: Pick<PersonalAccessTokenRow, 'digest' | 'hint' | 'expires_at' | 'updated_at'>, db: DbOrTx): Promise<boolean> {
    const r = await db.updateTable('personal_access_tokens').set({ ...set, last_used_at: null })
      .where('company_id', '=', companyId).where('id', '=', id).where('digest', '=', oldDigest)
      .where('revoked_at', 'is', null).executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }
  async revoke(companyId: string, id: string, at: string, db: DbOrTx): Promise<boolean> {
    const r = await db.updateTable('personal_access_tokens').set({ revoked_at: at, updated_at: at })
      .where('company_id', '=', companyId).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }
  async touch(id: string, at: string, notAfter: string): Promise<void> {
    await this.db.updateTable('personal_access_tokens').set({ last_used_at: at }).where('id', '=', id)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', notAfter)])).execute();
  }
}
