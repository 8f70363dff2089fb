// The flows module: flows, the white-label webhook, the durable run queue and its worker.
// Migration 0004_flows also creates the tables of the env-variables and file-uploads modules.
import type { FlowgateModule } from '../module.ts';
import type { AppContext } from '../../context.ts';
import * as migration0004 from './migration.ts';
import { FlowsStore } from './store.ts';
import { FlowsService } from './service.ts';
import { RunsService } from './runs.ts';
import { Engine, type EngineLog } from './engine.ts';
import { Worker, DEFAULT_WORKER_OPTIONS, type WorkerOptions } from './worker.ts';
import { flowRoutes } from './routes.ts';
import { parseScope, type ScopeGrant } from '../access/scopes.ts';

declare module '../../context.ts' {
  interface Services {
    flows: FlowsService;
    flowRuns: RunsService;
  }
}

const workers = new WeakMap<AppContext, Worker[]>();
const stores = new WeakMap<AppContext, FlowsStore>();

const WEBHOOK_SCOPES: ScopeGrant[] = [parseScope('automation:webhook_run')!];

/**
 * Starts a worker on `ctx` (serve does this through the module's start(); tests call it
 * directly, several times for several workers). Stopped by ctx.close().
 */
export function startFlowWorker(ctx: AppContext, log: EngineLog, opts: Partial<WorkerOptions> = {}): Worker {
  const store = stores.get(ctx)!;
  const s = ctx.services;
  const engine = new Engine({
    store, runs: s.flowRuns, connectors: s.connectors, connectorAuths: s.connectorAuths, envVariables: s.envVariables,
    stepTimeoutMs: ctx.config.stepTimeoutSeconds * 1000, log,
  });
  const worker = new Worker({ store, engine, runs: s.flowRuns, log }, { ...DEFAULT_WORKER_OPTIONS, concurrency: ctx.config.workerConcurrency, leaseSeconds: ctx.config.workerLeaseSeconds, ...opts });
  worker.start();
  const list = workers.get(ctx) ?? [];
  list.push(worker);
  workers.set(ctx, list);
  return worker;
}

export const flowsModule: FlowgateModule = {
  name: 'flows',
  migrations: { '0004_flows': migration0004 },
  async services(ctx) {
    const store = new FlowsStore(ctx.database.db, ctx.database.kind);
    stores.set(ctx, store);
    ctx.services.flows = new FlowsService({
      store, connectors: ctx.services.connectors, audit: ctx.services.audit,
      digestKey: await ctx.keyring.namedSecret('webhook_token_digest'), baseUrl: ctx.config.baseUrl,
    });
    ctx.services.flowRuns = new RunsService(store);
  },
  // `Authorization: Bearer fgw_...`: a flow's webhook token, good for that flow's webhook only.
  bearer(ctx) {
    return async (token) => {
      if (!token.startsWith('fgw_')) return null;
      const flow = await ctx.services.flows.flowOfWebhookToken(token);
      if (!flow) return null;
      return {
        kind: 'webhook_token', userId: flow.owner_user_id, companyId: flow.company_id, email: '', role: 'member',
        scopes: WEBHOOK_SCOPES, credentialId: flow.id, credentialExpiresAt: null,
      };
    };
  },
  async routes(app, ctx) {
    await flowRoutes(app, { flows: ctx.services.flows, runs: ctx.services.flowRuns, config: ctx.config });
  },
  start(ctx, app) {
    if (ctx.config.workerConcurrency > 0) startFlowWorker(ctx, app.log);
  },
  async stop(ctx) {
    const list = workers.get(ctx) ?? [];
    workers.delete(ctx);
    await Promise.all(list.map((w) => w.stop()));
  },
};

export { FlowsService, type Flow } from './service.ts';
export { RunsService, type FlowRun } from './runs.ts';
export { Worker } from './worker.ts';
