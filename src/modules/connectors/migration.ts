// 0002_connectors: connectors, connector actions, connector auths and their grants, and the
// built-in catalogue (fixed ids, identical on every installation).
import { sql, type Kysely } from 'kysely';
import { BUILTIN_CONNECTORS, BUILTIN_CREATED_AT } from './catalogue.ts';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable('connectors')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('company_id', 'text', (c) => c.references('companies.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('contype', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('auth_types', 'text', (c) => c.notNull())
    .addColumn('base_domain', 'text')
    .addColumn('short_description', 'text', (c) => c.notNull())
    .addColumn('tags', 'text', (c) => c.notNull())
    .addColumn('runtime', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('connectors_company_name_uq', ['company_id', 'name'])
    .execute();
  await db.schema.createIndex('connectors_company_idx').on('connectors').columns(['company_id', 'created_at', 'id']).execute();

  await db.schema.createTable('connector_actions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('connector_id', 'text', (c) => c.notNull().references('connectors.id').onDelete('cascade'))
    .addColumn('company_id', 'text', (c) => c.references('companies.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('short_description', 'text', (c) => c.notNull())
    .addColumn('input_schema', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('connector_actions_connector_name_uq', ['connector_id', 'name'])
    .execute();
  await db.schema.createIndex('connector_actions_company_idx').on('connector_actions').columns(['company_id', 'created_at', 'id']).execute();

  await db.schema.createTable('connector_auths')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('company_id', 'text', (c) => c.notNull().references('companies.id'))
    .addColumn('connector_id', 'text', (c) => c.notNull().references('connectors.id'))
    .addColumn('owner_user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('auth_type', 'text', (c) => c.notNull())
    .addColumn('api_endpoint', 'text', (c) => c.notNull())
    .addColumn('api_endpoint_enc', 'text')
    .addColumn('username', 'text', (c) => c.notNull())
    .addColumn('password_enc', 'text')
    .addColumn('auth_token_enc', 'text')
    .addColumn('auth_details_enc', 'text')
    .addColumn('user_input', 'text', (c) => c.notNull())
    .addColumn('tags', 'text', (c) => c.notNull())
    .addColumn('visibility', 'text', (c) => c.notNull())
    .addColumn('last_checked_at', 'text')
    .addColumn('last_check_ok', 'integer')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('connector_auths_company_idx').on('connector_auths').columns(['company_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('connector_auths_owner_idx').on('connector_auths').columns(['owner_user_id']).execute();
  await db.schema.createIndex('connector_auths_connector_idx').on('connector_auths').columns(['connector_id']).execute();

  await db.schema.createTable('connector_auth_grants')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('auth_id', 'text', (c) => c.notNull().references('connector_auths.id').onDelete('cascade'))
    .addColumn('company_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('team_id', 'text', (c) => c.references('teams.id').onDelete('cascade'))
    .addColumn('can_update', 'integer', (c) => c.notNull())
    .addColumn('can_delete', 'integer', (c) => c.notNull())
    .addColumn('can_manage', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addCheckConstraint('connector_auth_grants_one_grantee', sqlOneGrantee())
    .execute();
  await db.schema.createIndex('connector_auth_grants_auth_idx').on('connector_auth_grants').columns(['auth_id']).execute();
  await db.schema.createIndex('connector_auth_grants_user_idx').on('connector_auth_grants').columns(['user_id']).execute();
  await db.schema.createIndex('connector_auth_grants_team_idx').on('connector_auth_grants').columns(['team_id']).execute();

  for (const c of BUILTIN_CONNECTORS) {
    await db.insertInto('connectors').values({
      id: c.id, company_id: null, name: c.name, contype: c.contype, status: c.status,
      auth_types: JSON.stringify(c.auth_types), base_domain: c.base_domain, short_description: c.short_description,
      tags: JSON.stringify(c.tags), runtime: c.runtime, created_at: BUILTIN_CREATED_AT, updated_at: BUILTIN_CREATED_AT,
    }).execute();
    for (const a of c.actions) {
      await db.insertInto('connector_actions').values({
        id: a.id, connector_id: c.id, company_id: null, name: a.name, method: a.method,
        short_description: a.short_description, input_schema: JSON.stringify(a.input_schema),
        created_at: BUILTIN_CREATED_AT, updated_at: BUILTIN_CREATED_AT,
      }).execute();
    }
  }
}

/** A grant names exactly one grantee: a user or a team. */
function sqlOneGrantee() {
  return sql`(user_id is null) <> (team_id is null)`;
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['connector_auth_grants', 'connector_auths', 'connector_actions', 'connectors']) {
    await db.schema.dropTable(t).execute();
  }
}
