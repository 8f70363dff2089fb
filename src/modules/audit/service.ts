// The audit log: who did what, with which credential, from where. Callers pass field
// names and ids, never values of secrets; the service refuses keys that look like secrets
// as a second line of defence.
import crypto from 'node:crypto';
import type { Db, DbOrTx } from '../../db/index.ts';
import { nowIso } from '../../db/time.ts';
import type { Actor } from '../access/principal.ts';
import type { AuditEventRow } from '../identity/tables.ts';
import { applyFilters, afterCursor, parseFilters, type FilterSpec } from '../../http/filter.ts';
import { decodeCursor, toPage, type ListQuery } from '../../http/pagination.ts';

const SECRETISH = /pass|secret|token(?!_id)|auth_details|key$/i;

/** An audit event as the API shows it: the row without its company, details parsed. */
export type AuditEvent = Omit<AuditEventRow, 'company_id' | 'details'> & { details: Record<string, unknown> };

export const AUDIT_FILTERS: FilterSpec = {
  action: { column: 'action', type: 'string' },
  actor_user_id: { column: 'actor_user_id', type: 'string' },
  credential_kind: { column: 'credential_kind', type: 'string' },
  target_type: { column: 'target_type', type: 'string' },
  target_id: { column: 'target_id', type: 'string' },
  created_at: { column: 'created_at', type: 'timestamp' },
};

function assertNoSecrets(details: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(details)) {
    if (SECRETISH.test(k) && typeof v === 'string') throw new Error(`audit detail "${k}" looks like a secret value`);
    if (v && typeof v === 'object' && !Array.isArray(v)) assertNoSecrets(v as Record<string, unknown>);
  }
}

export class AuditService {
  readonly #db: Db;
  constructor(db: Db) { this.#db = db; }

  async record(actor: Actor | null, companyId: string, action: string,
    target: { type: string; id: string } | null, details: Record<string, unknown> = {}, db: DbOrTx = this.#db): Promise<void> {
    assertNoSecrets(details);
    await db.insertInto('audit_events').values({
      id: crypto.randomUUID(),
      company_id: companyId,
      action,
      actor_user_id: actor?.principal.userId ?? null,
      credential_kind: actor?.principal.kind ?? 'system',
      credential_id: actor?.principal.credentialId ?? null,
      ip: actor?.ip ?? null,
      request_id: actor?.requestId ?? null,
      target_type: target?.type ?? null,
      target_id: target?.id ?? null,
      details: JSON.stringify(details),
      created_at: nowIso(),
    }).execute();
  }

  async list(companyId: string, q: ListQuery) {
    const limit = q.limit ?? 50;
    let qb = this.#db.selectFrom('audit_events').selectAll().where('company_id', '=', companyId);
    qb = applyFilters(qb, parseFilters(q.filter, AUDIT_FILTERS));
    qb = afterCursor(qb, decodeCursor(q.cursor), 'audit_events');
    const rows = await qb.orderBy('created_at').orderBy('id').limit(limit + 1).execute();
    return toPage(rows, limit, ({ company_id: _company, details, ...rest }): AuditEvent => ({ ...rest, details: JSON.parse(details) }));
  }
}
