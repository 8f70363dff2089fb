// `npm test`: the whole suite on SQLite, then again on PostgreSQL when a server is reachable
// (FLOWGATE_TEST_DATABASE_URL, default the local one). With FLOWGATE_TEST_REQUIRE_POSTGRES=1
// (as .ci/run sets it) an unreachable PostgreSQL is a failure, never a silent skip.
import { spawnSync } from 'node:child_process';
import pg from 'pg';

const PG_URL = process.env.FLOWGATE_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const requirePg = process.env.FLOWGATE_TEST_REQUIRE_POSTGRES === '1';
const files = process.argv.slice(2).length ? process.argv.slice(2) : ['test/**/*.test.ts'];

function run(db: string): number {
  process.stdout.write(`\n=== flowgate test suite on ${db} ===\n`);
  const r = spawnSync(process.execPath, ['--test', '--test-concurrency=2', '--test-timeout=180000', '--disable-warning=ExperimentalWarning', ...files], {
    stdio: 'inherit',
    env: { ...process.env, FLOWGATE_TEST_DB: db, FLOWGATE_TEST_DATABASE_URL: PG_URL },
  });
  return r.status ?? 1;
}

async function pgReachable(): Promise<string | null> {
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  try {
    await c.connect();
    await c.query('select 1');
    return null;
  } catch (err) {
    return (err as Error).message || String(err);
  } finally {
    await c.end().catch(() => {});
  }
}

let failed = run('sqlite') !== 0;
const why = await pgReachable();
if (why === null) {
  failed = run('postgres') !== 0 || failed;
} else if (requirePg) {
  process.stderr.write(`\nPostgreSQL at ${PG_URL} is not reachable (${why}); FLOWGATE_TEST_REQUIRE_POSTGRES=1 makes that a failure.\n`);
  failed = true;
} else {
  process.stdout.write(`\nNOTE: PostgreSQL at ${PG_URL} is not reachable (${why}); the PostgreSQL run was SKIPPED.\n`);
}
process.exit(failed ? 1 : 0);
