// Tables of the connectors module. Ids are text uuid4, timestamps ISO text, booleans 0/1,
// JSON as text, identical on SQLite and PostgreSQL.

export interface ConnectorRow {
  id: string;
  /** NULL: built in, visible to every company, read-only. */
  company_id: string | null;
  name: string;
  contype: string;
  status: string;
  /** JSON array of auth_type values. */
  auth_types: string;
  base_domain: string | null;
  short_description: string;
  /** JSON array of strings. */
  tags: string;
  runtime: string | null;
  created_at: string;
  updated_at: string;
}

export interface ConnectorActionRow {
  id: string;
  connector_id: string;
  /** The connector's company_id (NULL for the built-in catalogue), so every query filters by company. */
  company_id: string | null;
  name: string;
  method: string;
  short_description: string;
  /** JSON Schema of the action's input, JSON text. */
  input_schema: string;
  created_at: string;
  updated_at: string;
}

export interface ConnectorTables {
  connectors: ConnectorRow;
  connector_actions: ConnectorActionRow;
}
