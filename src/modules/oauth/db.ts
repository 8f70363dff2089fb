// The database as the OAuth module sees it: its own tables plus the foundation tables it reads.
// (Typed locally so that the module does not depend on src/db/schema.ts composing it.)
import type { Compilable, CompiledQuery, Kysely, QueryResult } from 'kysely';
import type { Db } from '../../db/index.ts';
import type { FoundationTables } from '../identity/tables.ts';
import type { OAuthTables } from './tables.ts';

export type OAuthDb = Kysely<OAuthTables & FoundationTables>;

export function oauthDb(db: Db): OAuthDb {
  return db as unknown as OAuthDb;
}

/**
 * A hot-path query built and compiled once (with placeholder values), then run with the real
 * parameters in the same order; like src/db/prepared.ts, but returning the whole result
 * (affected rows for writes). Placeholders must each appear exactly once, in order.
 */
export function compiledOnce<P extends unknown[]>(
  db: Kysely<any>,
  build: (...placeholders: P) => Compilable<unknown>,
  placeholders: P,
): (...params: P) => Promise<QueryResult<Record<string, any>>> {
  const compiled = build(...placeholders).compile();
  if (compiled.parameters.length !== placeholders.length || compiled.parameters.some((p, i) => p !== placeholders[i])) {
    throw new Error('compiledOnce(): the query must use each placeholder exactly once, in order');
  }
  return (...params: P) => db.executeQuery<Record<string, any>>({ ...compiled, parameters: params } as CompiledQuery<Record<string, any>>);
}
