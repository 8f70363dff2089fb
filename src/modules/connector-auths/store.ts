// SQL for connector auths and their grants. Every query takes the company and filters by it.
// The secret columns are registered with the key ring here, at import time, so that
// `flowgate keys rotate` re-encrypts them and `keys status` counts them.
import type { Db } from '../../db/index.ts';
import { registerSecretColumn } from '../../crypto/secret-registry.ts';
import { type ConnectorsDb, type ConnectorsDbOrTx } from '../connectors/db.ts';
import type { ConnectorAuthGrantRow, ConnectorAuthRow } from './tables.ts';
import { visibleSql, type Subject } from './permissions.ts';
import { applyFilters, afterCursor, type Condition } from '../../http/filter.ts';
import type { Cursor } from '../../http/pagination.ts';

/** The secret fields and their columns. AAD: `connector_auth:<company>:<id>:<field>`. */
export const SECRET_FIELDS = {
  password: 'password_enc',
  auth_token: 'auth_token_enc',
  auth_details: 'auth_details_enc',
  api_endpoint: 'api_endpoint_enc',
} as const;
export type SecretField = keyof typeof SECRET_FIELDS;

export function secretAad(companyId: string, id: string, field: SecretField): string {
  return `connector_auth:${companyId}:${id}:${field}`;
}

for (const [field, column] of Object.entries(SECRET_FIELDS) as [SecretField, string][]) {
  registerSecretColumn({
    table: 'connector_auths',
    idColumn: 'id',
    column,
    aadColumns: ['company_id'],
    aad: (row) => secretAad(String(row.company_id), String(row.id), field),
  });
}

export class ConnectorAuthsStore {
  readonly db: ConnectorsDb;
  constructor(db: Db) { this.db = db; }

  authById(companyId: string, id: string, db: ConnectorsDbOrTx = this.db): Promise<ConnectorAuthRow | undefined> {
    return db.selectFrom('connector_auths').selectAll().where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
  }
  /** Only the rows `subject` may read (visibility in SQL, so pages stay full and correct). */
  listAuths(companyId: string, subject: Subject, conds: Condition[], cursor: Cursor | null, limit: number): Promise<ConnectorAuthRow[]> {
    let qb = this.db.selectFrom('connector_auths').selectAll().where('company_id', '=', companyId).where(visibleSql(subject));
    qb = afterCursor(applyFilters(qb, conds), cursor, 'connector_auths');
    return qb.orderBy('created_at').orderBy('id').limit(limit).execute();
  }
  async insertAuth(row: ConnectorAuthRow, db: ConnectorsDbOrTx): Promise<void> {
    await db.insertInto('connector_auths').values(row).execute();
  }
  async updateAuth(companyId: string, id: string, patch: Partial<ConnectorAuthRow>, db: ConnectorsDbOrTx = this.db): Promise<number> {
    const r = await db.updateTable('connector_auths').set(patch).where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
    return Number(r.numUpdatedRows);
  }
  async deleteAuth(companyId: string, id: string, db: ConnectorsDbOrTx): Promise<number> {
    const r = await db.deleteFrom('connector_auths').where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  /** The grants of one auth that concern `subject` (its user or one of its teams). */
  subjectGrants(companyId: string, authId: string, subject: Subject, db: ConnectorsDbOrTx = this.db): Promise<ConnectorAuthGrantRow[]> {
    return db.selectFrom('connector_auth_grants').selectAll()
      .where('company_id', '=', companyId).where('auth_id', '=', authId)
      .where((eb) => eb.or([
        eb('user_id', '=', subject.userId),
        ...(subject.teamIds.length ? [eb('team_id', 'in', [...subject.teamIds])] : []),
      ]))
      .execute();
  }
  grantsOf(companyId: string, authId: string, db: ConnectorsDbOrTx = this.db): Promise<ConnectorAuthGrantRow[]> {
    return db.selectFrom('connector_auth_grants').selectAll()
      .where('company_id', '=', companyId).where('auth_id', '=', authId)
      .orderBy('created_at').orderBy('id').execute();
  }
  async replaceGrants(companyId: string, authId: string, rows: ConnectorAuthGrantRow[], db: ConnectorsDbOrTx): Promise<void> {
    await db.deleteFrom('connector_auth_grants').where('company_id', '=', companyId).where('auth_id', '=', authId).execute();
    if (rows.length) await db.insertInto('connector_auth_grants').values(rows).execute();
  }
}
