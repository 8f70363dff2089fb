// Environment variables: company-wide values usable in flow templates as `env.NAME`. A secret
// variable's value is encrypted at rest (AAD binds it to company and row) and write-only: no
// response shows it; the flow engine decrypts it inside the worker when a template reads it.
import crypto from 'node:crypto';
import type { Keyring } from '../../crypto/keyring.ts';
import type { Actor } from '../access/principal.ts';
import { requireAdmin } from '../access/gate.ts';
import { conflict, notFound, validationFailed } from '../../http/errors.ts';
import { isUniqueViolation } from '../../db/index.ts';
import { nowIso } from '../../db/time.ts';
import type { AuditService } from '../audit/service.ts';
import type { FilterSpec } from '../../http/filter.ts';
import { type ListQuery, type Page, listPage } from '../../http/pagination.ts';
import { envAad, type EnvVariablesStore } from './store.ts';
import type { EnvVariableRow } from './tables.ts';

export const ENV_NAME = /^[A-Z_][A-Z0-9_]{0,63}$/;
export const MAX_VALUE_LENGTH = 65_536;

export interface EnvVariable {
  id: string;
  name: string;
  /** null for a secret variable: its value is never shown. */
  value: string | null;
  value_set: boolean;
  secret: boolean;
  created_at: string;
  updated_at: string;
}

export const ENV_FILTERS: FilterSpec = {
  name: { column: 'name', type: 'string' },
  secret: { column: 'secret', type: 'boolean' },
  created_at: { column: 'created_at', type: 'timestamp' },
  updated_at: { column: 'updated_at', type: 'timestamp' },
};

function view(r: EnvVariableRow): EnvVariable {
  const secret = r.secret === 1;
  return {
    id: r.id, name: r.name, value: secret ? null : r.value, value_set: secret ? r.value_encrypted !== null : r.value !== null,
    secret, created_at: r.created_at, updated_at: r.updated_at,
  };
}

/** What the flow engine gets: names with plain values, and secret values it decrypts on demand. */
export interface EnvForRun {
  names: string[];
  /** The value of a variable (decrypts a secret one, audited once per run); undefined when unknown. */
  value(name: string): string | undefined;
  /** Secret values decrypted so far in this run (for scrubbing). */
  decryptedSecrets(): string[];
  /** Waits for the audit events of the decryptions so far. */
  flush(): Promise<void>;
}

const nameTaken = () => conflict('env_variable_name_taken', 'Your company already has an environment variable with this name.');

export class EnvVariablesService {
  readonly #store: EnvVariablesStore;
  readonly #keyring: Keyring;
  readonly #audit: AuditService;

  constructor(store: EnvVariablesStore, keyring: Keyring, audit: AuditService) {
    this.#store = store; this.#keyring = keyring; this.#audit = audit;
  }

  #checkName(name: string): void {
    if (!ENV_NAME.test(name)) throw validationFailed([{ field: 'name', message: 'must match ^[A-Z_][A-Z0-9_]{0,63}$ (upper-case letters, digits, _)' }]);
  }

  async list(actor: Actor, q: ListQuery): Promise<Page<EnvVariable>> {
    return listPage(q, ENV_FILTERS, (p) => this.#store.list(actor.principal.companyId, p.conds, p.cursor, p.limit), view);
  }

  async get(actor: Actor, id: string): Promise<EnvVariable> {
    const row = await this.#store.byId(actor.principal.companyId, id);
    if (!row) throw notFound('environment variable');
    return view(row);
  }

  async create(actor: Actor, input: { name: string; value: string; secret?: boolean }): Promise<EnvVariable> {
    requireAdmin(actor.principal, 'create environment variables');
    this.#checkName(input.name);
    const companyId = actor.principal.companyId;
    const now = nowIso();
    const id = crypto.randomUUID();
    const secret = input.secret === true;
    const row: EnvVariableRow = {
      id, company_id: companyId, name: input.name,
      value: secret ? null : input.value,
      value_encrypted: secret ? this.#keyring.encrypt(input.value, envAad(companyId, id)) : null,
      secret: secret ? 1 : 0, created_by_user_id: actor.principal.userId, created_at: now, updated_at: now,
    };
    try {
      await this.#store.insert(row);
    } catch (err) {
      if (isUniqueViolation(err)) throw nameTaken();
      throw err;
    }
    await this.#audit.record(actor, companyId, 'env_variable.created', { type: 'env_variable', id }, { name: row.name, is_secret: secret });
    return view(row);
  }

  async update(actor: Actor, id: string, patch: { name?: string; value?: string; secret?: boolean }): Promise<EnvVariable> {
    requireAdmin(actor.principal, 'change environment variables');
    const companyId = actor.principal.companyId;
    const row = await this.#store.byId(companyId, id);
    if (!row) throw notFound('environment variable');
    if (patch.name !== undefined) this.#checkName(patch.name);
    const secret = patch.secret ?? row.secret === 1;
    const set: Partial<EnvVariableRow> = { updated_at: nowIso() };
    if (patch.name !== undefined) set.name = patch.name;
    if (secret) {
      if (patch.value !== undefined) set.value_encrypted = this.#keyring.encrypt(patch.value, envAad(companyId, id));
      else if (row.secret !== 1) set.value_encrypted = row.value === null ? null : this.#keyring.encrypt(row.value, envAad(companyId, id));
      set.value = null;
      set.secret = 1;
    } else {
      if (row.secret === 1 && patch.value === undefined) {
        throw validationFailed([{ field: 'value', message: 'is required when a secret variable is made non-secret (its value cannot be read back)' }]);
      }
      if (patch.value !== undefined) set.value = patch.value;
      set.value_encrypted = null;
      set.secret = 0;
    }
    try {
      if (!(await this.#store.update(companyId, id, set))) throw notFound('environment variable');
    } catch (err) {
      if (isUniqueViolation(err)) throw nameTaken();
      throw err;
    }
    const fields = Object.keys(patch).filter((k) => (patch as Record<string, unknown>)[k] !== undefined);
    await this.#audit.record(actor, companyId, 'env_variable.updated', { type: 'env_variable', id }, { fields, is_secret: secret });
    return view({ ...row, ...set } as EnvVariableRow);
  }

  async delete(actor: Actor, id: string): Promise<void> {
    requireAdmin(actor.principal, 'delete environment variables');
    const companyId = actor.principal.companyId;
    const row = await this.#store.byId(companyId, id);
    if (!row || !(await this.#store.delete(companyId, id))) throw notFound('environment variable');
    await this.#audit.record(actor, companyId, 'env_variable.deleted', { type: 'env_variable', id }, { name: row.name });
  }

  /**
   * The company's variables for one flow run. Secret values stay encrypted until a template
   * reads them; each decryption is audited with `purpose` (e.g. `flow_run:<id>`).
   */
  async forRun(companyId: string, purpose: string): Promise<EnvForRun> {
    const rows = await this.#store.all(companyId);
    // Another process may have rotated the keys: load them now, decryption below is synchronous.
    if (rows.some((r) => r.value_encrypted !== null && this.#keyring.keyIdOf(r.value_encrypted) !== this.#keyring.activeKeyId)) {
      await this.#keyring.reload();
    }
    const byName = new Map(rows.map((r) => [r.name, r]));
    const decrypted = new Map<string, string>();
    const audits: Promise<void>[] = [];
    return {
      names: rows.map((r) => r.name),
      value: (name) => {
        const r = byName.get(name);
        if (!r) return undefined;
        if (r.secret !== 1) return r.value ?? undefined;
        const hit = decrypted.get(name);
        if (hit !== undefined) return hit;
        if (r.value_encrypted === null) return undefined;
        const plain = this.#keyring.decryptString(r.value_encrypted, envAad(companyId, r.id));
        decrypted.set(name, plain);
        audits.push(this.#audit.record(null, companyId, 'env_variable.decrypted', { type: 'env_variable', id: r.id },
          { name: r.name, purpose: purpose.slice(0, 200) }).catch(() => {}));
        return plain;
      },
      decryptedSecrets: () => [...decrypted.values()],
      flush: async () => { await Promise.all(audits.splice(0)); },
    };
  }
}
