// Each test gets its own store: a fresh SQLite file in a temp dir, or a fresh PostgreSQL
// schema, chosen by FLOWGATE_TEST_DB (sqlite | postgres) as set by scripts/test.ts.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import pg from 'pg';
import { openDatabase, migrateToLatest, type DatabaseHandle } from '../../src/db/index.ts';

export const TEST_DB = (process.env.FLOWGATE_TEST_DB ?? 'sqlite') as 'sqlite' | 'postgres';
export const TEST_PG_URL = process.env.FLOWGATE_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface TestStore {
  dataDir: string;
  databaseUrl: string | null;
  pgSchema: string | undefined;
  /** Opens (and migrates) a handle on this store; several may be open at once. */
  open(): Promise<DatabaseHandle>;
  /** Removes the temp dir and drops the schema. */
  destroy(): Promise<void>;
}

export function makeTestStore(): TestStore {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flowgate-test-'));
  const pgSchema = TEST_DB === 'postgres' ? 't_' + crypto.randomBytes(6).toString('hex') : undefined;
  const databaseUrl = TEST_DB === 'postgres' ? TEST_PG_URL : null;
  return {
    dataDir,
    databaseUrl,
    pgSchema,
    async open() {
      const h = await openDatabase({ dataDir, databaseUrl, pgSchema, pgPoolSize: 5 });
      await migrateToLatest(h);
      return h;
    },
    async destroy() {
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (pgSchema) {
        const c = new pg.Client({ connectionString: TEST_PG_URL });
        await c.connect();
        try {
          await c.query(`DROP SCHEMA IF EXISTS "${pgSchema}" CASCADE`);
        } finally {
          await c.end();
        }
      }
    },
  };
}
