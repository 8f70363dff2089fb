// Environment variables of a company (created by migration 0004_flows).
export interface EnvVariableRow {
  id: string;
  company_id: string;
  /** ^[A-Z_][A-Z0-9_]{0,63}$, unique per company. */
  name: string;
  /** The value of a non-secret variable; null for a secret one. */
  value: string | null;
  /** fg1:… ciphertext of a secret variable's value (AAD `env_variable:<company>:<id>`); else null. */
  value_encrypted: string | null;
  secret: number;
  created_by_user_id: string | null;
  created_at: string;
  updated_at: string;
}

export interface EnvVariableTables {
  env_variables: EnvVariableRow;
}
