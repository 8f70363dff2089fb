// The database as the connector modules see it: their own tables plus the foundation tables
// they read. (Typed locally so that src/db/schema.ts needs no edit.)
import type { Kysely, Transaction } from 'kysely';
import type { Db, DbOrTx } from '../../db/index.ts';
import type { FoundationTables } from '../identity/tables.ts';
import type { ConnectorTables } from './tables.ts';
import type { ConnectorAuthTables } from '../connector-auths/tables.ts';

export type ConnectorsDatabase = ConnectorTables & ConnectorAuthTables & FoundationTables;
export type ConnectorsDb = Kysely<ConnectorsDatabase>;
export type ConnectorsTx = Transaction<ConnectorsDatabase>;
export type ConnectorsDbOrTx = ConnectorsDb | ConnectorsTx;

export function connectorsDb(db: Db): ConnectorsDb {
  return db as unknown as ConnectorsDb;
}

/** The same transaction as the foundation's services (audit) type it. */
export function foundationTx(trx: ConnectorsDbOrTx): DbOrTx {
  return trx as unknown as DbOrTx;
}
