// The database as Kysely sees it: every module declares its own tables, composed here once,
// so every store works with the one `Db` type and no casts.
import type { FoundationTables } from '../modules/identity/tables.ts';
import type { ConnectorTables } from '../modules/connectors/tables.ts';
import type { ConnectorAuthTables } from '../modules/connector-auths/tables.ts';
import type { OAuthTables } from '../modules/oauth/tables.ts';
import type { EnvVariableTables } from '../modules/env-variables/tables.ts';
import type { FileUploadTables } from '../modules/file-uploads/tables.ts';
import type { FlowTables } from '../modules/flows/tables.ts';

export interface Database extends FoundationTables, ConnectorTables, ConnectorAuthTables, OAuthTables,
  EnvVariableTables, FileUploadTables, FlowTables {}
