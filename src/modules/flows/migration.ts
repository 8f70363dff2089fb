// 0004_flows: flows, their runs (the durable queue) and run steps, environment variables and
// file uploads.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable('flows')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('company_id', 'text', (c) => c.notNull().references('companies.id'))
    .addColumn('owner_user_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('steps', 'text', (c) => c.notNull())
    .addColumn('webhook_token_required', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('webhook_token_digest', 'text', (c) => c.notNull().unique())
    .addColumn('webhook_token_hint', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('flows_company_idx').on('flows').columns(['company_id', 'created_at', 'id']).execute();

  await db.schema.createTable('flow_runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('company_id', 'text', (c) => c.notNull())
    .addColumn('flow_id', 'text', (c) => c.notNull().references('flows.id').onDelete('cascade'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('trigger', 'text', (c) => c.notNull())
    .addColumn('triggered_by_user_id', 'text')
    .addColumn('request', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'text')
    .addColumn('started_at', 'text')
    .addColumn('finished_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('flow_runs_company_idx').on('flow_runs').columns(['company_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('flow_runs_flow_idx').on('flow_runs').columns(['flow_id', 'created_at']).execute();
  // The queue: partial indexes keep claiming and lease checks cheap however many runs are kept.
  await db.schema.createIndex('flow_runs_queued_idx').on('flow_runs').columns(['created_at', 'id'])
    .where(sql.ref('status'), '=', 'queued').execute();
  await db.schema.createIndex('flow_runs_running_idx').on('flow_runs').column('lease_expires_at')
    .where(sql.ref('status'), '=', 'running').execute();

  await db.schema.createTable('flow_run_steps')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('company_id', 'text', (c) => c.notNull())
    .addColumn('run_id', 'text', (c) => c.notNull().references('flow_runs.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('connector_id', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('connector_auth_id', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('input', 'text')
    .addColumn('output', 'text')
    .addColumn('error', 'text')
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('finished_at', 'text')
    .addColumn('duration_ms', 'integer')
    .addUniqueConstraint('flow_run_steps_run_position_uq', ['run_id', 'position'])
    .execute();

  await db.schema.createTable('env_variables')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('company_id', 'text', (c) => c.notNull().references('companies.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('value', 'text')
    .addColumn('value_encrypted', 'text')
    .addColumn('secret', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_by_user_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('env_variables_company_name_uq', ['company_id', 'name'])
    .execute();
  await db.schema.createIndex('env_variables_company_idx').on('env_variables').columns(['company_id', 'created_at', 'id']).execute();

  await db.schema.createTable('file_uploads')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('company_id', 'text', (c) => c.notNull().references('companies.id'))
    .addColumn('uploaded_by_user_id', 'text')
    .addColumn('filename', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('file_uploads_company_idx').on('file_uploads').columns(['company_id', 'created_at', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['file_uploads', 'env_variables', 'flow_run_steps', 'flow_runs', 'flows']) {
    await db.schema.dropTable(t).execute();
  }
}
