// Kysely's SqliteDialect expects a better-sqlite3-shaped database; node:sqlite is close
// enough that a thin wrapper suffices (no native addon needed).
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

type Param = null | number | bigint | string | NodeJS.ArrayBufferView;

function toParams(parameters: ReadonlyArray<unknown>): Param[] {
  return parameters.map((p) => {
    if (typeof p === 'boolean') return p ? 1 : 0;
    if (p === undefined) return null;
    return p as Param;
  });
}

class NodeSqliteStatement implements SqliteStatement {
  readonly reader: boolean;
  #stmt: StatementSync;
  constructor(stmt: StatementSync) {
    this.#stmt = stmt;
    this.reader = stmt.columns().length > 0;
  }
  all(parameters: ReadonlyArray<unknown>): unknown[] {
    return this.#stmt.all(...toParams(parameters));
  }
  run(parameters: ReadonlyArray<unknown>) {
    const r = this.#stmt.run(...toParams(parameters));
    return { changes: r.changes, lastInsertRowid: r.lastInsertRowid };
  }
  iterate(parameters: ReadonlyArray<unknown>): IterableIterator<unknown> {
    return this.#stmt.iterate(...toParams(parameters)) as IterableIterator<unknown>;
  }
}

export class NodeSqliteDatabase implements SqliteDatabase {
  readonly raw: DatabaseSync;
  // Prepared statements are cached: Kysely re-prepares every query otherwise.
  #cache = new Map<string, NodeSqliteStatement>();
  constructor(path: string) {
    this.raw = new DatabaseSync(path);
    this.raw.exec('PRAGMA journal_mode = WAL');
    this.raw.exec('PRAGMA synchronous = NORMAL');
    this.raw.exec('PRAGMA foreign_keys = ON');
    this.raw.exec('PRAGMA busy_timeout = 5000');
  }
  prepare(sql: string): SqliteStatement {
    let stmt = this.#cache.get(sql);
    if (!stmt) {
      stmt = new NodeSqliteStatement(this.raw.prepare(sql));
      if (this.#cache.size > 500) this.#cache.clear();
      this.#cache.set(sql, stmt);
    }
    return stmt;
  }
  close(): void {
    this.#cache.clear();
    if (this.raw.isOpen) this.raw.close();
  }
}
