// Executes one claimed run: renders each step's connector auth id and input, resolves the
// customer's credential (decrypted here, for this step only, audited with the run id), runs
// the connector action with a timeout, and stores every input, output and error with each
// known secret replaced by ***.
import crypto from 'node:crypto';
import type { ConnectorsService } from '../connectors/service.ts';
import type { ConnectorAuthsService } from '../connector-auths/service.ts';
import { ConnectorAuthResolveError } from '../connector-auths/service.ts';
import type { EnvVariablesService } from '../env-variables/service.ts';
import { ConnectorError, runAction, type ConnectorKind, type ResolvedCredential } from '../connectors/runtime/index.ts';
import { scrubDeep, scrubSecrets } from '../connectors/runtime/scrub.ts';
import { nowIso } from '../../db/time.ts';
import type { FlowsStore } from './store.ts';
import type { FlowRunRow, FlowRunStepRow } from './tables.ts';
import type { StepDef } from './service.ts';
import type { RunError, RunsService, TriggerRequest } from './runs.ts';
import { compileTemplate, isTemplate, renderDeep, TemplateRenderError } from './templates.ts';

/** Largest stored input/output of a step, as JSON text; bigger values are stored as a summary. */
export const MAX_STORED_JSON = 1024 * 1024;
/** Env secrets shorter than this are not scrubbed from records (they would mangle ordinary text). */
const MIN_ENV_SECRET = 4;

export interface EngineLog {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface EngineDeps {
  store: FlowsStore;
  runs: RunsService;
  connectors: ConnectorsService;
  connectorAuths: ConnectorAuthsService;
  envVariables: EnvVariablesService;
  stepTimeoutMs: number;
  log: EngineLog;
}

/** Why the worker stopped a run in the middle. */
export type AbortReason = 'shutdown' | 'lease_lost';

type StoredField = 'input' | 'output' | 'error';
interface StoredStep {
  id: string;
  values: Partial<Record<StoredField, unknown>>;
  /** What was written for each field, to rewrite only what a later-known secret changes. */
  written: Partial<Record<StoredField, string | null>>;
}

class StepFailure extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/** Where a connector auth id came from, for error messages. */
function authSource(def: StepDef): string {
  const raw = def.connector_auth_id ?? '';
  if (!isTemplate(raw)) return `the step's connector_auth_id`;
  try {
    const q = compileTemplate(raw).queryParam;
    if (q) return `query parameter "${q}" (template ${raw.trim()})`;
  } catch { /* described below */ }
  return `template ${raw.trim().slice(0, 200)}`;
}

function storedJson(value: unknown, secrets: string[]): string | null {
  if (value === undefined) return null;
  const text = JSON.stringify(scrubDeep(value, secrets)) ?? null;
  if (text !== null && text.length > MAX_STORED_JSON) {
    return JSON.stringify({ truncated: true, json_length: text.length, note: `larger than ${MAX_STORED_JSON} characters; not stored` });
  }
  return text;
}

/** The forms of an env secret that may appear in records (raw and base64 via b64encode). */
function envSecretForms(values: string[]): string[] {
  const out: string[] = [];
  for (const v of values) {
    if (v.length < MIN_ENV_SECRET) continue;
    out.push(v, Buffer.from(v, 'utf8').toString('base64'));
  }
  return out;
}

export class Engine {
  readonly #d: EngineDeps;
  constructor(deps: EngineDeps) { this.#d = deps; }

  /**
   * Executes `run`, held by `worker`. Ends it (success or error) unless `signal` aborts with
   * 'shutdown' (the run goes back to the queue) or 'lease_lost' (another worker owns it now).
   */
  async execute(run: FlowRunRow, worker: string, signal: AbortSignal): Promise<void> {
    const d = this.#d;
    const { store } = d;
    const companyId = run.company_id;
    const purpose = `flow_run:${run.id}`;
    const secrets = new Set<string>();
    const stored: StoredStep[] = [];
    let runError: RunError | null = null;

    try {
      const flow = await d.store.flowById(companyId, run.flow_id);
      if (!flow) {
        runError = { code: 'flow_deleted', message: 'The flow was deleted before the run started.', step: null };
      } else if (flow.status === 'paused') {
        runError = { code: 'flow_paused', message: 'The flow was paused before the run started; no step was executed.', step: null };
      } else {
        // A run claimed again after a crash starts over.
        await store.deleteSteps(companyId, run.id);
        const request = JSON.parse(run.request) as TriggerRequest;
        const env = await d.envVariables.forRun(companyId, purpose);
        const envObj: Record<string, string> = {};
        for (const name of env.names) {
          Object.defineProperty(envObj, name, { enumerable: true, get: () => env.value(name) });
        }
        const stepsCtx: Record<string, { output: unknown; status: string }> = {};
        const data = {
          request: { body: request.body, query: request.query, headers: request.headers },
          steps: stepsCtx,
          env: envObj,
          run: { id: run.id, flow_id: run.flow_id, trigger: run.trigger },
          flow: { id: flow.id, name: flow.name },
        };
        const defs = JSON.parse(flow.steps) as StepDef[];
        for (const [position, def] of defs.entries()) {
          if (signal.aborted) break;
          const stepId = crypto.randomUUID();
          const startedAt = nowIso();
          const t0 = performance.now();
          await store.insertStep({
            id: stepId, company_id: companyId, run_id: run.id, position, name: def.name, connector_id: def.connector_id,
            action: def.action, connector_auth_id: null, status: 'running', input: null, output: null, error: null,
            started_at: startedAt, finished_at: null, duration_ms: null,
          });
          let input: unknown;
          let authId: string | null = null;
          const rec: StoredStep = { id: stepId, values: {}, written: {} };
          stored.push(rec);
          try {
            authId = this.#renderAuthId(def, data);
            try {
              input = renderDeep(def.input ?? {}, data, 'input');
            } catch (err) {
              throw new StepFailure('template_error', `Step "${def.name}": ${(err as Error).message}`);
            } finally {
              for (const s of envSecretForms(env.decryptedSecrets())) secrets.add(s);
            }
            rec.values.input = input;
            const connector = await d.connectors.get(companyId, def.connector_id);
            if (!connector || !connector.runtime) throw new StepFailure('connector_not_found', `Connector ${def.connector_id} no longer exists or has no runtime.`);
            let cred: ResolvedCredential;
            if (authId === null) {
              cred = { authType: 'none', apiEndpoint: null, username: null, password: null, authToken: null, authDetails: null };
            } else {
              try {
                const resolved = await d.connectorAuths.resolveForRun({ companyId, userId: flow.owner_user_id, authId, connectorId: def.connector_id, purpose });
                for (const s of resolved.secrets) secrets.add(s);
                cred = resolved;
              } catch (err) {
                if (err instanceof ConnectorAuthResolveError) {
                  const what = err.code === 'connector_mismatch'
                    ? `is for another connector than ${connector.name}`
                    : err.code === 'connector_auth_not_found' ? 'does not exist in this company or is not visible to the flow\'s owner' : 'cannot be decrypted here';
                  throw new StepFailure(err.code, `Step "${def.name}": connector auth ${authId} from ${authSource(def)} ${what}.`);
                }
                throw err;
              }
            }
            await store.updateStep(companyId, stepId, { connector_auth_id: authId, input: this.#write(rec, 'input', input, secrets) });
            const stepSignal = AbortSignal.any([signal, AbortSignal.timeout(d.stepTimeoutMs)]);
            let output: unknown;
            try {
              output = await runAction(connector.runtime as ConnectorKind, def.action, input, cred, { signal: stepSignal, timeoutMs: d.stepTimeoutMs });
            } catch (err) {
              if (err instanceof ConnectorError) {
                const why = signal.aborted ? ' (the run was interrupted)' : '';
                throw new StepFailure(err.code, `Step "${def.name}": ${err.message}${why}`);
              }
              throw err;
            }
            await env.flush();
            stepsCtx[def.name] = { output, status: 'success' };
            rec.values.output = output;
            await store.updateStep(companyId, stepId, {
              status: 'success', output: this.#write(rec, 'output', output, secrets), finished_at: nowIso(), duration_ms: Math.round(performance.now() - t0),
            });
          } catch (err) {
            await env.flush().catch(() => {});
            if (signal.aborted) break;
            const failure = err instanceof StepFailure
              ? err
              : err instanceof TemplateRenderError
                ? new StepFailure('template_error', `Step "${def.name}": ${err.message}`)
                : new StepFailure('internal_error', `Step "${def.name}" failed unexpectedly.`);
            if (!(err instanceof StepFailure) && !(err instanceof TemplateRenderError)) {
              d.log.error({ run_id: run.id, step: def.name, err: { name: (err as Error)?.name } }, 'flow step failed unexpectedly');
            }
            const error = { code: failure.code, message: scrubSecrets(failure.message, [...secrets]) };
            rec.values.error = error;
            await store.updateStep(companyId, stepId, {
              status: 'error', connector_auth_id: authId,
              input: input === undefined ? null : this.#write(rec, 'input', input, secrets),
              error: this.#write(rec, 'error', error, secrets), finished_at: nowIso(), duration_ms: Math.round(performance.now() - t0),
            });
            runError = { code: failure.code, message: error.message, step: def.name };
            break;
          }
        }
      }
    } catch (err) {
      if (!signal.aborted) {
        d.log.error({ run_id: run.id, err: { name: (err as Error)?.name, code: (err as { code?: unknown })?.code } }, 'flow run failed unexpectedly');
        runError = { code: 'internal_error', message: 'The run failed unexpectedly; it has been logged.', step: null };
      }
    }

    const now = nowIso();
    if (signal.aborted) {
      if (signal.reason === 'shutdown') await store.releaseRun(run.id, worker, now).catch(() => {});
      return;
    }
    // Secrets learnt in later steps are scrubbed from what earlier steps stored, too.
    await this.#rescrub(companyId, stored, secrets);
    const errorJson = runError ? JSON.stringify({ ...runError, message: scrubSecrets(runError.message, [...secrets]) }) : null;
    await store.finishRun(run.id, worker, runError ? 'error' : 'success', errorJson, now);
    d.runs.finished.emit(run.id);
  }

  #renderAuthId(def: StepDef, data: Record<string, unknown>): string | null {
    const raw = def.connector_auth_id;
    if (raw === null) return null;
    if (!isTemplate(raw)) return raw;
    let value: unknown;
    try {
      value = compileTemplate(raw).render(data);
    } catch (err) {
      throw new StepFailure('template_error', `Step "${def.name}": connector_auth_id: ${(err as Error).message}`);
    }
    const id = value === null || value === undefined ? '' : String(value).trim();
    if (id === '') {
      throw new StepFailure('connector_auth_not_found', `Step "${def.name}": ${authSource(def)} gave no connector auth id (is the query parameter missing?).`);
    }
    return id;
  }

  /** JSON for the database with the secrets known now; remembers it for the final re-scrub. */
  #write(rec: StoredStep, field: StoredField, value: unknown, secrets: Set<string>): string | null {
    rec.values[field] = value;
    const text = storedJson(value, [...secrets]);
    rec.written[field] = text;
    return text;
  }

  async #rescrub(companyId: string, stored: StoredStep[], secrets: Set<string>): Promise<void> {
    if (secrets.size === 0) return;
    const list = [...secrets];
    for (const rec of stored) {
      const patch: Partial<FlowRunStepRow> = {};
      for (const f of ['input', 'output', 'error'] as const) {
        if (!(f in rec.written)) continue;
        const text = storedJson(rec.values[f], list);
        if (text !== rec.written[f]) patch[f] = text;
      }
      if (Object.keys(patch).length) await this.#d.store.updateStep(companyId, rec.id, patch);
    }
  }
}
