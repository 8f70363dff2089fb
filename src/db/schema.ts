// The database as Kysely sees it: each module declares its own tables, composed here.
import type { FoundationTables } from '../modules/identity/tables.ts';

export interface Database extends FoundationTables {}
