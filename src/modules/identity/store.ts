// SQL for companies, users and teams. Every query that takes an id also takes the company.
import type { Db, DbOrTx } from '../../db/index.ts';
import type { CompanyRow, TeamRow, UserRow } from './tables.ts';
import { applyFilters, afterCursor, type Condition } from '../../http/filter.ts';
import type { Cursor } from '../../http/pagination.ts';
import { prepared } from '../../db/prepared.ts';

export class IdentityStore {
  readonly db: Db;
  readonly #userById: (companyId: string, id: string) => Promise<UserRow[]>;
  constructor(db: Db) {
    this.db = db;
    this.#userById = prepared(db, (companyId: string, id: string) => db.selectFrom('users').selectAll()
      .where('company_id', '=', companyId).where('id', '=', id), ['$company', '$id']);
  }

  companyByName(name: string): Promise<CompanyRow | undefined> {
    return this.db.selectFrom('companies').selectAll().where('name', '=', name).executeTakeFirst();
  }
  companyById(id: string): Promise<CompanyRow | undefined> {
    return this.db.selectFrom('companies').selectAll().where('id', '=', id).executeTakeFirst();
  }
  async insertCompany(row: CompanyRow, db: DbOrTx = this.db): Promise<void> {
    await db.insertInto('companies').values(row).execute();
  }
  async countCompanies(): Promise<number> {
    const r = await this.db.selectFrom('companies').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async userById(companyId: string, id: string, db?: DbOrTx): Promise<UserRow | undefined> {
    if (db) return db.selectFrom('users').selectAll().where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
    return (await this.#userById(companyId, id))[0];
  }
  /** Global lookup by e-mail: only for login and the CLI, which name a user by e-mail. */
  userByEmail(email: string): Promise<UserRow | undefined> {
    return this.db.selectFrom('users').selectAll().where('email_lower', '=', email.toLowerCase()).executeTakeFirst();
  }
  /** Global lookup by id: only for credential resolution (OAuth subject). */
  userByIdAnyCompany(id: string): Promise<UserRow | undefined> {
    return this.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
  }
  async insertUser(row: UserRow, db: DbOrTx = this.db): Promise<void> {
    await db.insertInto('users').values(row).execute();
  }
  async updateUser(companyId: string, id: string, patch: Partial<UserRow>, db: DbOrTx = this.db): Promise<number> {
    const r = await db.updateTable('users').set(patch).where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
    return Number(r.numUpdatedRows);
  }
  async deleteUser(companyId: string, id: string, db: DbOrTx = this.db): Promise<number> {
    const r = await db.deleteFrom('users').where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows);
  }
  listUsers(companyId: string, conds: Condition[], cursor: Cursor | null, limit: number): Promise<UserRow[]> {
    let qb = this.db.selectFrom('users').selectAll().where('company_id', '=', companyId);
    qb = afterCursor(applyFilters(qb, conds), cursor, 'users');
    return qb.orderBy('created_at').orderBy('id').limit(limit).execute();
  }
  async countAdmins(companyId: string, db: DbOrTx = this.db): Promise<number> {
    const r = await db.selectFrom('users').select((eb) => eb.fn.countAll<number>().as('n'))
      .where('company_id', '=', companyId).where('role', '=', 'admin').where('disabled', '=', 0).executeTakeFirstOrThrow();
    return Number(r.n);
  }
  /** Ids among `ids` that are users of the company. */
  async existingUserIds(companyId: string, ids: string[], db: DbOrTx = this.db): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await db.selectFrom('users').select('id').where('company_id', '=', companyId).where('id', 'in', ids).execute();
    return new Set(rows.map((r) => r.id));
  }

  teamById(companyId: string, id: string, db: DbOrTx = this.db): Promise<TeamRow | undefined> {
    return db.selectFrom('teams').selectAll().where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
  }
  listTeams(companyId: string, conds: Condition[], cursor: Cursor | null, limit: number): Promise<TeamRow[]> {
    let qb = this.db.selectFrom('teams').selectAll().where('company_id', '=', companyId);
    qb = afterCursor(applyFilters(qb, conds), cursor, 'teams');
    return qb.orderBy('created_at').orderBy('id').limit(limit).execute();
  }
  async insertTeam(row: TeamRow, db: DbOrTx): Promise<void> {
    await db.insertInto('teams').values(row).execute();
  }
  async updateTeam(companyId: string, id: string, patch: Partial<TeamRow>, db: DbOrTx): Promise<number> {
    const r = await db.updateTable('teams').set(patch).where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
    return Number(r.numUpdatedRows);
  }
  async deleteTeam(companyId: string, id: string, db: DbOrTx = this.db): Promise<number> {
    const r = await db.deleteFrom('teams').where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows);
  }
  async setTeamMembers(companyId: string, teamId: string, userIds: string[], db: DbOrTx): Promise<void> {
    await db.deleteFrom('team_members').where('company_id', '=', companyId).where('team_id', '=', teamId).execute();
    if (userIds.length) {
      await db.insertInto('team_members').values(userIds.map((user_id) => ({ team_id: teamId, user_id, company_id: companyId }))).execute();
    }
  }
  async teamMembers(companyId: string, teamIds: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>(teamIds.map((id) => [id, []]));
    if (teamIds.length === 0) return out;
    const rows = await this.db.selectFrom('team_members').select(['team_id', 'user_id'])
      .where('company_id', '=', companyId).where('team_id', 'in', teamIds).orderBy('user_id').execute();
    for (const r of rows) out.get(r.team_id)?.push(r.user_id);
    return out;
  }
  /** Team ids the user belongs to (object permissions use this). */
  async teamIdsOfUser(companyId: string, userId: string): Promise<string[]> {
    const rows = await this.db.selectFrom('team_members').select('team_id')
      .where('company_id', '=', companyId).where('user_id', '=', userId).execute();
    return rows.map((r) => r.team_id);
  }
}
