// Hot-path queries compiled once: Kysely rebuilds and recompiles a query on every call,
// which costs more than SQLite takes to answer it. The query is built with placeholder
// values, compiled, and then run with the real parameters in the same order.
import type { Compilable, CompiledQuery, Kysely } from 'kysely';

export function prepared<P extends unknown[], R>(db: Kysely<any>, build: (...placeholders: P) => Compilable<R>, placeholders: P): (...params: P) => Promise<R[]> {
  const compiled = build(...placeholders).compile();
  if (compiled.parameters.length !== placeholders.length || compiled.parameters.some((p, i) => p !== placeholders[i])) {
    throw new Error('prepared(): the query must use each placeholder exactly once, in order');
  }
  return async (...params: P) => {
    const q: CompiledQuery = { ...compiled, parameters: params };
    return (await db.executeQuery<R>(q)).rows;
  };
}
