import crypto from 'node:crypto';
import type { IdentityStore } from './store.ts';
import type { TeamRow } from './tables.ts';
import type { Actor } from '../access/principal.ts';
import { requireAdmin } from '../access/gate.ts';
import { conflict, notFound, validationFailed } from '../../http/errors.ts';
import { isUniqueViolation, type DbOrTx } from '../../db/index.ts';
import { nowIso } from '../../db/time.ts';
import type { AuditService } from '../audit/service.ts';
import type { FilterSpec } from '../../http/filter.ts';
import { type ListQuery, type Page, listPage } from '../../http/pagination.ts';

export interface Team { id: string; name: string; member_ids: string[]; created_at: string; updated_at: string }
export const TEAM_FILTERS: FilterSpec = {
  name: { column: 'name', type: 'string' },
  created_at: { column: 'created_at', type: 'timestamp' },
};

const nameTaken = () => conflict('team_name_taken', 'A team with this name already exists.');

export class TeamsService {
  readonly #store: IdentityStore;
  readonly #audit: AuditService;
  constructor(store: IdentityStore, audit: AuditService) { this.#store = store; this.#audit = audit; }

  async #withMembers(companyId: string, rows: TeamRow[]): Promise<Team[]> {
    const members = await this.#store.teamMembers(companyId, rows.map((r) => r.id));
    return rows.map((r) => ({ id: r.id, name: r.name, member_ids: members.get(r.id) ?? [], created_at: r.created_at, updated_at: r.updated_at }));
  }

  async #checkMembers(companyId: string, ids: string[], trx: DbOrTx): Promise<string[]> {
    const unique = [...new Set(ids)];
    const found = await this.#store.existingUserIds(companyId, unique, trx);
    const missing = unique.filter((id) => !found.has(id));
    if (missing.length) {
      throw validationFailed(missing.map((id) => ({ field: `member_ids.${ids.indexOf(id)}`, message: `no user ${id} in this company` })));
    }
    return unique;
  }

  async list(actor: Actor, q: ListQuery): Promise<Page<Team>> {
    const companyId = actor.principal.companyId;
    const page = await listPage(q, TEAM_FILTERS, (p) => this.#store.listTeams(companyId, p.conds, p.cursor, p.limit), (r) => r);
    return { data: await this.#withMembers(companyId, page.data), next_cursor: page.next_cursor };
  }

  async get(actor: Actor, id: string): Promise<Team> {
    const row = await this.#store.teamById(actor.principal.companyId, id);
    if (!row) throw notFound('team');
    return (await this.#withMembers(actor.principal.companyId, [row]))[0];
  }

  async create(actor: Actor, input: { name: string; member_ids?: string[] }): Promise<Team> {
    requireAdmin(actor.principal, 'create teams');
    const companyId = actor.principal.companyId;
    const now = nowIso();
    const row: TeamRow = { id: crypto.randomUUID(), company_id: companyId, name: input.name, created_at: now, updated_at: now };
    try {
      await this.#store.db.transaction().execute(async (trx) => {
        const members = await this.#checkMembers(companyId, input.member_ids ?? [], trx);
        await this.#store.insertTeam(row, trx);
        await this.#store.setTeamMembers(companyId, row.id, members, trx);
        await this.#audit.record(actor, companyId, 'team.created', { type: 'team', id: row.id }, { name: row.name, member_ids: members }, trx);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw nameTaken();
      throw err;
    }
    return this.get(actor, row.id);
  }

  async update(actor: Actor, id: string, patch: { name?: string; member_ids?: string[] }): Promise<Team> {
    requireAdmin(actor.principal, 'change teams');
    const companyId = actor.principal.companyId;
    if (Object.keys(patch).length === 0) throw validationFailed([{ field: '(body)', message: 'name at least one field to change' }]);
    try {
      await this.#store.db.transaction().execute(async (trx) => {
        if (!(await this.#store.teamById(companyId, id, trx))) throw notFound('team');
        const set: Partial<TeamRow> = { updated_at: nowIso() };
        if (patch.name !== undefined) set.name = patch.name;
        await this.#store.updateTeam(companyId, id, set, trx);
        if (patch.member_ids !== undefined) {
          await this.#store.setTeamMembers(companyId, id, await this.#checkMembers(companyId, patch.member_ids, trx), trx);
        }
        await this.#audit.record(actor, companyId, 'team.updated', { type: 'team', id }, { fields: Object.keys(patch).sort() }, trx);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw nameTaken();
      throw err;
    }
    return this.get(actor, id);
  }

  async delete(actor: Actor, id: string): Promise<void> {
    requireAdmin(actor.principal, 'delete teams');
    const companyId = actor.principal.companyId;
    await this.#store.db.transaction().execute(async (trx) => {
      if ((await this.#store.deleteTeam(companyId, id, trx)) === 0) throw notFound('team');
      await this.#audit.record(actor, companyId, 'team.deleted', { type: 'team', id }, {}, trx);
    });
  }
}
