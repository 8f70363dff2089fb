// The shared filter language: `filter=<field>,<operator>,<value>` (repeatable, all must hold).
// Values: JSON strings in double quotes, numbers, true, false, null; `in` takes a JSON array
// or a comma-separated list. `like` is case-insensitive with `%` as the only wildcard and
// gives the same result on SQLite and PostgreSQL.
import { sql, type SelectQueryBuilder, type Expression, type SqlBool } from 'kysely';
import { badRequest } from './errors.ts';
import { likePattern } from '../db/index.ts';

export const OPERATORS = ['eq', 'ne', 'like', 'gt', 'gte', 'lt', 'lte', 'in'] as const;
export type Operator = (typeof OPERATORS)[number];
type Scalar = string | number | boolean | null;

export type FieldType = 'string' | 'number' | 'boolean' | 'timestamp' | 'json_array';
export interface FieldSpec { column: string; type: FieldType }
export type FilterSpec = Record<string, FieldSpec>;

export interface Condition { field: string; spec: FieldSpec; op: Operator; value: Scalar | Scalar[] }

const fail = (message: string, raw: string) =>
  badRequest('invalid_filter', `Invalid filter "${raw.slice(0, 200)}": ${message}`, [{ field: 'filter', message }]);

function parseScalar(text: string, raw: string): Scalar {
  const t = text.trim();
  if (t.startsWith('"')) {
    try {
      const v = JSON.parse(t);
      if (typeof v === 'string') return v;
    } catch { /* below */ }
    throw fail('a quoted value must be a valid JSON string', raw);
  }
  if (t === 'true') return true;
  if (t === 'false') return false;
  if (t === 'null') return null;
  if (/^-?\d+(\.\d+)?$/.test(t)) return Number(t);
  // Bare words are taken as strings: friendlier than refusing `name,eq,SFTP`.
  return t;
}

function coerce(v: Scalar, spec: FieldSpec, op: Operator, raw: string): Scalar {
  if (v === null) {
    if (op !== 'eq' && op !== 'ne') throw fail('null can only be used with eq and ne', raw);
    return null;
  }
  switch (spec.type) {
    case 'string':
    case 'json_array':
      return String(v);
    case 'number':
      if (typeof v !== 'number') throw fail('the value must be a number', raw);
      return v;
    case 'boolean':
      if (typeof v !== 'boolean') throw fail('the value must be true or false', raw);
      return v;
    case 'timestamp': {
      const ms = typeof v === 'string' ? Date.parse(v) : NaN;
      if (Number.isNaN(ms)) throw fail('the value must be an ISO 8601 timestamp in quotes', raw);
      return new Date(ms).toISOString();
    }
  }
}

export function parseFilters(input: string | string[] | undefined, spec: FilterSpec): Condition[] {
  if (input === undefined) return [];
  const list = Array.isArray(input) ? input : [input];
  return list.map((raw) => {
    const a = raw.indexOf(',');
    const b = a < 0 ? -1 : raw.indexOf(',', a + 1);
    if (a < 0 || b < 0) throw fail('expected <field>,<operator>,<value>', raw);
    const field = raw.slice(0, a).trim();
    const op = raw.slice(a + 1, b).trim() as Operator;
    const valueText = raw.slice(b + 1);
    const fieldSpec = spec[field];
    if (!fieldSpec) throw fail(`unknown field "${field}"; filterable fields: ${Object.keys(spec).join(', ')}`, raw);
    if (!OPERATORS.includes(op)) throw fail(`unknown operator "${op}"; operators: ${OPERATORS.join(', ')}`, raw);
    if (op === 'like' && fieldSpec.type !== 'string' && fieldSpec.type !== 'json_array') {
      throw fail(`like applies to text fields only`, raw);
    }
    if (fieldSpec.type === 'boolean' && !['eq', 'ne'].includes(op)) throw fail('booleans support eq and ne', raw);
    if (op === 'in') {
      let items: Scalar[];
      const t = valueText.trim();
      if (t.startsWith('[')) {
        try { items = JSON.parse(t); } catch { throw fail('in takes a JSON array or a comma-separated list', raw); }
        if (!Array.isArray(items)) throw fail('in takes a JSON array', raw);
      } else {
        items = t.split(',').map((x) => parseScalar(x, raw));
      }
      if (items.length === 0 || items.length > 100) throw fail('in takes 1 to 100 values', raw);
      return { field, spec: fieldSpec, op, value: items.map((x) => coerce(x, fieldSpec, 'eq', raw)) };
    }
    const value = coerce(parseScalar(valueText, raw), fieldSpec, op, raw);
    if (op === 'like' && typeof value !== 'string') throw fail('like takes a string', raw);
    return { field, spec: fieldSpec, op, value };
  });
}

function dbValue(v: Scalar): string | number | null {
  return typeof v === 'boolean' ? (v ? 1 : 0) : v;
}

function jsonContains(col: Expression<unknown>, v: Scalar) {
  // Arrays are stored as JSON text; an element matches as its JSON encoding.
  return sql<SqlBool>`${col} like ${'%' + likePattern(JSON.stringify(v)) + '%'} escape '\\'`;
}

function condition(c: Condition): Expression<SqlBool> {
  const col = sql.ref(c.spec.column);
  const v = c.value;
  if (c.spec.type === 'json_array') {
    switch (c.op) {
      case 'eq': return jsonContains(col, v as Scalar);
      case 'ne': return sql<SqlBool>`not (${jsonContains(col, v as Scalar)})`;
      case 'in': return sql<SqlBool>`(${sql.join((v as Scalar[]).map((x) => jsonContains(col, x)), sql` or `)})`;
      case 'like': return sql<SqlBool>`lower(${col}) like ${'%"' + likePattern(String(v)) + '"%'} escape '\\'`;
      default: throw badRequest('invalid_filter', `Operator ${c.op} does not apply to ${c.field}.`, [{ field: 'filter', message: `${c.op} does not apply to ${c.field}` }]);
    }
  }
  switch (c.op) {
    case 'eq': return v === null ? sql<SqlBool>`${col} is null` : sql<SqlBool>`${col} = ${dbValue(v as Scalar)}`;
    case 'ne': return v === null ? sql<SqlBool>`${col} is not null` : sql<SqlBool>`(${col} <> ${dbValue(v as Scalar)} or ${col} is null)`;
    case 'like': return sql<SqlBool>`lower(${col}) like ${likePattern(String(v))} escape '\\'`;
    case 'gt': return sql<SqlBool>`${col} > ${dbValue(v as Scalar)}`;
    case 'gte': return sql<SqlBool>`${col} >= ${dbValue(v as Scalar)}`;
    case 'lt': return sql<SqlBool>`${col} < ${dbValue(v as Scalar)}`;
    case 'lte': return sql<SqlBool>`${col} <= ${dbValue(v as Scalar)}`;
    case 'in': return sql<SqlBool>`${col} in (${sql.join((v as Scalar[]).map(dbValue))})`;
  }
}

export function applyFilters<DB, TB extends keyof DB, O>(qb: SelectQueryBuilder<DB, TB, O>, conds: Condition[]): SelectQueryBuilder<DB, TB, O> {
  for (const c of conds) qb = qb.where(condition(c));
  return qb;
}

/** Keyset condition for the page after `cursor` in (created_at, id) order. */
export function afterCursor<DB, TB extends keyof DB, O>(qb: SelectQueryBuilder<DB, TB, O>, cursor: { c: string; i: string } | null, table: string): SelectQueryBuilder<DB, TB, O> {
  if (!cursor) return qb;
  const ca = sql.ref(`${table}.created_at`);
  const id = sql.ref(`${table}.id`);
  return qb.where(sql<SqlBool>`(${ca} > ${cursor.c} or (${ca} = ${cursor.c} and ${id} > ${cursor.i}))`);
}
