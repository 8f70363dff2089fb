// Routes of connectors (entity "Connectors") and connector actions (entity "Connector Actions").
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { actorOf } from '../../http/auth.ts';
import { ListQuery, pageSchema } from '../../http/pagination.ts';
import { IdParams, Nullable, Timestamp, Uuid, problemResponses } from '../../http/schemas.ts';
import { ACTION_METHODS, AUTH_TYPES, CONNECTOR_STATUSES, CONTYPES } from './catalogue.ts';
import type { ConnectorsService } from './service.ts';

const Runtime = Nullable(Type.Enum(['sftp', 'ftp', 'http'], { description: 'Runtime client that runs its actions and tests its credentials' }));
const Tags = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 50 });
const AuthTypes = Type.Array(Type.Enum([...AUTH_TYPES]), { maxItems: AUTH_TYPES.length, uniqueItems: true });
const BaseDomain = Nullable(Type.String({ format: 'hostname', maxLength: 253 }));

export const ConnectorSchema = Type.Object({
  id: Uuid, name: Type.String(), contype: Type.String(), status: Type.String(), auth_types: Type.Array(Type.String()),
  base_domain: Nullable(Type.String()), short_description: Type.String(), tags: Type.Array(Type.String()),
  runtime: Nullable(Type.String()), built_in: Type.Boolean(), created_at: Timestamp, updated_at: Timestamp,
});

export const ConnectorActionSchema = Type.Object({
  id: Uuid, connector_id: Uuid, name: Type.String(), method: Type.String(), short_description: Type.String(),
  input_schema: Type.Record(Type.String(), Type.Unknown()), built_in: Type.Boolean(), created_at: Timestamp, updated_at: Timestamp,
});

const connectorFields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  contype: Type.Enum([...CONTYPES]),
  status: Type.Enum([...CONNECTOR_STATUSES]),
  auth_types: AuthTypes,
  base_domain: BaseDomain,
  short_description: Type.String({ maxLength: 1000 }),
  tags: Tags,
  runtime: Runtime,
};

const actionFields = {
  name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z][a-z0-9_]*$', description: 'snake_case' }),
  method: Type.Enum([...ACTION_METHODS]),
  short_description: Type.String({ maxLength: 1000 }),
  input_schema: Type.Record(Type.String(), Type.Unknown(), { description: 'JSON Schema of the action\'s input', maxProperties: 100 }),
};

export function connectorRoutes(app: FastifyInstance, connectors: ConnectorsService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['Connectors'];
  const atags = ['Connector actions'];

  r.get('/v1/connectors', {
    config: { entity: 'Connectors' },
    schema: {
      tags, summary: 'Find connectors: the built-in catalogue and your company\'s own',
      description: 'Filterable by name, contype, status, base_domain, runtime, tags, created_at; e.g. filter=name,like,"%ft%".',
      querystring: ListQuery, response: { 200: pageSchema(ConnectorSchema), ...problemResponses },
    },
  }, (req) => connectors.list(actorOf(req), req.query));

  r.get('/v1/connectors/:id', {
    config: { entity: 'Connectors' },
    schema: { tags, summary: 'Get a connector', params: IdParams, response: { 200: ConnectorSchema, ...problemResponses } },
  }, (req) => connectors.read(actorOf(req), req.params.id));

  r.post('/v1/connectors', {
    config: { entity: 'Connectors' },
    schema: {
      tags, summary: 'Create a connector of your company (admins)',
      body: Type.Object({
        name: connectorFields.name, contype: Type.Optional(connectorFields.contype), status: Type.Optional(connectorFields.status),
        auth_types: connectorFields.auth_types, base_domain: Type.Optional(connectorFields.base_domain),
        short_description: Type.Optional(connectorFields.short_description), tags: Type.Optional(connectorFields.tags),
        runtime: Type.Optional(connectorFields.runtime),
      }, { additionalProperties: false }),
      response: { 201: ConnectorSchema, ...problemResponses },
    },
  }, async (req, reply) => {
    const c = await connectors.create(actorOf(req), req.body);
    return reply.code(201).header('location', `/v1/connectors/${c.id}`).send(c);
  });

  r.put('/v1/connectors/:id', {
    config: { entity: 'Connectors' },
    schema: {
      tags, summary: 'Change a connector of your company (admins); fields left out stay unchanged', params: IdParams,
      body: Type.Object({
        name: Type.Optional(connectorFields.name), contype: Type.Optional(connectorFields.contype),
        status: Type.Optional(connectorFields.status), auth_types: Type.Optional(connectorFields.auth_types),
        base_domain: Type.Optional(connectorFields.base_domain), short_description: Type.Optional(connectorFields.short_description),
        tags: Type.Optional(connectorFields.tags), runtime: Type.Optional(connectorFields.runtime),
      }, { additionalProperties: false }),
      response: { 200: ConnectorSchema, ...problemResponses },
    },
  }, (req) => connectors.update(actorOf(req), req.params.id, req.body));

  r.delete('/v1/connectors/:id', {
    config: { entity: 'Connectors' },
    schema: { tags, summary: 'Delete a connector of your company (admins)', params: IdParams, response: { 204: Type.Null(), ...problemResponses } },
  }, async (req, reply) => {
    await connectors.delete(actorOf(req), req.params.id);
    return reply.code(204).send(null);
  });

  // ---- actions ----

  r.get('/v1/connectors/:id/actions', {
    config: { entity: 'Connector Actions' },
    schema: {
      tags: atags, summary: 'List the actions of a connector', params: IdParams, querystring: ListQuery,
      response: { 200: pageSchema(ConnectorActionSchema), ...problemResponses },
    },
  }, (req) => connectors.listActions(actorOf(req), req.query, req.params.id));

  r.get('/v1/connector-actions', {
    config: { entity: 'Connector Actions' },
    schema: {
      tags: atags, summary: 'List connector actions', description: 'Filterable by connector_id, name, method, created_at.',
      querystring: ListQuery, response: { 200: pageSchema(ConnectorActionSchema), ...problemResponses },
    },
  }, (req) => connectors.listActions(actorOf(req), req.query));

  r.get('/v1/connector-actions/:id', {
    config: { entity: 'Connector Actions' },
    schema: { tags: atags, summary: 'Get a connector action', params: IdParams, response: { 200: ConnectorActionSchema, ...problemResponses } },
  }, (req) => connectors.readAction(actorOf(req), req.params.id));

  r.post('/v1/connector-actions', {
    config: { entity: 'Connector Actions' },
    schema: {
      tags: atags, summary: 'Add an action to a connector of your company (admins)',
      body: Type.Object({
        connector_id: Uuid, name: actionFields.name, method: actionFields.method,
        short_description: Type.Optional(actionFields.short_description), input_schema: actionFields.input_schema,
      }, { additionalProperties: false }),
      response: { 201: ConnectorActionSchema, ...problemResponses },
    },
  }, async (req, reply) => {
    const a = await connectors.createAction(actorOf(req), req.body);
    return reply.code(201).header('location', `/v1/connector-actions/${a.id}`).send(a);
  });

  r.put('/v1/connector-actions/:id', {
    config: { entity: 'Connector Actions' },
    schema: {
      tags: atags, summary: 'Change an action of a connector of your company (admins); fields left out stay unchanged', params: IdParams,
      body: Type.Object({
        name: Type.Optional(actionFields.name), method: Type.Optional(actionFields.method),
        short_description: Type.Optional(actionFields.short_description), input_schema: Type.Optional(actionFields.input_schema),
      }, { additionalProperties: false }),
      response: { 200: ConnectorActionSchema, ...problemResponses },
    },
  }, (req) => connectors.updateAction(actorOf(req), req.params.id, req.body));

  r.delete('/v1/connector-actions/:id', {
    config: { entity: 'Connector Actions' },
    schema: { tags: atags, summary: 'Delete an action of a connector of your company (admins)', params: IdParams, response: { 204: Type.Null(), ...problemResponses } },
  }, async (req, reply) => {
    await connectors.deleteAction(actorOf(req), req.params.id);
    return reply.code(204).send(null);
  });
}
