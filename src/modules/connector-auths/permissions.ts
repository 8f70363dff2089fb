// Object permissions of connector auths (seed 5.3): the ONE place the rule lives.
// `rightsOf` decides for one object (get, update, delete, permissions, test, resolveForRun);
// `visibleSql` is the same rule as a SQL condition, so lists filter in the query and
// pagination stays correct. Tests hold the two against each other.
//
//   admin of the company      every right on every auth of the company
//   owner (the creator)       every right
//   visibility 'company'      every member of the company: read
//   visibility 'restricted'   nobody else, except through grants
//   visibility 'private'      nobody else; grants do not apply (a private auth has none)
//   grant (user or team)      read, plus the rights it names; `manage` implies all rights
//
// Grants also apply to 'company' auths, e.g. to let one member update a shared credential.
import { sql, type SqlBool, type Expression } from 'kysely';

export const RIGHTS = ['read', 'update', 'delete', 'manage'] as const;
export type Right = (typeof RIGHTS)[number];
export const VISIBILITIES = ['company', 'private', 'restricted'] as const;
export type Visibility = (typeof VISIBILITIES)[number];

/** Who asks: a user of the company, with its role and teams. */
export interface Subject {
  userId: string;
  role: 'admin' | 'member';
  teamIds: readonly string[];
}

export interface AccessFacts {
  owner_user_id: string;
  visibility: string;
}

export interface GrantFacts {
  user_id: string | null;
  team_id: string | null;
  can_update: number;
  can_delete: number;
  can_manage: number;
}

const ALL: ReadonlySet<Right> = new Set(RIGHTS);

/** The rights `subject` has on `auth`, given the auth's grants (any of them; foreign ones are ignored). */
export function rightsOf(subject: Subject, auth: AccessFacts, grants: readonly GrantFacts[]): Set<Right> {
  if (subject.role === 'admin' || auth.owner_user_id === subject.userId) return new Set(ALL);
  const out = new Set<Right>();
  if (auth.visibility === 'company') out.add('read');
  if (auth.visibility === 'company' || auth.visibility === 'restricted') {
    for (const g of grants) {
      const mine = (g.user_id !== null && g.user_id === subject.userId) || (g.team_id !== null && subject.teamIds.includes(g.team_id));
      if (!mine) continue;
      out.add('read');
      if (g.can_manage) return new Set(ALL);
      if (g.can_update) out.add('update');
      if (g.can_delete) out.add('delete');
    }
  }
  return out;
}

/** rightsOf(...).has('read') as a condition on `connector_auths` rows. */
export function visibleSql(subject: Subject): Expression<SqlBool> {
  if (subject.role === 'admin') return sql<SqlBool>`1 = 1`;
  const a = (c: string) => sql.ref(`connector_auths.${c}`);
  const teamClause = subject.teamIds.length
    ? sql`or g.team_id in (${sql.join(subject.teamIds.map((t) => sql`${t}`))})`
    : sql``;
  return sql<SqlBool>`(${a('visibility')} = 'company' or ${a('owner_user_id')} = ${subject.userId} or (${a('visibility')} = 'restricted' and exists (
    select 1 from connector_auth_grants g where g.auth_id = ${a('id')} and (g.user_id = ${subject.userId} ${teamClause}))))`;
}

/** The rights a stored grant gives, as listed in responses: read first, manage implies all. */
export function grantRights(g: Pick<GrantFacts, 'can_update' | 'can_delete' | 'can_manage'>): Right[] {
  if (g.can_manage) return [...RIGHTS];
  const out: Right[] = ['read'];
  if (g.can_update) out.push('update');
  if (g.can_delete) out.push('delete');
  return out;
}

/** Flags to store for a requested list of rights. */
export function grantFlags(rights: readonly string[]): { can_update: number; can_delete: number; can_manage: number } {
  const manage = rights.includes('manage');
  return {
    can_update: manage || rights.includes('update') ? 1 : 0,
    can_delete: manage || rights.includes('delete') ? 1 : 0,
    can_manage: manage ? 1 : 0,
  };
}
