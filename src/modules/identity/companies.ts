import crypto from 'node:crypto';
import type { IdentityStore } from './store.ts';
import type { Actor } from '../access/principal.ts';
import type { AuditService } from '../audit/service.ts';
import { conflict } from '../../http/errors.ts';
import { isUniqueViolation } from '../../db/index.ts';
import { nowIso } from '../../db/time.ts';

export interface Company { id: string; name: string; created_at: string }

/** Companies are tenants; only the CLI creates them (there is no cross-tenant API). */
export class CompaniesService {
  readonly #store: IdentityStore;
  readonly #audit: AuditService;
  constructor(store: IdentityStore, audit: AuditService) { this.#store = store; this.#audit = audit; }

  async create(actor: Actor | null, name: string): Promise<Company> {
    const row = { id: crypto.randomUUID(), name: name.trim(), created_at: nowIso() };
    if (!row.name || row.name.length > 200) throw conflict('invalid_name', 'A company name must be 1 to 200 characters.');
    try {
      await this.#store.db.transaction().execute(async (trx) => {
        await this.#store.insertCompany(row, trx);
        await this.#audit.record(actor, row.id, 'company.created', { type: 'company', id: row.id }, { name: row.name }, trx);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict('company_exists', `A company named "${row.name}" already exists.`);
      throw err;
    }
    return row;
  }

  async byName(name: string): Promise<Company | undefined> {
    return this.#store.companyByName(name.trim());
  }
}
