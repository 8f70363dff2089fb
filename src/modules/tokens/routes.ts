import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { actorOf } from '../../http/auth.ts';
import { ListQuery, pageSchema } from '../../http/pagination.ts';
import { OPTIONAL_BODY, IdParams, Nullable, Timestamp, Uuid, problemResponses } from '../../http/schemas.ts';
import type { TokensService } from './service.ts';

const Expiration = Nullable(Type.Integer({ minimum: 1, maximum: 36500, description: 'Lifetime in days; null: never expires' }));
const Issued = Type.Object({
  id: Uuid,
  token: Type.String({ description: 'The token value. Shown in this response only.' }),
  expiration: Nullable(Timestamp), note: Type.String(), last_used: Type.Null(), scopes: Type.Array(Type.String()), created_at: Timestamp,
});
const TokenView = Type.Object({
  id: Uuid, user_id: Uuid, token_hint: Type.String(),
  state: Type.Union([Type.Literal('active'), Type.Literal('expired'), Type.Literal('revoked')]),
  expiration: Nullable(Timestamp), note: Type.String(), scopes: Type.Array(Type.String()),
  last_used: Nullable(Timestamp), created_at: Timestamp, revoked_at: Nullable(Timestamp),
});

export function tokenRoutes(app: FastifyInstance, tokens: TokensService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['Personal access tokens'];
  const entity = 'Personal Access Tokens' as const;

  r.post('/v1/personal-access-tokens', {
    config: { entity },
    schema: {
      tags, summary: 'Create a personal access token for yourself',
      body: Type.Object({
        expiration: Expiration,
        scopes: Type.Array(Type.String({ maxLength: 64 }), { minItems: 1, maxItems: 32 }),
        note: Type.String({ maxLength: 255 }),
      }, { additionalProperties: false }),
      response: { 201: Issued, ...problemResponses },
    },
  }, async (req, reply) => {
    const p = req.principal!;
    const issued = await tokens.create(actorOf(req), { companyId: p.companyId, userId: p.userId }, req.body);
    return reply.code(201).header('location', `/v1/personal-access-tokens/${issued.id}`).header('cache-control', 'no-store').send(issued);
  });

  r.post('/v1/personal-access-tokens/:id/regenerate', {
    config: { entity, operation: 'update' },
    schema: {
      tags, summary: 'Regenerate a token: a new value, the old one is refused from now on', params: IdParams,
      body: Type.Object({ expiration: Type.Optional(Expiration) }, { additionalProperties: false, [OPTIONAL_BODY]: true }),
      response: { 200: Issued, ...problemResponses },
    },
  }, async (req, reply) => {
    const issued = await tokens.regenerate(actorOf(req), req.params.id, req.body ?? {});
    return reply.header('cache-control', 'no-store').send(issued);
  });

  r.get('/v1/personal-access-tokens', {
    config: { entity },
    schema: { tags, summary: 'List tokens (yours; admins with company scope: the company\'s)', querystring: ListQuery, response: { 200: pageSchema(TokenView), ...problemResponses } },
  }, (req) => tokens.list(actorOf(req), req.query));

  r.get('/v1/personal-access-tokens/:id', {
    config: { entity },
    schema: { tags, summary: 'Get one token (never its value)', params: IdParams, response: { 200: TokenView, ...problemResponses } },
  }, (req) => tokens.get(actorOf(req), req.params.id));

  r.delete('/v1/personal-access-tokens/:id', {
    config: { entity },
    schema: { tags, summary: 'Revoke a token', params: IdParams, response: { 204: Type.Null(), ...problemResponses } },
  }, async (req, reply) => {
    await tokens.revoke(actorOf(req), req.principal!.companyId, req.params.id);
    return reply.code(204).send(null);
  });
}
