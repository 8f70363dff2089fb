// Connectors and connector actions: the built-in catalogue (read-only) plus each company's own
// connectors. Reading needs only the scope; writing a company's own connectors needs the admin
// role, because a connector is shared by the whole company.
import crypto from 'node:crypto';
import { Ajv } from 'ajv';
import type { ConnectorsStore } from './store.ts';
import type { ConnectorActionRow, ConnectorRow } from './tables.ts';
import type { ConnectorRuntime } from './catalogue.ts';
import type { Actor } from '../access/principal.ts';
import { requireAdmin } from '../access/gate.ts';
import { AppError, conflict, notFound, validationFailed } from '../../http/errors.ts';
import { isUniqueViolation } from '../../db/index.ts';
import { nowIso } from '../../db/time.ts';
import type { AuditService } from '../audit/service.ts';
import type { FilterSpec } from '../../http/filter.ts';
import { type ListQuery, type Page, listPage } from '../../http/pagination.ts';

export interface Connector {
  id: string;
  name: string;
  contype: string;
  status: string;
  auth_types: string[];
  base_domain: string | null;
  short_description: string;
  tags: string[];
  /** Which runtime client runs its actions and tests its credentials; null: none. */
  runtime: ConnectorRuntime | null;
  /** true: part of the built-in catalogue (same id everywhere, read-only). */
  built_in: boolean;
  created_at: string;
  updated_at: string;
}

export interface ConnectorAction {
  id: string;
  connector_id: string;
  name: string;
  method: string;
  short_description: string;
  input_schema: Record<string, unknown>;
  built_in: boolean;
  created_at: string;
  updated_at: string;
}

export interface NewConnector {
  name: string;
  contype?: string;
  status?: string;
  auth_types: string[];
  base_domain?: string | null;
  short_description?: string;
  tags?: string[];
  runtime?: ConnectorRuntime | null;
}
export type ConnectorPatch = Partial<NewConnector>;

export interface NewAction {
  connector_id: string;
  name: string;
  method: string;
  short_description?: string;
  input_schema: Record<string, unknown>;
}
export type ActionPatch = Partial<Omit<NewAction, 'connector_id'>>;

export const CONNECTOR_FILTERS: FilterSpec = {
  name: { column: 'name', type: 'string' },
  contype: { column: 'contype', type: 'string' },
  status: { column: 'status', type: 'string' },
  base_domain: { column: 'base_domain', type: 'string' },
  runtime: { column: 'runtime', type: 'string' },
  tags: { column: 'tags', type: 'json_array' },
  created_at: { column: 'created_at', type: 'timestamp' },
};

export const ACTION_FILTERS: FilterSpec = {
  connector_id: { column: 'connector_id', type: 'string' },
  name: { column: 'name', type: 'string' },
  method: { column: 'method', type: 'string' },
  created_at: { column: 'created_at', type: 'timestamp' },
};

export function toConnector(r: ConnectorRow): Connector {
  return {
    id: r.id, name: r.name, contype: r.contype, status: r.status, auth_types: JSON.parse(r.auth_types),
    base_domain: r.base_domain, short_description: r.short_description, tags: JSON.parse(r.tags),
    runtime: (r.runtime ?? null) as ConnectorRuntime | null, built_in: r.company_id === null,
    created_at: r.created_at, updated_at: r.updated_at,
  };
}

export function toAction(r: ConnectorActionRow): ConnectorAction {
  return {
    id: r.id, connector_id: r.connector_id, name: r.name, method: r.method, short_description: r.short_description,
    input_schema: JSON.parse(r.input_schema), built_in: r.company_id === null, created_at: r.created_at, updated_at: r.updated_at,
  };
}

const readOnly = (what: string) => new AppError(403, 'builtin_read_only', `The built-in ${what} is read-only; create your own connector instead.`);
const nameTaken = () => conflict('connector_name_taken', 'Your company already has a connector with this name.');
const actionNameTaken = () => conflict('action_name_taken', 'This connector already has an action with this name.');

// Validates that an action's input_schema is a JSON Schema (compiles); never runs it here.
const schemaCompiler = new Ajv({ strict: false, allErrors: false, validateSchema: true });

function checkInputSchema(schema: Record<string, unknown>): void {
  try {
    schemaCompiler.compile(schema);
  } catch {
    throw validationFailed([{ field: 'input_schema', message: 'is not a valid JSON Schema' }]);
  }
  if (JSON.stringify(schema).length > 65_536) throw validationFailed([{ field: 'input_schema', message: 'must be at most 65536 characters as JSON' }]);
}

export class ConnectorsService {
  readonly #store: ConnectorsStore;
  readonly #audit: AuditService;
  constructor(store: ConnectorsStore, audit: AuditService) { this.#store = store; this.#audit = audit; }

  // ---- the contract used by the flow engine and the connector-auths module ----

  /** A connector the company can see (built-in or its own), or null. */
  async get(companyId: string, id: string): Promise<Connector | null> {
    const row = await this.#store.connectorById(companyId, id);
    return row ? toConnector(row) : null;
  }

  /** The action `name` of a connector the company can see, or null. */
  async action(companyId: string, connectorId: string, name: string): Promise<ConnectorAction | null> {
    const row = await this.#store.actionByName(companyId, connectorId, name);
    return row ? toAction(row) : null;
  }

  // ---- connectors ----

  async list(actor: Actor, q: ListQuery): Promise<Page<Connector>> {
    return listPage(q, CONNECTOR_FILTERS, (p) => this.#store.listConnectors(actor.principal.companyId, p.conds, p.cursor, p.limit), toConnector);
  }

  async read(actor: Actor, id: string): Promise<Connector> {
    const c = await this.get(actor.principal.companyId, id);
    if (!c) throw notFound('connector');
    return c;
  }

  async create(actor: Actor, input: NewConnector): Promise<Connector> {
    requireAdmin(actor.principal, 'create connectors');
    const companyId = actor.principal.companyId;
    const now = nowIso();
    const row: ConnectorRow = {
      id: crypto.randomUUID(), company_id: companyId, name: input.name, contype: input.contype ?? 'connector',
      status: input.status ?? 'active', auth_types: JSON.stringify([...new Set(input.auth_types)]),
      base_domain: input.base_domain ?? null, short_description: input.short_description ?? '',
      tags: JSON.stringify(input.tags ?? []), runtime: input.runtime ?? null, created_at: now, updated_at: now,
    };
    try {
      await this.#store.db.transaction().execute(async (trx) => {
        await this.#store.insertConnector(row, trx);
        await this.#audit.record(actor, companyId, 'connector.created', { type: 'connector', id: row.id }, { name: row.name }, trx);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw nameTaken();
      throw err;
    }
    return toConnector(row);
  }

  async update(actor: Actor, id: string, patch: ConnectorPatch): Promise<Connector> {
    const companyId = actor.principal.companyId;
    const before = await this.#store.connectorById(companyId, id);
    if (!before) throw notFound('connector');
    if (before.company_id === null) throw readOnly('connector catalogue');
    requireAdmin(actor.principal, 'change connectors');
    if (Object.keys(patch).length === 0) throw validationFailed([{ field: '(body)', message: 'name at least one field to change' }]);
    const set: Partial<ConnectorRow> = { updated_at: nowIso() };
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.contype !== undefined) set.contype = patch.contype;
    if (patch.status !== undefined) set.status = patch.status;
    if (patch.auth_types !== undefined) set.auth_types = JSON.stringify([...new Set(patch.auth_types)]);
    if (patch.base_domain !== undefined) set.base_domain = patch.base_domain;
    if (patch.short_description !== undefined) set.short_description = patch.short_description;
    if (patch.tags !== undefined) set.tags = JSON.stringify(patch.tags);
    if (patch.runtime !== undefined) set.runtime = patch.runtime;
    try {
      await this.#store.db.transaction().execute(async (trx) => {
        if (patch.auth_types !== undefined && (await this.#store.countAuthsOf(companyId, id, trx, patch.auth_types)) > 0) {
          throw conflict('auth_type_in_use', 'Connector auths of this connector use an auth_type this change removes; change or delete them first.');
        }
        if ((await this.#store.updateConnector(companyId, id, set, trx)) === 0) throw notFound('connector');
        await this.#audit.record(actor, companyId, 'connector.updated', { type: 'connector', id }, { fields: Object.keys(patch).sort() }, trx);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw nameTaken();
      throw err;
    }
    return toConnector({ ...before, ...set } as ConnectorRow);
  }

  async delete(actor: Actor, id: string): Promise<void> {
    const companyId = actor.principal.companyId;
    const before = await this.#store.connectorById(companyId, id);
    if (!before) throw notFound('connector');
    if (before.company_id === null) throw readOnly('connector catalogue');
    requireAdmin(actor.principal, 'delete connectors');
    await this.#store.db.transaction().execute(async (trx) => {
      if ((await this.#store.countAuthsOf(companyId, id, trx)) > 0) {
        throw conflict('connector_in_use', 'Connector auths still use this connector; delete them first.');
      }
      if ((await this.#store.deleteConnector(companyId, id, trx)) === 0) throw notFound('connector');
      await this.#audit.record(actor, companyId, 'connector.deleted', { type: 'connector', id }, { name: before.name }, trx);
    });
  }

  // ---- connector actions ----

  async listActions(actor: Actor, q: ListQuery, connectorId?: string): Promise<Page<ConnectorAction>> {
    const companyId = actor.principal.companyId;
    if (connectorId !== undefined && !(await this.#store.connectorById(companyId, connectorId))) throw notFound('connector');
    return listPage(q, ACTION_FILTERS, (p) => this.#store.listActions(companyId, p.conds, p.cursor, p.limit, connectorId), toAction);
  }

  async readAction(actor: Actor, id: string): Promise<ConnectorAction> {
    const row = await this.#store.actionById(actor.principal.companyId, id);
    if (!row) throw notFound('connector action');
    return toAction(row);
  }

  async createAction(actor: Actor, input: NewAction): Promise<ConnectorAction> {
    const companyId = actor.principal.companyId;
    const connector = await this.#store.connectorById(companyId, input.connector_id);
    if (!connector) throw validationFailed([{ field: 'connector_id', message: 'no such connector' }]);
    if (connector.company_id === null) throw readOnly('connector catalogue (and its actions)');
    requireAdmin(actor.principal, 'create connector actions');
    checkInputSchema(input.input_schema);
    const now = nowIso();
    const row: ConnectorActionRow = {
      id: crypto.randomUUID(), connector_id: connector.id, company_id: companyId, name: input.name, method: input.method,
      short_description: input.short_description ?? '', input_schema: JSON.stringify(input.input_schema), created_at: now, updated_at: now,
    };
    try {
      await this.#store.db.transaction().execute(async (trx) => {
        await this.#store.insertAction(row, trx);
        await this.#audit.record(actor, companyId, 'connector_action.created', { type: 'connector_action', id: row.id },
          { connector_id: row.connector_id, name: row.name }, trx);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw actionNameTaken();
      throw err;
    }
    return toAction(row);
  }

  async updateAction(actor: Actor, id: string, patch: ActionPatch): Promise<ConnectorAction> {
    const companyId = actor.principal.companyId;
    const before = await this.#store.actionById(companyId, id);
    if (!before) throw notFound('connector action');
    if (before.company_id === null) throw readOnly('connector catalogue (and its actions)');
    requireAdmin(actor.principal, 'change connector actions');
    if (Object.keys(patch).length === 0) throw validationFailed([{ field: '(body)', message: 'name at least one field to change' }]);
    if (patch.input_schema !== undefined) checkInputSchema(patch.input_schema);
    const set: Partial<ConnectorActionRow> = { updated_at: nowIso() };
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.method !== undefined) set.method = patch.method;
    if (patch.short_description !== undefined) set.short_description = patch.short_description;
    if (patch.input_schema !== undefined) set.input_schema = JSON.stringify(patch.input_schema);
    try {
      await this.#store.db.transaction().execute(async (trx) => {
        if ((await this.#store.updateAction(companyId, id, set, trx)) === 0) throw notFound('connector action');
        await this.#audit.record(actor, companyId, 'connector_action.updated', { type: 'connector_action', id }, { fields: Object.keys(patch).sort() }, trx);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw actionNameTaken();
      throw err;
    }
    return toAction({ ...before, ...set } as ConnectorActionRow);
  }

  async deleteAction(actor: Actor, id: string): Promise<void> {
    const companyId = actor.principal.companyId;
    const before = await this.#store.actionById(companyId, id);
    if (!before) throw notFound('connector action');
    if (before.company_id === null) throw readOnly('connector catalogue (and its actions)');
    requireAdmin(actor.principal, 'delete connector actions');
    await this.#store.db.transaction().execute(async (trx) => {
      if ((await this.#store.deleteAction(companyId, id, trx)) === 0) throw notFound('connector action');
      await this.#audit.record(actor, companyId, 'connector_action.deleted', { type: 'connector_action', id }, { name: before.name }, trx);
    });
  }
}
