// SQL of environment variables; every query is filtered by company.
import type { Kysely } from 'kysely';
import type { Db } from '../../db/index.ts';
import { registerSecretColumn } from '../../crypto/secret-registry.ts';
import { applyFilters, afterCursor, type Condition } from '../../http/filter.ts';
import type { Cursor } from '../../http/pagination.ts';
import type { EnvVariableRow, EnvVariableTables } from './tables.ts';

export const envAad = (companyId: string, id: string) => `env_variable:${companyId}:${id}`;

registerSecretColumn({
  table: 'env_variables',
  idColumn: 'id',
  column: 'value_encrypted',
  aadColumns: ['company_id'],
  aad: (row) => envAad(String(row.company_id), String(row.id)),
});

type EnvDb = Db;

export class EnvVariablesStore {
  readonly db: EnvDb;
  constructor(db: Db) { this.db = db; }

  byId(companyId: string, id: string): Promise<EnvVariableRow | undefined> {
    return this.db.selectFrom('env_variables').selectAll().where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
  }
  list(companyId: string, conds: Condition[], cursor: Cursor | null, limit: number): Promise<EnvVariableRow[]> {
    let qb = this.db.selectFrom('env_variables').selectAll().where('company_id', '=', companyId);
    qb = afterCursor(applyFilters(qb, conds), cursor, 'env_variables');
    return qb.orderBy('created_at').orderBy('id').limit(limit).execute();
  }
  all(companyId: string): Promise<EnvVariableRow[]> {
    return this.db.selectFrom('env_variables').selectAll().where('company_id', '=', companyId).orderBy('name').execute();
  }
  async insert(row: EnvVariableRow): Promise<void> {
    await this.db.insertInto('env_variables').values(row).execute();
  }
  async update(companyId: string, id: string, patch: Partial<EnvVariableRow>): Promise<boolean> {
    const r = await this.db.updateTable('env_variables').set(patch).where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }
  async delete(companyId: string, id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('env_variables').where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) === 1;
  }
}
