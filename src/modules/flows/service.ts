// Flows: definitions, validation at save time, webhook tokens. A flow belongs to a company and
// has an owner (its creator); its runs use connector auths with the owner's rights.
import crypto from 'node:crypto';
import type { Actor, Principal } from '../access/principal.ts';
import { isAdmin } from '../access/gate.ts';
import { AppError, notFound, validationFailed, type FieldError } from '../../http/errors.ts';
import { nowIso } from '../../db/time.ts';
import type { AuditService } from '../audit/service.ts';
import type { ConnectorsService } from '../connectors/service.ts';
import { CONNECTOR_ACTIONS } from '../connectors/runtime/index.ts';
import type { FilterSpec } from '../../http/filter.ts';
import { type ListQuery, type Page, listPage } from '../../http/pagination.ts';
import { generateToken, hasValidChecksum, timingSafeEqualHex, tokenDigest, tokenHint } from '../../crypto/token.ts';
import type { FlowsStore } from './store.ts';
import type { FlowRow, FlowStatus } from './tables.ts';
import { checkDeep, compileTemplate, isTemplate } from './templates.ts';

export const WEBHOOK_TOKEN_PREFIX = 'fgw';
export const FLOW_STATUSES = ['draft', 'active', 'paused'] as const;
export const STEP_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
export const MAX_STEPS = 50;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface StepDef {
  name: string;
  connector_id: string;
  action: string;
  /** A uuid4, a template that renders one, or null (HTTP steps without stored credentials). */
  connector_auth_id: string | null;
  input: Record<string, unknown>;
}

export interface Flow {
  id: string;
  name: string;
  status: FlowStatus;
  steps: StepDef[];
  webhook_token_required: boolean;
  webhook_token_hint: string;
  webhook_url: string;
  owner_user_id: string;
  created_at: string;
  updated_at: string;
}

export interface FlowWithToken extends Flow {
  /** Shown in the creation response only. */
  webhook_token: string;
}

/** A step as the API accepts it: input and connector_auth_id may be left out. */
export interface StepInput {
  name: string;
  connector_id: string;
  action: string;
  connector_auth_id?: string | null;
  input?: Record<string, unknown>;
}

export interface NewFlow {
  name: string;
  status?: FlowStatus;
  steps?: StepInput[];
  webhook_token_required?: boolean;
}
export type FlowPatch = Partial<NewFlow>;

export const FLOW_FILTERS: FilterSpec = {
  name: { column: 'name', type: 'string' },
  status: { column: 'status', type: 'string' },
  owner_user_id: { column: 'owner_user_id', type: 'string' },
  webhook_token_required: { column: 'webhook_token_required', type: 'boolean' },
  created_at: { column: 'created_at', type: 'timestamp' },
  updated_at: { column: 'updated_at', type: 'timestamp' },
};

export class FlowsService {
  readonly #store: FlowsStore;
  readonly #connectors: ConnectorsService;
  readonly #audit: AuditService;
  readonly #digestKey: Buffer;
  readonly #baseUrl: string;

  constructor(deps: { store: FlowsStore; connectors: ConnectorsService; audit: AuditService; digestKey: Buffer; baseUrl: string }) {
    this.#store = deps.store; this.#connectors = deps.connectors; this.#audit = deps.audit;
    this.#digestKey = deps.digestKey; this.#baseUrl = deps.baseUrl;
  }

  view(r: FlowRow): Flow {
    return {
      id: r.id, name: r.name, status: r.status, steps: JSON.parse(r.steps), webhook_token_required: r.webhook_token_required === 1,
      webhook_token_hint: r.webhook_token_hint, webhook_url: `${this.#baseUrl}/v1/flow-webhook/${r.id}`,
      owner_user_id: r.owner_user_id, created_at: r.created_at, updated_at: r.updated_at,
    };
  }

  // ---- validation ----

  /** Checks the whole definition; every problem is a 400 naming the step (index and name) and field. */
  async #validateSteps(companyId: string, steps: StepInput[]): Promise<StepDef[]> {
    const errors: FieldError[] = [];
    const seen = new Map<string, number>();
    const out: StepDef[] = [];
    for (const [i, s] of steps.entries()) {
      const at = `steps.${i}`;
      const label = `step ${i} "${s.name}"`;
      if (!STEP_NAME.test(s.name)) errors.push({ field: `${at}.name`, message: `${label}: must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$` });
      if (seen.has(s.name)) errors.push({ field: `${at}.name`, message: `${label}: duplicate step name (also step ${seen.get(s.name)})` });
      else seen.set(s.name, i);

      const connector = UUID.test(s.connector_id) ? await this.#connectors.get(companyId, s.connector_id) : null;
      if (!connector) {
        errors.push({ field: `${at}.connector_id`, message: `${label}: unknown connector ${s.connector_id}` });
      } else if (!connector.runtime) {
        errors.push({ field: `${at}.connector_id`, message: `${label}: connector "${connector.name}" has no runtime; the flow engine cannot run it` });
      } else {
        const action = await this.#connectors.action(companyId, connector.id, s.action);
        const runnable = CONNECTOR_ACTIONS[connector.runtime] ?? [];
        if (!action) {
          errors.push({ field: `${at}.action`, message: `${label}: connector "${connector.name}" has no action "${s.action}"` });
        } else if (!runnable.includes(s.action)) {
          errors.push({ field: `${at}.action`, message: `${label}: the ${connector.runtime} engine cannot run "${s.action}" (it runs: ${runnable.join(', ')})` });
        }
        if (s.connector_auth_id == null && connector.runtime !== 'http') {
          errors.push({ field: `${at}.connector_auth_id`, message: `${label}: a ${connector.name} step needs a connector auth` });
        }
      }

      const auth = s.connector_auth_id ?? null;
      if (auth !== null) {
        if (isTemplate(auth)) {
          try {
            compileTemplate(auth);
          } catch (err) {
            errors.push({ field: `${at}.connector_auth_id`, message: `${label}: bad template: ${(err as Error).message}` });
          }
        } else if (!UUID.test(auth)) {
          errors.push({ field: `${at}.connector_auth_id`, message: `${label}: must be a uuid4 or a template such as {{ request.query.customer_auth_id }}` });
        }
      }
      const tplErrors: FieldError[] = [];
      checkDeep(s.input, `${at}.input`, tplErrors);
      for (const e of tplErrors) errors.push({ field: e.field, message: `${label}: ${e.message}` });
      out.push({ name: s.name, connector_id: s.connector_id, action: s.action, connector_auth_id: auth, input: s.input ?? {} });
    }
    if (errors.length) throw validationFailed(errors);
    return out;
  }

  // ---- access ----

  /** Changing a flow changes what runs with its owner's credentials: the owner and admins only. */
  #mayChange(p: Principal, row: FlowRow): void {
    if (row.owner_user_id !== p.userId && !isAdmin(p)) {
      throw new AppError(403, 'forbidden', 'Only the owner of a flow or an admin may change it.');
    }
  }

  async #row(companyId: string, id: string): Promise<FlowRow> {
    const row = await this.#store.flowById(companyId, id);
    if (!row) throw notFound('flow');
    return row;
  }

  // ---- CRUD ----

  async list(actor: Actor, q: ListQuery): Promise<Page<Flow>> {
    return listPage(q, FLOW_FILTERS, (p) => this.#store.listFlows(actor.principal.companyId, p.conds, p.cursor, p.limit), (r) => this.view(r));
  }

  async get(actor: Actor, id: string): Promise<Flow> {
    return this.view(await this.#row(actor.principal.companyId, id));
  }

  /** For the run services: the raw row, company-scoped. */
  row(companyId: string, id: string): Promise<FlowRow | undefined> {
    return this.#store.flowById(companyId, id);
  }

  async create(actor: Actor, input: NewFlow): Promise<FlowWithToken> {
    const p = actor.principal;
    const steps = await this.#validateSteps(p.companyId, input.steps ?? []);
    const token = generateToken(WEBHOOK_TOKEN_PREFIX);
    const now = nowIso();
    const row: FlowRow = {
      id: crypto.randomUUID(), company_id: p.companyId, owner_user_id: p.userId, name: input.name,
      status: input.status ?? 'draft', steps: JSON.stringify(steps),
      webhook_token_required: input.webhook_token_required === false ? 0 : 1,
      webhook_token_digest: tokenDigest(this.#digestKey, token), webhook_token_hint: tokenHint(token),
      created_at: now, updated_at: now,
    };
    await this.#store.insertFlow(row);
    await this.#audit.record(actor, p.companyId, 'flow.created', { type: 'flow', id: row.id },
      { name: row.name, status: row.status, steps: steps.length, webhook_token_required: row.webhook_token_required === 1 });
    return { ...this.view(row), webhook_token: token };
  }

  async update(actor: Actor, id: string, patch: FlowPatch): Promise<Flow> {
    const p = actor.principal;
    const row = await this.#row(p.companyId, id);
    this.#mayChange(p, row);
    const set: Partial<FlowRow> = { updated_at: nowIso() };
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.status !== undefined) set.status = patch.status;
    if (patch.webhook_token_required !== undefined) set.webhook_token_required = patch.webhook_token_required ? 1 : 0;
    if (patch.steps !== undefined) set.steps = JSON.stringify(await this.#validateSteps(p.companyId, patch.steps));
    if (!(await this.#store.updateFlow(p.companyId, id, set))) throw notFound('flow');
    const fields = Object.keys(patch).filter((k) => (patch as Record<string, unknown>)[k] !== undefined);
    await this.#audit.record(actor, p.companyId, 'flow.updated', { type: 'flow', id }, { fields, status: set.status ?? row.status });
    return this.view({ ...row, ...set });
  }

  async delete(actor: Actor, id: string): Promise<void> {
    const p = actor.principal;
    const row = await this.#row(p.companyId, id);
    this.#mayChange(p, row);
    if (!(await this.#store.deleteFlow(p.companyId, id))) throw notFound('flow');
    await this.#audit.record(actor, p.companyId, 'flow.deleted', { type: 'flow', id }, { name: row.name });
  }

  /** A new webhook token; the old one is refused from now on. */
  async regenerateWebhookToken(actor: Actor, id: string): Promise<{ webhook_token: string; webhook_token_hint: string; webhook_url: string }> {
    const p = actor.principal;
    const row = await this.#row(p.companyId, id);
    this.#mayChange(p, row);
    const token = generateToken(WEBHOOK_TOKEN_PREFIX);
    const hint = tokenHint(token);
    if (!(await this.#store.updateFlow(p.companyId, id, { webhook_token_digest: tokenDigest(this.#digestKey, token), webhook_token_hint: hint, updated_at: nowIso() }))) {
      throw notFound('flow');
    }
    await this.#audit.record(actor, p.companyId, 'flow.webhook_token_regenerated', { type: 'flow', id }, { hint });
    return { webhook_token: token, webhook_token_hint: hint, webhook_url: `${this.#baseUrl}/v1/flow-webhook/${id}` };
  }

  // ---- webhook credentials ----

  /** Does `token` open the webhook of `row`? Constant-time comparison of keyed digests. */
  webhookTokenMatches(row: FlowRow, token: string): boolean {
    if (!hasValidChecksum(token, WEBHOOK_TOKEN_PREFIX)) return false;
    return timingSafeEqualHex(tokenDigest(this.#digestKey, token), row.webhook_token_digest);
  }

  /** The flow a webhook token belongs to (for `Authorization: Bearer fgw_...`). */
  async flowOfWebhookToken(token: string): Promise<FlowRow | null> {
    if (!hasValidChecksum(token, WEBHOOK_TOKEN_PREFIX)) return null;
    return (await this.#store.flowByWebhookDigest(tokenDigest(this.#digestKey, token))) ?? null;
  }

  /** Only for the webhook: the flow named in its path, in whatever company. */
  flowForWebhook(id: string): Promise<FlowRow | undefined> {
    return this.#store.flowByIdForWebhook(id);
  }
}
