// Keyset pagination over (created_at, id): stable under inserts, no OFFSET scans.
import { Type, type Static } from 'typebox';
import { badRequest } from './errors.ts';
import { parseFilters, type Condition, type FilterSpec } from './filter.ts';

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

export const ListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
  filter: Type.Optional(Type.Union([Type.String({ maxLength: 2048 }), Type.Array(Type.String({ maxLength: 2048 }), { maxItems: 20 })])),
}, { additionalProperties: false });
export type ListQuery = Static<typeof ListQuery>;

export interface Cursor { c: string; i: string }

export function encodeCursor(row: { created_at: string; id: string }): string {
  return Buffer.from(JSON.stringify({ c: row.created_at, i: row.id })).toString('base64url');
}

export function decodeCursor(raw: string | undefined): Cursor | null {
  if (!raw) return null;
  try {
    const v = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
    if (typeof v?.c === 'string' && typeof v?.i === 'string') return { c: v.c, i: v.i };
  } catch { /* fall through */ }
  throw badRequest('invalid_cursor', 'The cursor is not one this API returned.', [{ field: 'cursor', message: 'is not valid' }]);
}

export interface Page<T> { data: T[]; next_cursor: string | null }

/** Given limit+1 rows fetched, build the page. */
export function toPage<R extends { created_at: string; id: string }, T>(rows: R[], limit: number, map: (r: R) => T): Page<T> {
  const more = rows.length > limit;
  const slice = more ? rows.slice(0, limit) : rows;
  return { data: slice.map(map), next_cursor: more ? encodeCursor(slice[slice.length - 1]) : null };
}

export const pageSchema = <T extends import('typebox').TSchema>(item: T) =>
  Type.Object({ data: Type.Array(item), next_cursor: Type.Union([Type.String(), Type.Null()]) });

/** What a store needs to fetch one page: parsed filters, the keyset cursor, and limit + 1. */
export interface PageRequest { conds: Condition[]; cursor: Cursor | null; limit: number }

/** One list endpoint's whole paging: parse filter and cursor, fetch limit + 1 rows, build the page. */
export async function listPage<R extends { created_at: string; id: string }, T>(
  q: ListQuery, filters: FilterSpec, fetch: (p: PageRequest) => Promise<R[]>, map: (r: R) => T,
): Promise<Page<T>> {
  const limit = q.limit ?? DEFAULT_LIMIT;
  const rows = await fetch({ conds: parseFilters(q.filter, filters), cursor: decodeCursor(q.cursor), limit: limit + 1 });
  return toPage(rows, limit, map);
}
