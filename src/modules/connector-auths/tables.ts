// Tables of the connector-auths module (created by the migration 0002_connectors).
// Secret columns hold keyring ciphertext (`fg1:…`) or NULL; nothing else holds a secret.

export interface ConnectorAuthRow {
  id: string;
  company_id: string;
  connector_id: string;
  /** The creator; an FK to users, so deleting a user who owns auths answers 409 user_in_use. */
  owner_user_id: string;
  name: string;
  auth_type: string;
  /** api_endpoint with the password of its user-info replaced by `***` (never a secret). */
  api_endpoint: string;
  /** The full api_endpoint, encrypted, only when it carries a password; else NULL. */
  api_endpoint_enc: string | null;
  username: string;
  password_enc: string | null;
  auth_token_enc: string | null;
  auth_details_enc: string | null;
  /** JSON object. */
  user_input: string;
  /** JSON array of strings. */
  tags: string;
  visibility: 'company' | 'private' | 'restricted';
  last_checked_at: string | null;
  /** 0/1, NULL when never checked. */
  last_check_ok: number | null;
  created_at: string;
  updated_at: string;
}

/** One grant of a restricted (or company-visible) auth to a user or a team. Any grant implies read. */
export interface ConnectorAuthGrantRow {
  id: string;
  auth_id: string;
  company_id: string;
  user_id: string | null;
  team_id: string | null;
  can_update: number;
  can_delete: number;
  can_manage: number;
  created_at: string;
}

export interface ConnectorAuthTables {
  connector_auths: ConnectorAuthRow;
  connector_auth_grants: ConnectorAuthGrantRow;
}
