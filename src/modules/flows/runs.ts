// Runs: accepting (a durable enqueue: one INSERT of a queued run), reading runs and steps,
// and waiting for a run to end (Prefer: wait).
import crypto from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Actor } from '../access/principal.ts';
import { AppError, conflict, notFound } from '../../http/errors.ts';
import { nowIso } from '../../db/time.ts';
import type { FilterSpec } from '../../http/filter.ts';
import { type ListQuery, type Page, listPage } from '../../http/pagination.ts';
import type { FlowsStore } from './store.ts';
import type { FlowRow, FlowRunRow, FlowRunStepRow, RunStatus, StepStatus } from './tables.ts';

export interface RunError { code: string; message: string; step: string | null }

export interface FlowRun {
  id: string;
  flow_id: string;
  status: RunStatus;
  trigger: string;
  triggered_by_user_id: string | null;
  attempts: number;
  error: RunError | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  updated_at: string;
}

export interface FlowRunStep {
  id: string;
  run_id: string;
  position: number;
  name: string;
  connector_id: string;
  action: string;
  connector_auth_id: string | null;
  status: StepStatus;
  input: unknown;
  output: unknown;
  error: { code: string; message: string } | null;
  started_at: string;
  finished_at: string | null;
  duration_ms: number | null;
}

export interface TriggerRequest {
  query: Record<string, unknown>;
  body: unknown;
  headers: Record<string, string>;
}

export const RUN_FILTERS: FilterSpec = {
  flow_id: { column: 'flow_id', type: 'string' },
  status: { column: 'status', type: 'string' },
  trigger: { column: 'trigger', type: 'string' },
  created_at: { column: 'created_at', type: 'timestamp' },
  started_at: { column: 'started_at', type: 'timestamp' },
  finished_at: { column: 'finished_at', type: 'timestamp' },
};

/** Headers that carry credentials: never stored with a run nor shown to templates. */
const DROPPED_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie', 'x-webhook-token']);
/** Query parameters that carry credentials. */
const DROPPED_PARAMS = new Set(['webhook_token', 'access_token']);

export function runView(r: FlowRunRow): FlowRun {
  return {
    id: r.id, flow_id: r.flow_id, status: r.status, trigger: r.trigger, triggered_by_user_id: r.triggered_by_user_id,
    attempts: r.attempts, error: r.error ? JSON.parse(r.error) : null, created_at: r.created_at, started_at: r.started_at,
    finished_at: r.finished_at, updated_at: r.updated_at,
  };
}

function stepView(r: FlowRunStepRow): FlowRunStep {
  const parse = (s: string | null) => (s === null ? null : JSON.parse(s));
  return {
    id: r.id, run_id: r.run_id, position: r.position, name: r.name, connector_id: r.connector_id, action: r.action,
    connector_auth_id: r.connector_auth_id, status: r.status, input: parse(r.input), output: parse(r.output), error: parse(r.error),
    started_at: r.started_at, finished_at: r.finished_at, duration_ms: r.duration_ms,
  };
}

/** The parts of the starting request a run keeps, without credentials. */
export function triggerRequest(query: unknown, body: unknown, headers: Record<string, string | string[] | undefined>): TriggerRequest {
  const q: Record<string, unknown> = {};
  for (const [k, v] of Object.entries((query ?? {}) as Record<string, unknown>)) if (!DROPPED_PARAMS.has(k)) q[k] = v;
  const h: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    const name = k.toLowerCase();
    if (v === undefined || DROPPED_HEADERS.has(name)) continue;
    h[name] = Array.isArray(v) ? v.join(', ') : v;
  }
  return { query: q, body: body === undefined ? null : body, headers: h };
}

export class RunsService {
  readonly #store: FlowsStore;
  /** Emits `run id` when this process ends a run (wakes Prefer: wait without a poll). */
  readonly finished = new EventEmitter();
  /** Emits 'queued' when this process accepts a run (wakes the local worker). */
  readonly queued = new EventEmitter();

  constructor(store: FlowsStore) {
    this.#store = store;
    this.finished.setMaxListeners(0);
    this.queued.setMaxListeners(0);
  }

  /**
   * Stores a queued run of `flow`: the single INSERT is the whole accept, so a 202 means the
   * run is on disk. A paused flow stores nothing.
   */
  async accept(flow: FlowRow, trigger: 'webhook' | 'api', triggeredBy: string | null, request: TriggerRequest): Promise<FlowRun> {
    if (flow.status === 'paused') throw conflict('flow_paused', 'The flow is paused; it accepts no runs until it is set to active or draft.');
    const now = nowIso();
    const row: FlowRunRow = {
      id: crypto.randomUUID(), company_id: flow.company_id, flow_id: flow.id, status: 'queued', trigger,
      triggered_by_user_id: triggeredBy, request: JSON.stringify(request), error: null, attempts: 0,
      lease_owner: null, lease_expires_at: null, started_at: null, finished_at: null, created_at: now, updated_at: now,
    };
    await this.#store.insertRun(row);
    this.queued.emit('queued');
    return runView(row);
  }

  async list(actor: Actor, q: ListQuery): Promise<Page<FlowRun>> {
    return listPage(q, RUN_FILTERS, (p) => this.#store.listRuns(actor.principal.companyId, p.conds, p.cursor, p.limit), runView);
  }

  async get(actor: Actor, id: string): Promise<FlowRun> {
    const row = await this.#store.runById(actor.principal.companyId, id);
    if (!row) throw notFound('flow run');
    return runView(row);
  }

  async steps(actor: Actor, id: string): Promise<{ data: FlowRunStep[]; next_cursor: null }> {
    const companyId = actor.principal.companyId;
    if (!(await this.#store.runStatus(companyId, id))) throw notFound('flow run');
    return { data: (await this.#store.stepsOfRun(companyId, id)).map(stepView), next_cursor: null };
  }

  /**
   * Waits up to `ms` for the run to end; returns it when it did, else null. Woken at once when
   * this process ends it, and polls the database for runs another instance executes.
   */
  async waitFor(companyId: string, id: string, ms: number): Promise<FlowRun | null> {
    const deadline = Date.now() + ms;
    for (;;) {
      const row = await this.#store.runById(companyId, id);
      if (!row) throw new AppError(404, 'not_found', 'The flow run disappeared (was its flow deleted?).');
      if (row.status === 'success' || row.status === 'error') return runView(row);
      const left = deadline - Date.now();
      if (left <= 0) return null;
      await new Promise<void>((resolve) => {
        const done = () => { clearTimeout(timer); this.finished.off(id, done); resolve(); };
        const timer = setTimeout(done, Math.min(left, 250));
        this.finished.on(id, done);
      });
    }
  }
}
