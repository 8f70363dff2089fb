// Foundation tables. Booleans are 0/1 integers and timestamps ISO text on both engines;
// JSON columns are text.
export interface CompanyRow { id: string; name: string; created_at: string }
export interface UserRow {
  id: string;
  company_id: string;
  email: string;
  email_lower: string;
  name: string;
  role: 'admin' | 'member';
  disabled: number;
  password_hash: string | null;
  created_at: string;
  updated_at: string;
}
export interface TeamRow { id: string; company_id: string; name: string; created_at: string; updated_at: string }
export interface TeamMemberRow { team_id: string; user_id: string; company_id: string }
export interface PersonalAccessTokenRow {
  id: string;
  company_id: string;
  user_id: string;
  digest: string;
  hint: string;
  scopes: string;
  note: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
  created_at: string;
  updated_at: string;
}
export interface AuditEventRow {
  id: string;
  company_id: string;
  action: string;
  actor_user_id: string | null;
  credential_kind: string;
  credential_id: string | null;
  ip: string | null;
  request_id: string | null;
  target_type: string | null;
  target_id: string | null;
  details: string;
  created_at: string;
}
export interface SettingRow { key: string; value: string }
export interface EncryptionKeyRow {
  id: string;
  /** The data key, wrapped (AES-256-GCM) by the master key. */
  wrapped_key: string;
  status: 'active' | 'retired';
  created_at: string;
}

export interface FoundationTables {
  companies: CompanyRow;
  users: UserRow;
  teams: TeamRow;
  team_members: TeamMemberRow;
  personal_access_tokens: PersonalAccessTokenRow;
  audit_events: AuditEventRow;
  settings: SettingRow;
  encryption_keys: EncryptionKeyRow;
}
