// Tables of flows, runs and run steps (migration 0004_flows). Timestamps are ISO text, booleans
// 0/1 and JSON text, like the rest of flowgate.
import type { Kysely } from 'kysely';
import type { Db } from '../../db/index.ts';
import type { FoundationTables } from '../identity/tables.ts';
import type { EnvVariableTables } from '../env-variables/tables.ts';
import type { FileUploadTables } from '../file-uploads/tables.ts';

export type FlowStatus = 'draft' | 'active' | 'paused';
export type RunStatus = 'queued' | 'running' | 'success' | 'error';
export type StepStatus = 'running' | 'success' | 'error';

export interface FlowRow {
  id: string;
  company_id: string;
  /** The creator: runs resolve connector auths with this user's rights. */
  owner_user_id: string;
  name: string;
  status: FlowStatus;
  /** JSON array of step definitions. */
  steps: string;
  webhook_token_required: number;
  /** Keyed digest (HMAC-SHA-256) of the webhook token; the token itself is never stored. */
  webhook_token_digest: string;
  webhook_token_hint: string;
  created_at: string;
  updated_at: string;
}

export interface FlowRunRow {
  id: string;
  company_id: string;
  flow_id: string;
  status: RunStatus;
  /** 'webhook' | 'api' */
  trigger: string;
  /** The user whose credential started the run; null for a webhook token or no credential. */
  triggered_by_user_id: string | null;
  /** JSON {query, body, headers} of the starting request (credentials removed). */
  request: string;
  /** JSON {code, message, step} when status is error. */
  error: string | null;
  /** How many times a worker claimed the run (more than 1 after a crash). */
  attempts: number;
  /** The worker holding the run while it is running. */
  lease_owner: string | null;
  /** When the holder's lease runs out; an expired running run is queued again. */
  lease_expires_at: string | null;
  started_at: string | null;
  finished_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface FlowRunStepRow {
  id: string;
  company_id: string;
  run_id: string;
  position: number;
  name: string;
  connector_id: string;
  action: string;
  /** The connector auth id the step resolved to (rendered), if any. */
  connector_auth_id: string | null;
  status: StepStatus;
  /** JSON, secrets replaced by ***. */
  input: string | null;
  output: string | null;
  error: string | null;
  started_at: string;
  finished_at: string | null;
  duration_ms: number | null;
}

export interface FlowTables {
  flows: FlowRow;
  flow_runs: FlowRunRow;
  flow_run_steps: FlowRunStepRow;
}

export type FlowsDb = Db;

