// The worker: claims queued runs from the database (the durable queue), executes up to
// `concurrency` at once, renews a lease on each while it runs, and queues again runs whose
// worker died (lease expired). Any number of workers, in one process or many instances on one
// PostgreSQL, share the queue; the claim guarantees a run is taken by one of them only.
import crypto from 'node:crypto';
import os from 'node:os';
import { addSeconds, nowIso } from '../../db/time.ts';
import type { FlowsStore } from './store.ts';
import type { Engine, EngineLog } from './engine.ts';
import type { RunsService } from './runs.ts';

export interface WorkerOptions {
  concurrency: number;
  /** How long a claimed run stays ours without a heartbeat. */
  leaseSeconds: number;
  /** How often an idle worker looks for work that another instance queued. */
  pollMs: number;
  /** Claims after which a run interrupted again and again ends in error. */
  maxAttempts: number;
  /** On stop, how long running runs may take to finish before they are given back to the queue. */
  shutdownGraceMs: number;
}

export const DEFAULT_WORKER_OPTIONS: Omit<WorkerOptions, 'concurrency'> = {
  leaseSeconds: 30, pollMs: 500, maxAttempts: 3, shutdownGraceMs: 10_000,
};

export class Worker {
  readonly id = `${os.hostname()}:${process.pid}:${crypto.randomBytes(4).toString('hex')}`;
  readonly #store: FlowsStore;
  readonly #engine: Engine;
  readonly #runs: RunsService;
  readonly #log: EngineLog;
  readonly #opts: WorkerOptions;
  readonly #active = new Map<string, { ctrl: AbortController; done: Promise<void> }>();
  #stopping = false;
  #wake: (() => void) | null = null;
  #loop: Promise<void> | null = null;
  #timers: NodeJS.Timeout[] = [];
  readonly #onQueued = () => this.#wakeUp();
  /** Runs this worker executed (for tests and metrics). */
  executed = 0;

  constructor(deps: { store: FlowsStore; engine: Engine; runs: RunsService; log: EngineLog }, opts: WorkerOptions) {
    this.#store = deps.store; this.#engine = deps.engine; this.#runs = deps.runs; this.#log = deps.log;
    this.#opts = opts;
  }

  get activeCount(): number {
    return this.#active.size;
  }

  start(): void {
    if (this.#loop) return;
    this.#runs.queued.on('queued', this.#onQueued);
    const leaseMs = this.#opts.leaseSeconds * 1000;
    this.#timers.push(setInterval(() => void this.#heartbeat(), Math.max(100, Math.floor(leaseMs / 3))));
    this.#timers.push(setInterval(() => void this.#reap(), Math.max(200, Math.floor(leaseMs / 2))));
    for (const t of this.#timers) t.unref();
    this.#loop = this.#reap().then(() => this.#run());
  }

  #wakeUp(): void {
    const w = this.#wake;
    this.#wake = null;
    w?.();
  }

  async #run(): Promise<void> {
    while (!this.#stopping) {
      let claimed = false;
      while (!this.#stopping && this.#active.size < this.#opts.concurrency) {
        let run;
        try {
          const now = nowIso();
          run = await this.#store.claim(this.id, now, addSeconds(now, this.#opts.leaseSeconds));
        } catch (err) {
          this.#log.error({ err: { message: (err as Error)?.message } }, 'claiming a flow run failed');
          break;
        }
        if (!run) break;
        claimed = true;
        const ctrl = new AbortController();
        const r = run;
        const done = this.#engine.execute(r, this.id, ctrl.signal)
          .catch((err) => this.#log.error({ run_id: r.id, err: { message: (err as Error)?.message } }, 'flow run crashed'))
          .finally(() => {
            this.#active.delete(r.id);
            this.executed++;
            this.#wakeUp();
          });
        this.#active.set(r.id, { ctrl, done });
      }
      if (this.#stopping) break;
      // Full, or nothing queued: sleep until a slot frees, a run is accepted here, or the poll.
      if (!claimed || this.#active.size >= this.#opts.concurrency) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => { this.#wake = null; resolve(); }, this.#opts.pollMs);
          this.#wake = () => { clearTimeout(timer); resolve(); };
        });
      }
    }
  }

  async #heartbeat(): Promise<void> {
    const ids = [...this.#active.keys()];
    if (ids.length === 0) return;
    try {
      const now = nowIso();
      const held = await this.#store.heartbeat(this.id, ids, addSeconds(now, this.#opts.leaseSeconds), now);
      for (const id of ids) {
        // The lease ran out and the run was given to another worker: stop without writing.
        if (!held.has(id) && this.#active.has(id)) this.#active.get(id)!.ctrl.abort('lease_lost');
      }
    } catch (err) {
      this.#log.warn({ err: { message: (err as Error)?.message } }, 'renewing flow run leases failed');
    }
  }

  async #reap(): Promise<void> {
    try {
      const now = nowIso();
      const error = JSON.stringify({ code: 'run_interrupted', message: `The run was interrupted ${this.#opts.maxAttempts} times (worker stopped or lost); it is not tried again.`, step: null });
      const r = await this.#store.requeueExpired(now, this.#opts.maxAttempts, error);
      if (r.requeued) this.#wakeUp();
    } catch (err) {
      this.#log.warn({ err: { message: (err as Error)?.message } }, 're-queueing expired flow runs failed');
    }
  }

  /** Stops claiming; lets running runs finish within the grace period, then gives them back. */
  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    this.#runs.queued.off('queued', this.#onQueued);
    this.#wakeUp();
    await this.#loop;
    const pending = [...this.#active.values()];
    if (pending.length) {
      const grace = new Promise<void>((r) => setTimeout(r, this.#opts.shutdownGraceMs).unref());
      await Promise.race([Promise.all(pending.map((p) => p.done)), grace]);
      for (const p of this.#active.values()) p.ctrl.abort('shutdown');
      await Promise.all([...this.#active.values()].map((p) => p.done));
    }
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
  }
}
