// The OAuth module uses the one composed database type (src/db/schema.ts) and the shared
// compile-once helper for its hot queries.
import type { Db } from '../../db/index.ts';

export type OAuthDb = Db;

export { compiledOnce } from '../../db/prepared.ts';
