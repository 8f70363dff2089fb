// Benchmark scenarios. Each prepares what it needs through the API or CLI, then names the
// request autocannon repeats (or runs a custom measurement).
import type autocannon from 'autocannon';

export interface BenchTarget {
  db: string;
  url: string;
  /** A PAT with every scope but dashboard/embed, owned by the bootstrap admin. */
  token: string;
  userId: string;
  env: NodeJS.ProcessEnv;
  cli(...args: string[]): any;
  dataDir: string;
  pgUrl: string | null;
  pgSchema: string | null;
}

export interface LoadSpec {
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  requests?: autocannon.Request[];
  connections?: number;
  /** A measurement of its own (e.g. a sequence that autocannon cannot express). */
  custom?: () => Promise<{ rps: number; p50: number; p99: number; errors: number; non2xx: number }>;
}

export interface Scenario {
  name: string;
  dbs?: string[];
  setup(t: BenchTarget): Promise<LoadSpec>;
}

export const auth = (t: BenchTarget) => ({ authorization: `Bearer ${t.token}` });

export const scenarios: Scenario[] = [
  { name: 'GET /healthz', setup: async () => ({ path: '/healthz' }) },
  { name: 'PAT GET /v1/users/{id}', setup: async (t) => ({ path: `/v1/users/${t.userId}`, headers: auth(t) }) },
];
