// SQL of flows, runs and run steps. Every query a request can reach is filtered by company;
// the queue operations (claim, heartbeat, requeue) are the worker's and span companies.
import { sql } from 'kysely';
import type { Db, DbKind } from '../../db/index.ts';
import { applyFilters, afterCursor, type Condition } from '../../http/filter.ts';
import type { Cursor } from '../../http/pagination.ts';
import { type FlowRow, type FlowRunRow, type FlowRunStepRow, type FlowsDb } from './tables.ts';

export class FlowsStore {
  readonly db: FlowsDb;
  readonly kind: DbKind;
  constructor(db: Db, kind: DbKind) { this.db = db; this.kind = kind; }

  // ---- flows ----

  flowById(companyId: string, id: string): Promise<FlowRow | undefined> {
    return this.db.selectFrom('flows').selectAll().where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
  }
  /** Only for the webhook, which learns the company from the flow it names. */
  flowByIdForWebhook(id: string): Promise<FlowRow | undefined> {
    return this.db.selectFrom('flows').selectAll().where('id', '=', id).executeTakeFirst();
  }
  flowByWebhookDigest(digest: string): Promise<FlowRow | undefined> {
    return this.db.selectFrom('flows').selectAll().where('webhook_token_digest', '=', digest).executeTakeFirst();
  }
  listFlows(companyId: string, conds: Condition[], cursor: Cursor | null, limit: number): Promise<FlowRow[]> {
    let qb = this.db.selectFrom('flows').selectAll().where('company_id', '=', companyId);
    qb = afterCursor(applyFilters(qb, conds), cursor, 'flows');
    return qb.orderBy('created_at').orderBy('id').limit(limit).execute();
  }
  async insertFlow(row: FlowRow): Promise<void> {
    await this.db.insertInto('flows').values(row).execute();
  }
  async updateFlow(companyId: string, id: string, patch: Partial<FlowRow>): Promise<boolean> {
    const r = await this.db.updateTable('flows').set(patch).where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }
  async deleteFlow(companyId: string, id: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      // Steps and runs go with the flow (the foreign keys cascade too; explicit for clarity).
      const runIds = trx.selectFrom('flow_runs').select('id').where('company_id', '=', companyId).where('flow_id', '=', id);
      await trx.deleteFrom('flow_run_steps').where('company_id', '=', companyId).where('run_id', 'in', runIds).execute();
      await trx.deleteFrom('flow_runs').where('company_id', '=', companyId).where('flow_id', '=', id).execute();
      const r = await trx.deleteFrom('flows').where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
      return Number(r.numDeletedRows) === 1;
    });
  }

  // ---- runs ----

  async insertRun(row: FlowRunRow): Promise<void> {
    await this.db.insertInto('flow_runs').values(row).execute();
  }
  runById(companyId: string, id: string): Promise<FlowRunRow | undefined> {
    return this.db.selectFrom('flow_runs').selectAll().where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
  }
  runStatus(companyId: string, id: string): Promise<{ status: string } | undefined> {
    return this.db.selectFrom('flow_runs').select('status').where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst();
  }
  listRuns(companyId: string, conds: Condition[], cursor: Cursor | null, limit: number): Promise<FlowRunRow[]> {
    let qb = this.db.selectFrom('flow_runs').selectAll().where('company_id', '=', companyId);
    qb = afterCursor(applyFilters(qb, conds), cursor, 'flow_runs');
    return qb.orderBy('created_at').orderBy('id').limit(limit).execute();
  }

  /**
   * Takes the oldest queued run for `worker`, or returns null. On PostgreSQL the row is locked
   * with FOR UPDATE SKIP LOCKED, so concurrent instances never take the same run; on SQLite
   * (one process) the single UPDATE ... RETURNING is atomic, and `status = 'queued'` in its
   * WHERE makes a second taker find nothing.
   */
  async claim(worker: string, now: string, leaseUntil: string): Promise<FlowRunRow | null> {
    const lock = this.kind === 'postgres' ? sql`for update skip locked` : sql``;
    const r = await sql<FlowRunRow>`
      update flow_runs
         set status = 'running', lease_owner = ${worker}, lease_expires_at = ${leaseUntil},
             attempts = attempts + 1, started_at = ${now}, finished_at = null, error = null, updated_at = ${now}
       where id = (select id from flow_runs where status = 'queued' order by created_at, id limit 1 ${lock})
         and status = 'queued'
      returning *`.execute(this.db);
    return r.rows[0] ?? null;
  }

  /** Extends the lease of the worker's runs; returns the ids it still holds. */
  async heartbeat(worker: string, ids: string[], leaseUntil: string, now: string): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.db.updateTable('flow_runs').set({ lease_expires_at: leaseUntil, updated_at: now })
      .where('id', 'in', ids).where('lease_owner', '=', worker).where('status', '=', 'running')
      .returning('id').execute();
    return new Set(rows.map((r) => r.id));
  }

  /**
   * Runs whose worker stopped renewing its lease (killed, frozen): queued again, or ended in
   * error after `maxAttempts` claims. Returns how many were queued and failed.
   */
  async requeueExpired(now: string, maxAttempts: number, error: string): Promise<{ requeued: number; failed: number }> {
    const failed = await this.db.updateTable('flow_runs')
      .set({ status: 'error', error, finished_at: now, lease_owner: null, lease_expires_at: null, updated_at: now })
      .where('status', '=', 'running').where('lease_expires_at', '<', now).where('attempts', '>=', maxAttempts)
      .executeTakeFirst();
    const requeued = await this.db.updateTable('flow_runs')
      .set({ status: 'queued', lease_owner: null, lease_expires_at: null, updated_at: now })
      .where('status', '=', 'running').where('lease_expires_at', '<', now)
      .executeTakeFirst();
    return { requeued: Number(requeued.numUpdatedRows), failed: Number(failed.numUpdatedRows) };
  }

  /** Ends a run, only if `worker` still holds it (a worker that lost its lease writes nothing). */
  async finishRun(id: string, worker: string, status: 'success' | 'error', error: string | null, now: string): Promise<boolean> {
    const r = await this.db.updateTable('flow_runs')
      .set({ status, error, finished_at: now, lease_owner: null, lease_expires_at: null, updated_at: now })
      .where('id', '=', id).where('lease_owner', '=', worker).where('status', '=', 'running')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /** Gives a run back to the queue (graceful shutdown in the middle of it). */
  async releaseRun(id: string, worker: string, now: string): Promise<boolean> {
    const r = await this.db.updateTable('flow_runs')
      .set({ status: 'queued', lease_owner: null, lease_expires_at: null, started_at: null, updated_at: now })
      .where('id', '=', id).where('lease_owner', '=', worker).where('status', '=', 'running')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  // ---- steps ----

  async deleteSteps(companyId: string, runId: string): Promise<void> {
    await this.db.deleteFrom('flow_run_steps').where('company_id', '=', companyId).where('run_id', '=', runId).execute();
  }
  async insertStep(row: FlowRunStepRow): Promise<void> {
    await this.db.insertInto('flow_run_steps').values(row).execute();
  }
  async updateStep(companyId: string, id: string, patch: Partial<FlowRunStepRow>): Promise<void> {
    await this.db.updateTable('flow_run_steps').set(patch).where('company_id', '=', companyId).where('id', '=', id).execute();
  }
  stepsOfRun(companyId: string, runId: string): Promise<FlowRunStepRow[]> {
    return this.db.selectFrom('flow_run_steps').selectAll().where('company_id', '=', companyId).where('run_id', '=', runId)
      .orderBy('position').execute();
  }
}
