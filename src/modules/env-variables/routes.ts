// Routes of environment variables (entity "Env Variables": scope company; automation reads).
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { actorOf } from '../../http/auth.ts';
import { ListQuery, pageSchema } from '../../http/pagination.ts';
import { IdParams, Nullable, Timestamp, Uuid, problemResponses } from '../../http/schemas.ts';
import { MAX_VALUE_LENGTH, type EnvVariablesService } from './service.ts';

const EnvVariableSchema = Type.Object({
  id: Uuid,
  name: Type.String(),
  value: Nullable(Type.String({ description: 'null for a secret variable (write-only)' })),
  value_set: Type.Boolean(),
  secret: Type.Boolean(),
  created_at: Timestamp,
  updated_at: Timestamp,
}, { additionalProperties: false });

const Name = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Z_][A-Z0-9_]{0,63}$', description: 'Upper-case letters, digits and _; used as env.NAME in templates' });
const Value = Type.String({ maxLength: MAX_VALUE_LENGTH });

export function envVariableRoutes(app: FastifyInstance, service: EnvVariablesService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['Environment variables'];
  const entity = 'Env Variables' as const;

  r.get('/v1/env-variables', {
    config: { entity },
    schema: { tags, summary: 'List environment variables (filter: name, secret, created_at, updated_at)', querystring: ListQuery, response: { 200: pageSchema(EnvVariableSchema), ...problemResponses } },
  }, (req) => service.list(actorOf(req), req.query));

  r.post('/v1/env-variables', {
    config: { entity },
    schema: {
      tags, summary: 'Create an environment variable (admins); a secret value is encrypted and never shown again',
      body: Type.Object({ name: Name, value: Value, secret: Type.Optional(Type.Boolean({ default: false })) }, { additionalProperties: false }),
      response: { 201: EnvVariableSchema, ...problemResponses },
    },
  }, async (req, reply) => {
    const v = await service.create(actorOf(req), req.body);
    return reply.code(201).header('location', `/v1/env-variables/${v.id}`).send(v);
  });

  r.get('/v1/env-variables/:id', {
    config: { entity },
    schema: { tags, summary: 'Get an environment variable', params: IdParams, response: { 200: EnvVariableSchema, ...problemResponses } },
  }, (req) => service.get(actorOf(req), req.params.id));

  r.put('/v1/env-variables/:id', {
    config: { entity },
    schema: {
      tags, summary: 'Change an environment variable (admins); fields left out stay unchanged', params: IdParams,
      body: Type.Object({ name: Type.Optional(Name), value: Type.Optional(Value), secret: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
      response: { 200: EnvVariableSchema, ...problemResponses },
    },
  }, (req) => service.update(actorOf(req), req.params.id, req.body));

  r.delete('/v1/env-variables/:id', {
    config: { entity },
    schema: { tags, summary: 'Delete an environment variable (admins)', params: IdParams, response: { 204: Type.Null(), ...problemResponses } },
  }, async (req, reply) => {
    await service.delete(actorOf(req), req.params.id);
    return reply.code(204).send(null);
  });
}
