// One query layer (Kysely) over two engines: the embedded node:sqlite file (default) and
// PostgreSQL through `pg` when DATABASE_URL is set. Stores never branch on the engine except
// through the few helpers exported here.
import fs from 'node:fs';
import path from 'node:path';
import { Kysely, SqliteDialect, PostgresDialect, sql, type Transaction } from 'kysely';
import { Migrator } from 'kysely/migration';
import pg from 'pg';
import { NodeSqliteDatabase } from './sqlite-dialect.ts';
import type { Database } from './schema.ts';

export type DbKind = 'sqlite' | 'postgres';
export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;
export type DbOrTx = Db | Tx;

export interface DatabaseHandle {
  db: Db;
  kind: DbKind;
  /** Path of the SQLite file, for tests that inspect it; null on PostgreSQL. */
  file: string | null;
  /** The PostgreSQL schema in use when not the default one. */
  pgSchema: string | null;
  close(): Promise<void>;
}

export interface OpenOptions {
  dataDir: string;
  databaseUrl: string | null;
  /** PostgreSQL schema to use (tests isolate themselves in one schema each). */
  pgSchema?: string;
  pgPoolSize?: number;
}

// pg returns int8 as string by default; our counts fit in a double.
pg.types.setTypeParser(20, (v) => Number(v));

export async function openDatabase(opts: OpenOptions): Promise<DatabaseHandle> {
  if (opts.databaseUrl) {
    const pool = new pg.Pool({
      connectionString: opts.databaseUrl,
      max: opts.pgPoolSize ?? 10,
      ...(opts.pgSchema ? { options: `-c search_path=${opts.pgSchema}` } : {}),
    });
    if (opts.pgSchema) {
      const c = await pool.connect();
      try {
        await c.query(`CREATE SCHEMA IF NOT EXISTS "${opts.pgSchema}"`);
      } finally {
        c.release();
      }
    }
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, kind: 'postgres', file: null, pgSchema: opts.pgSchema ?? null, close: () => db.destroy() };
  }
  fs.mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(opts.dataDir, 'flowgate.db');
  const raw = new NodeSqliteDatabase(file);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: raw }) });
  return { db, kind: 'sqlite', file, pgSchema: null, close: () => db.destroy() };
}

export async function migrateToLatest(handle: Pick<DatabaseHandle, 'db' | 'pgSchema'>): Promise<string[]> {
  const { db, pgSchema } = handle;
  // Imported here, not at the top: the list includes the modules', which import this file.
  const { migrations } = await import('./migrations/index.ts');
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    // Kysely looks for its own tables by schema; name it when it is not `public`.
    ...(pgSchema ? { migrationTableSchema: pgSchema } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

export async function ping(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}

/**
 * Case-insensitive LIKE with `%` as the only wildcard, identical on both engines:
 * `_` and `\` are escaped, and both sides are lower-cased.
 */
export function likePattern(value: string): string {
  return value.replace(/[\\_]/g, (c) => '\\' + c).toLowerCase();
}

export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; errcode?: string; message?: string };
  return e?.code === '23505' || e?.errcode === 'SQLITE_CONSTRAINT_UNIQUE' ||
    /UNIQUE constraint failed/.test(String(e?.message ?? ''));
}
