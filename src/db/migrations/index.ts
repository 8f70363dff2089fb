// Every migration, in order. Names are fixed forever once released.
import type { Migration } from 'kysely/migration';
import * as m0001 from './0001_foundation.ts';

export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
};
