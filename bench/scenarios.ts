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

/** Sends `count` requests built by `make`, `parallel` at a time; fails on any non-2xx. */
export async function fill(count: number, parallel: number, make: (i: number) => Promise<Response>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const r = await make(i);
      if (!r.ok) throw new Error(`setup request ${i} failed: ${r.status} ${await r.text()}`);
      await r.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
}

export const post = (t: BenchTarget, path: string, body: unknown) =>
  fetch(t.url + path, { method: 'POST', headers: { ...auth(t), 'content-type': 'application/json' }, body: JSON.stringify(body) });

const SFTP_CONNECTOR_ID = '7d850823-0528-4671-b1d8-751f47547992';
let authIds: string[] = [];

export const scenarios: Scenario[] = [
  { name: 'GET /healthz', setup: async () => ({ path: '/healthz' }) },
  { name: 'PAT GET /v1/users/{id}', setup: async (t) => ({ path: `/v1/users/${t.userId}`, headers: auth(t) }) },
  {
    name: 'PAT GET /v1/connector-auths/{id}',
    async setup(t) {
      authIds = [];
      await fill(60, 8, async (i) => {
        const r = await post(t, '/v1/connector-auths', {
          connector_id: SFTP_CONNECTOR_ID, name: `customer ${i}`, auth_type: 'username_password', auth_token: '', auth_details: '',
          api_endpoint: `sftp://u${i}:secret-${i}@sftp${i}.example.com:22/in`, user_input: {}, username: `u${i}`, password: `pw-${i}`, tags: ['bench', `c${i}`],
        });
        if (r.ok) authIds.push(((await r.clone().json()) as { id: string }).id);
        return r;
      });
      return { path: `/v1/connector-auths/${authIds[0]}`, headers: auth(t) };
    },
  },
  { name: 'PAT GET /v1/connector-auths?limit=50', setup: async (t) => ({ path: '/v1/connector-auths?limit=50', headers: auth(t) }) },
  {
    name: 'seed lookup name like "%ft%" over 10,000 connectors',
    async setup(t) {
      await fill(10_000, 16, (i) => post(t, '/v1/connectors', { name: `Bench connector ${String(i).padStart(5, '0')}`, auth_types: ['api_key'], tags: ['bench'] }));
      return { path: '/v1/connectors?filter=name,like,%22%25ft%25%22', headers: auth(t) };
    },
  },
];
