// Routes of connector auths (entity "Connector Auths"). The response schemas do not even
// contain the secret fields: Fastify's serializer drops anything not in them, a second
// safety net behind the service, which never puts a secret in a view.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { actorOf } from '../../http/auth.ts';
import { ListQuery, pageSchema } from '../../http/pagination.ts';
import { IdParams, Nullable, Timestamp, Uuid, problemResponses } from '../../http/schemas.ts';
import { RIGHTS, VISIBILITIES } from './permissions.ts';
import type { ConnectorAuthsService } from './service.ts';

const Visibility = Type.Enum([...VISIBILITIES]);

export const ConnectorAuthSchema = Type.Object({
  id: Uuid,
  connector_id: Uuid,
  name: Type.String(),
  auth_type: Type.String(),
  api_endpoint: Type.String({ description: 'The endpoint; a password in its user-info is shown as ***' }),
  username: Type.String(),
  user_input: Type.Record(Type.String(), Type.Unknown()),
  tags: Type.Array(Type.String()),
  password_set: Type.Boolean(),
  auth_token_set: Type.Boolean(),
  auth_details_set: Type.Boolean(),
  visibility: Type.String(),
  owner_user_id: Uuid,
  last_checked_at: Nullable(Timestamp),
  last_check_ok: Nullable(Type.Boolean()),
  created_at: Timestamp,
  updated_at: Timestamp,
}, { additionalProperties: false });

const Grant = Type.Object({
  grantee_type: Type.Enum(['user', 'team']),
  grantee_id: Uuid,
  rights: Type.Array(Type.Enum([...RIGHTS]), { minItems: 1, maxItems: RIGHTS.length, uniqueItems: true }),
}, { additionalProperties: false });

const PermissionsSchema = Type.Object({
  visibility: Type.String(),
  owner_user_id: Uuid,
  grants: Type.Array(Type.Object({ grantee_type: Type.String(), grantee_id: Uuid, rights: Type.Array(Type.String()) })),
});

const TestResultSchema = Type.Object({
  ok: Type.Boolean(),
  checked_at: Timestamp,
  error: Nullable(Type.Object({ code: Type.String(), message: Type.String() })),
});

// Field rules of seed 2.2. Sizes are bounded; secrets are plain strings and may be empty.
const F = {
  connector_id: Uuid,
  name: Type.String({ minLength: 1, maxLength: 200 }),
  auth_type: Type.String({ minLength: 1, maxLength: 64 }),
  auth_token: Type.String({ maxLength: 8192 }),
  auth_details: Type.String({ maxLength: 65536 }),
  api_endpoint: Type.String({ maxLength: 2048, description: 'A URL, e.g. sftp://user:password@host:22/path (the password is stored encrypted)' }),
  user_input: Type.Record(Type.String({ maxLength: 200 }), Type.Unknown(), { maxProperties: 100 }),
  username: Type.String({ maxLength: 512 }),
  password: Type.String({ maxLength: 4096 }),
  tags: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 50 }),
};

export function connectorAuthRoutes(app: FastifyInstance, auths: ConnectorAuthsService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['Connector auths'];
  const entity = 'Connector Auths' as const;

  r.post('/v1/connector-auths', {
    config: { entity },
    schema: {
      tags, summary: 'Create a connector auth (stored credentials); you become its owner',
      body: Type.Object({
        connector_id: F.connector_id, name: F.name, auth_type: F.auth_type,
        auth_token: Type.Optional(F.auth_token), auth_details: Type.Optional(F.auth_details),
        api_endpoint: Type.Optional(F.api_endpoint), user_input: Type.Optional(F.user_input),
        username: Type.Optional(F.username), password: Type.Optional(F.password), tags: Type.Optional(F.tags),
        visibility: Type.Optional(Visibility),
      }, { additionalProperties: false }),
      response: { 201: ConnectorAuthSchema, ...problemResponses },
    },
  }, async (req, reply) => {
    const a = await auths.create(actorOf(req), req.body);
    return reply.code(201).header('location', `/v1/connector-auths/${a.id}`).send(a);
  });

  r.put('/v1/connector-auths/:id', {
    config: { entity },
    schema: {
      tags, summary: 'Change a connector auth: connector_id, name, auth_type, api_endpoint, username, password; fields left out stay unchanged',
      params: IdParams,
      body: Type.Object({
        connector_id: Type.Optional(F.connector_id), name: Type.Optional(F.name), auth_type: Type.Optional(F.auth_type),
        api_endpoint: Type.Optional(F.api_endpoint), username: Type.Optional(F.username), password: Type.Optional(F.password),
      }, { additionalProperties: false }),
      response: { 200: ConnectorAuthSchema, ...problemResponses },
    },
  }, (req) => auths.update(actorOf(req), req.params.id, req.body));

  r.get('/v1/connector-auths', {
    config: { entity },
    schema: {
      tags, summary: 'List the connector auths you may read',
      description: 'Filterable by name, connector_id, auth_type, tags, visibility, owner_user_id, created_at.',
      querystring: ListQuery, response: { 200: pageSchema(ConnectorAuthSchema), ...problemResponses },
    },
  }, (req) => auths.list(actorOf(req), req.query));

  r.get('/v1/connector-auths/:id', {
    config: { entity },
    schema: { tags, summary: 'Get a connector auth (never its secrets)', params: IdParams, response: { 200: ConnectorAuthSchema, ...problemResponses } },
  }, (req) => auths.read(actorOf(req), req.params.id));

  r.delete('/v1/connector-auths/:id', {
    config: { entity },
    schema: { tags, summary: 'Delete a connector auth', params: IdParams, response: { 204: Type.Null(), ...problemResponses } },
  }, async (req, reply) => {
    await auths.delete(actorOf(req), req.params.id);
    return reply.code(204).send(null);
  });

  r.get('/v1/connector-auths/:id/permissions', {
    config: { entity },
    schema: { tags, summary: 'Who may use a connector auth (manage right)', params: IdParams, response: { 200: PermissionsSchema, ...problemResponses } },
  }, (req) => auths.getPermissions(actorOf(req), req.params.id));

  r.put('/v1/connector-auths/:id/permissions', {
    config: { entity, operation: 'update' },
    schema: {
      tags, summary: 'Set visibility, owner and grants of a connector auth (manage right); grants, when given, replace the list',
      params: IdParams,
      body: Type.Object({
        visibility: Type.Optional(Visibility),
        owner_user_id: Type.Optional(Uuid),
        grants: Type.Optional(Type.Array(Grant, { maxItems: 200 })),
      }, { additionalProperties: false }),
      response: { 200: PermissionsSchema, ...problemResponses },
    },
  }, (req) => auths.setPermissions(actorOf(req), req.params.id, req.body));

  r.post('/v1/connector-auths/:id/test', {
    // Writes last_checked_at and uses the secret: an update, not a read.
    config: { entity, operation: 'update' },
    schema: {
      tags, summary: 'Test the stored credential against the external system (update right)', params: IdParams,
      response: { 200: TestResultSchema, ...problemResponses },
    },
  }, (req) => auths.test(actorOf(req), req.params.id));
}
