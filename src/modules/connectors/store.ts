// SQL for connectors and connector actions. Every query is filtered by company in SQL:
// a company sees the built-in catalogue (company_id NULL) and its own rows, never another's.
import { sql, type SqlBool } from 'kysely';
import type { Db } from '../../db/index.ts';
import { type ConnectorsDb, type ConnectorsDbOrTx } from './db.ts';
import type { ConnectorActionRow, ConnectorRow } from './tables.ts';
import { applyFilters, afterCursor, type Condition } from '../../http/filter.ts';
import type { Cursor } from '../../http/pagination.ts';

/** Built-in rows and the company's own. */
function visibleTo(companyId: string, table: 'connectors' | 'connector_actions') {
  const col = sql.ref(`${table}.company_id`);
  return sql<SqlBool>`(${col} is null or ${col} = ${companyId})`;
}

export class ConnectorsStore {
  readonly db: ConnectorsDb;
  constructor(db: Db) { this.db = db; }

  connectorById(companyId: string, id: string, db: ConnectorsDbOrTx = this.db): Promise<ConnectorRow | undefined> {
    return db.selectFrom('connectors').selectAll().where('id', '=', id).where(visibleTo(companyId, 'connectors')).executeTakeFirst();
  }
  listConnectors(companyId: string, conds: Condition[], cursor: Cursor | null, limit: number): Promise<ConnectorRow[]> {
    let qb = this.db.selectFrom('connectors').selectAll().where(visibleTo(companyId, 'connectors'));
    qb = afterCursor(applyFilters(qb, conds), cursor, 'connectors');
    return qb.orderBy('created_at').orderBy('id').limit(limit).execute();
  }
  async insertConnector(row: ConnectorRow, db: ConnectorsDbOrTx): Promise<void> {
    await db.insertInto('connectors').values(row).execute();
  }
  /** Only the company's own rows: built-in rows never match (company_id NULL). */
  async updateConnector(companyId: string, id: string, patch: Partial<ConnectorRow>, db: ConnectorsDbOrTx): Promise<number> {
    const r = await db.updateTable('connectors').set(patch).where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
    return Number(r.numUpdatedRows);
  }
  async deleteConnector(companyId: string, id: string, db: ConnectorsDbOrTx): Promise<number> {
    const r = await db.deleteFrom('connectors').where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows);
  }
  async countAuthsOf(companyId: string, connectorId: string, db: ConnectorsDbOrTx, notOfTypes?: string[]): Promise<number> {
    let qb = db.selectFrom('connector_auths').select((eb) => eb.fn.countAll<number>().as('n'))
      .where('company_id', '=', companyId).where('connector_id', '=', connectorId);
    if (notOfTypes) qb = notOfTypes.length ? qb.where('auth_type', 'not in', notOfTypes) : qb;
    const r = await qb.executeTakeFirstOrThrow();
    return Number(r.n);
  }

  actionById(companyId: string, id: string, db: ConnectorsDbOrTx = this.db): Promise<ConnectorActionRow | undefined> {
    return db.selectFrom('connector_actions').selectAll().where('id', '=', id).where(visibleTo(companyId, 'connector_actions')).executeTakeFirst();
  }
  actionByName(companyId: string, connectorId: string, name: string): Promise<ConnectorActionRow | undefined> {
    return this.db.selectFrom('connector_actions').selectAll()
      .where('connector_id', '=', connectorId).where('name', '=', name).where(visibleTo(companyId, 'connector_actions')).executeTakeFirst();
  }
  listActions(companyId: string, conds: Condition[], cursor: Cursor | null, limit: number, connectorId?: string): Promise<ConnectorActionRow[]> {
    let qb = this.db.selectFrom('connector_actions').selectAll().where(visibleTo(companyId, 'connector_actions'));
    if (connectorId !== undefined) qb = qb.where('connector_id', '=', connectorId);
    qb = afterCursor(applyFilters(qb, conds), cursor, 'connector_actions');
    return qb.orderBy('created_at').orderBy('id').limit(limit).execute();
  }
  async insertAction(row: ConnectorActionRow, db: ConnectorsDbOrTx): Promise<void> {
    await db.insertInto('connector_actions').values(row).execute();
  }
  async updateAction(companyId: string, id: string, patch: Partial<ConnectorActionRow>, db: ConnectorsDbOrTx): Promise<number> {
    const r = await db.updateTable('connector_actions').set(patch).where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
    return Number(r.numUpdatedRows);
  }
  async deleteAction(companyId: string, id: string, db: ConnectorsDbOrTx): Promise<number> {
    const r = await db.deleteFrom('connector_actions').where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
