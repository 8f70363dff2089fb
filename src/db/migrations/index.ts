// Every migration, in order: the foundation's and each module's. Names are fixed forever
// once released and sort in the order they must run.
import type { Migration } from 'kysely/migration';
import * as m0001 from './0001_foundation.ts';
import { modules } from '../../modules/index.ts';

const all: Record<string, Migration> = { '0001_foundation': m0001 };
for (const m of modules) Object.assign(all, m.migrations ?? {});

export const migrations: Record<string, Migration> = Object.fromEntries(
  Object.entries(all).sort(([a], [b]) => a.localeCompare(b)),
);
