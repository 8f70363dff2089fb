// Benchmark scenarios. Each prepares what it needs through the API or CLI, then names the
// request autocannon repeats (or runs a custom measurement).
import http from 'node:http';
import type autocannon from 'autocannon';
import { BENCH_REDIRECT_URI, basicAuth, oauthLogin, seedRefreshBody, type OAuthTokens } from './oauth.ts';

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
  /** A local HTTP server (GET / answers JSON) that flow steps call. */
  httpTarget: string;
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

// ------------------------------------------------------------------ OAuth (issue 4)

const BENCH_SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const BENCH_WARMUP = Math.max(1, Math.min(3, BENCH_SECONDS / 3));
const OAUTH_PASSWORD = 'bench correct horse battery staple';
/** Concurrent refresh-token chains of the refresh scenario (each a login first). */
const OAUTH_CHAINS = Number(process.env.BENCH_OAUTH_CHAINS ?? 32);

interface OAuthBench { client: { client_id: string; client_secret: string }; email: string }
const oauthSetups = new Map<string, Promise<OAuthBench>>();

/** Per target: a dedicated API user with a password and a client, both through the CLI (seed 5.2 steps 1-2). */
function oauthBench(t: BenchTarget): Promise<OAuthBench> {
  let p = oauthSetups.get(t.url);
  if (!p) {
    p = (async () => {
      const email = `oauth-bench-${t.db}@example.com`;
      t.cli('users', 'create', '--email', email, '--name', 'OAuth bench', '--password', OAUTH_PASSWORD, '--role', 'admin');
      const client = t.cli('clients', 'create', '--name', 'bench', '--redirect-uri', BENCH_REDIRECT_URI) as OAuthBench['client'];
      return { client, email };
    })();
    oauthSetups.set(t.url, p);
  }
  return p;
}

async function loginMany(t: BenchTarget, o: OAuthBench, n: number): Promise<OAuthTokens[]> {
  const out: OAuthTokens[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(n, 8) }, async () => {
    while (next < n) {
      next++;
      out.push(await oauthLogin(t.url, o.client, o.email, OAUTH_PASSWORD));
    }
  }));
  return out;
}

/** One keep-alive POST on node:http (lighter on the shared CPUs than fetch). */
function httpPost(agent: http.Agent, url: URL, headers: Record<string, string>, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ agent, host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * `chains.length` loops, each sending the seed's refresh request with its own chain, one after
 * the other (every answer's refresh_token is the next request's): warm-up, then BENCH_SECONDS
 * measured.
 */
async function refreshLoad(t: BenchTarget, client: OAuthBench['client'], chains: string[]) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: chains.length });
  const url = new URL('/oauth2/token', t.url);
  const headers = { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: basicAuth(client) };
  let errors = 0;
  let non2xx = 0;
  const latencies: number[] = [];
  let measuring = false;
  const run = async (chain: number, until: number) => {
    while (Date.now() < until && chains[chain]) {
      const started = performance.now();
      try {
        const res = await httpPost(agent, url, headers, seedRefreshBody(client.client_id, chains[chain]));
        const ms = performance.now() - started;
        if (res.status !== 200) {
          if (measuring) non2xx++;
          chains[chain] = '';
          break;
        }
        chains[chain] = (JSON.parse(res.body) as OAuthTokens).refresh_token;
        if (measuring) latencies.push(ms);
      } catch {
        if (measuring) errors++;
        chains[chain] = '';
      }
    }
  };
  await Promise.all(chains.map((_, i) => run(i, Date.now() + BENCH_WARMUP * 1000)));
  measuring = true;
  const started = performance.now();
  await Promise.all(chains.map((_, i) => run(i, Date.now() + BENCH_SECONDS * 1000)));
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => (latencies.length ? Math.round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))]) : 0);
  if (chains.some((c) => !c)) throw new Error(`OAuth refresh bench: ${chains.filter((c) => !c).length} chains broke (non-2xx ${non2xx}, errors ${errors})`);
  return { rps: latencies.length / seconds, p50: pct(0.5), p99: pct(0.99), errors, non2xx };
}

scenarios.push(
  {
    name: 'OAuth refresh grant (full rotation)',
    async setup(t) {
      const o = await oauthBench(t);
      const chains = (await loginMany(t, o, OAUTH_CHAINS)).map((x) => x.refresh_token);
      return { path: '/oauth2/token', custom: () => refreshLoad(t, o.client, chains) };
    },
  },
  {
    name: 'OAuth Bearer GET /v1/users/{id}',
    async setup(t) {
      const o = await oauthBench(t);
      const [tokens] = await loginMany(t, o, 1);
      return { path: `/v1/users/${t.userId}`, headers: { authorization: `Bearer ${tokens.access_token}` } };
    },
  },
);

// Flows: a one-step HTTP flow against a local server. End-to-end first (the worker runs),
// then the accept rate of the webhook (durable enqueue), which leaves runs queued behind it.
const HTTP_CONNECTOR = '0f926b7e-fc85-4a77-ab42-bd02fabce0d9';
async function benchFlow(t: BenchTarget, targetUrl: string, tokenRequired: boolean): Promise<{ id: string; webhook_token: string | null }> {
  const r = await post(t, '/v1/flows', {
    name: `bench flow ${Math.random().toString(36).slice(2)}`, status: 'active', webhook_token_required: tokenRequired,
    steps: [{ name: 'call', connector_id: HTTP_CONNECTOR, action: 'request', input: { method: 'GET', url: targetUrl } }],
  });
  if (!r.ok) throw new Error(`flow create failed: ${r.status} ${await r.text()}`);
  return (await r.json()) as { id: string; webhook_token: string | null };
}

scenarios.push(
  {
    name: 'flow run end to end (1 HTTP step, Prefer: wait)',
    async setup(t) {
      const flow = await benchFlow(t, t.httpTarget, true);
      return { path: `/v1/flows/${flow.id}/run`, method: 'POST', headers: { ...auth(t), 'content-type': 'application/json', prefer: 'wait=30' }, body: '{"n":1}' };
    },
  },
  {
    name: 'webhook runs accepted (durable enqueue)',
    async setup(t) {
      const flow = await benchFlow(t, t.httpTarget, true);
      return { path: `/v1/flow-webhook/${flow.id}?customer_auth_id=none`, method: 'POST', headers: { 'x-webhook-token': flow.webhook_token!, 'content-type': 'application/json' }, body: '{"order_id":1}' };
    },
  },
);
