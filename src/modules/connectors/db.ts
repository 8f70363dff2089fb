// The connector modules use the one composed database type (src/db/schema.ts).
import type { Database } from '../../db/schema.ts';
import type { Db, DbOrTx, Tx } from '../../db/index.ts';

export type ConnectorsDatabase = Database;
export type ConnectorsDb = Db;
export type ConnectorsTx = Tx;
export type ConnectorsDbOrTx = DbOrTx;
