// OAuth 2.0 / OIDC provider storage: the adapter's models, clients and signing keys.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable('oauth_models')
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('grant_id', 'text')
    .addColumn('client_id', 'text')
    .addColumn('user_code', 'text')
    .addColumn('uid', 'text')
    .addColumn('expires_at', 'text')
    .addColumn('consumed_at', 'text')
    .addPrimaryKeyConstraint('oauth_models_pk', ['model', 'id'])
    .execute();
  await db.schema.createIndex('oauth_models_grant_idx').on('oauth_models').columns(['grant_id', 'model']).execute();
  await db.schema.createIndex('oauth_models_client_idx').on('oauth_models').column('client_id').execute();
  await db.schema.createIndex('oauth_models_uid_idx').on('oauth_models').columns(['uid', 'model']).execute();
  await db.schema.createIndex('oauth_models_user_code_idx').on('oauth_models').columns(['user_code', 'model']).execute();
  await db.schema.createIndex('oauth_models_expires_idx').on('oauth_models').column('expires_at').execute();

  await db.schema.createTable('oauth_clients')
    .addColumn('client_id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('redirect_uris', 'text', (c) => c.notNull())
    .addColumn('client_secret', 'text')
    .addColumn('is_public', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('id_token_alg', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema.createTable('oauth_signing_keys')
    .addColumn('kid', 'text', (c) => c.primaryKey())
    .addColumn('alg', 'text', (c) => c.notNull())
    .addColumn('private_jwk', 'text', (c) => c.notNull())
    .addColumn('public_jwk', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('activates_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['oauth_signing_keys', 'oauth_clients', 'oauth_models']) {
    await db.schema.dropTable(t).execute();
  }
}
