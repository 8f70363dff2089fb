// Hot-path queries compiled once: Kysely rebuilds and recompiles a query on every call,
// which costs more than SQLite takes to answer it. The query is built with placeholder
// values, compiled, and then run with the real parameters in the same order.
import type { Compilable, CompiledQuery, Kysely, QueryResult } from 'kysely';

/** The whole result (rows, or affected rows for writes). Placeholders appear once each, in order. */
export function compiledOnce<P extends unknown[], R = Record<string, any>>(
  db: Kysely<any>, build: (...placeholders: P) => Compilable<R>, placeholders: P,
): (...params: P) => Promise<QueryResult<R>> {
  const compiled = build(...placeholders).compile();
  if (compiled.parameters.length !== placeholders.length || compiled.parameters.some((p, i) => p !== placeholders[i])) {
    throw new Error('compiledOnce(): the query must use each placeholder exactly once, in order');
  }
  return (...params: P) => db.executeQuery<R>({ ...compiled, parameters: params } as CompiledQuery<R>);
}

/** The rows of a read compiled once. */
export function prepared<P extends unknown[], R>(db: Kysely<any>, build: (...placeholders: P) => Compilable<R>, placeholders: P): (...params: P) => Promise<R[]> {
  const run = compiledOnce(db, build, placeholders);
  return async (...params: P) => (await run(...params)).rows;
}
