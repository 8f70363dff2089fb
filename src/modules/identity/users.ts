// Users: reading needs a member of the company, writing needs the admin role.
import crypto from 'node:crypto';
import type { IdentityStore } from './store.ts';
import type { UserRow } from './tables.ts';
import type { Actor } from '../access/principal.ts';
import { requireAdmin } from '../access/gate.ts';
import { AppError, conflict, notFound, validationFailed } from '../../http/errors.ts';
import { isUniqueViolation } from '../../db/index.ts';
import { nowIso } from '../../db/time.ts';
import { hashPassword } from './password.ts';
import type { AuditService } from '../audit/service.ts';
import type { FilterSpec } from '../../http/filter.ts';
import { type ListQuery, type Page, listPage } from '../../http/pagination.ts';

export type Role = 'admin' | 'member';
export interface User { id: string; email: string; name: string; role: Role; disabled: boolean; created_at: string; updated_at: string }
export interface NewUser { email: string; name: string; role?: Role; password?: string }
export interface UserPatch { email?: string; name?: string; role?: Role; disabled?: boolean; password?: string }

export const USER_FILTERS: FilterSpec = {
  email: { column: 'email', type: 'string' },
  name: { column: 'name', type: 'string' },
  role: { column: 'role', type: 'string' },
  disabled: { column: 'disabled', type: 'boolean' },
  created_at: { column: 'created_at', type: 'timestamp' },
};

export function toUser(r: UserRow): User {
  return { id: r.id, email: r.email, name: r.name, role: r.role, disabled: r.disabled === 1, created_at: r.created_at, updated_at: r.updated_at };
}

const emailTaken = () => conflict('email_taken', 'A user with this e-mail address already exists.');

export class UsersService {
  readonly #store: IdentityStore;
  readonly #audit: AuditService;
  constructor(store: IdentityStore, audit: AuditService) { this.#store = store; this.#audit = audit; }

  async list(actor: Actor, q: ListQuery): Promise<Page<User>> {
    return listPage(q, USER_FILTERS, (p) => this.#store.listUsers(actor.principal.companyId, p.conds, p.cursor, p.limit), toUser);
  }

  async get(actor: Actor, id: string): Promise<User> {
    const row = await this.#store.userById(actor.principal.companyId, id);
    if (!row) throw notFound('user');
    return toUser(row);
  }

  /** Used by the API (admin actor) and by the CLI/bootstrap (actor null, company given). */
  async create(actor: Actor | null, companyId: string, input: NewUser): Promise<User> {
    if (actor) requireAdmin(actor.principal, 'create users');
    const now = nowIso();
    const row: UserRow = {
      id: crypto.randomUUID(),
      company_id: companyId,
      email: input.email.trim(),
      email_lower: input.email.trim().toLowerCase(),
      name: input.name,
      role: input.role ?? 'member',
      disabled: 0,
      password_hash: input.password ? await hashPassword(input.password) : null,
      created_at: now,
      updated_at: now,
    };
    try {
      await this.#store.db.transaction().execute(async (trx) => {
        await this.#store.insertUser(row, trx);
        await this.#audit.record(actor, companyId, 'user.created', { type: 'user', id: row.id }, { email: row.email, role: row.role }, trx);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw emailTaken();
      throw err;
    }
    return toUser(row);
  }

  async update(actor: Actor, id: string, patch: UserPatch): Promise<User> {
    requireAdmin(actor.principal, 'change users');
    const companyId = actor.principal.companyId;
    if (Object.keys(patch).length === 0) throw validationFailed([{ field: '(body)', message: 'name at least one field to change' }]);
    const set: Partial<UserRow> = { updated_at: nowIso() };
    if (patch.email !== undefined) { set.email = patch.email.trim(); set.email_lower = set.email.toLowerCase(); }
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.role !== undefined) set.role = patch.role;
    if (patch.disabled !== undefined) set.disabled = patch.disabled ? 1 : 0;
    if (patch.password !== undefined) set.password_hash = await hashPassword(patch.password);
    try {
      return await this.#store.db.transaction().execute(async (trx) => {
        const before = await this.#store.userById(companyId, id, trx);
        if (!before) throw notFound('user');
        const losesAdmin = before.role === 'admin' && before.disabled === 0 &&
          ((patch.role !== undefined && patch.role !== 'admin') || patch.disabled === true);
        if (losesAdmin && (await this.#store.countAdmins(companyId, trx)) <= 1) {
          throw conflict('last_admin', 'The company must keep at least one active admin.');
        }
        await this.#store.updateUser(companyId, id, set, trx);
        // Field names only: never the password itself.
        await this.#audit.record(actor, companyId, 'user.updated', { type: 'user', id }, { fields: Object.keys(patch).sort() }, trx);
        return toUser({ ...before, ...set } as UserRow);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw emailTaken();
      throw err;
    }
  }

  async delete(actor: Actor, id: string): Promise<void> {
    requireAdmin(actor.principal, 'delete users');
    const companyId = actor.principal.companyId;
    if (id === actor.principal.userId) throw conflict('cannot_delete_self', 'You cannot delete your own user; ask another admin.');
    await this.#store.db.transaction().execute(async (trx) => {
      const before = await this.#store.userById(companyId, id, trx);
      if (!before) throw notFound('user');
      if (before.role === 'admin' && before.disabled === 0 && (await this.#store.countAdmins(companyId, trx)) <= 1) {
        throw conflict('last_admin', 'The company must keep at least one active admin.');
      }
      try {
        await this.#store.deleteUser(companyId, id, trx);
      } catch (err) {
        // Rows of other modules still point at the user (e.g. connector auths it owns).
        if (/foreign key|FOREIGN KEY/.test(String((err as Error).message))) {
          throw new AppError(409, 'user_in_use', 'The user still owns objects; reassign or delete them, or disable the user instead.');
        }
        throw err;
      }
      await this.#audit.record(actor, companyId, 'user.deleted', { type: 'user', id }, { email: before.email }, trx);
    });
  }
}
