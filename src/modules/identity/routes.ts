import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { actorOf } from '../../http/auth.ts';
import { ListQuery, pageSchema } from '../../http/pagination.ts';
import { IdParams, Timestamp, Uuid, problemResponses } from '../../http/schemas.ts';
import type { UsersService } from './users.ts';
import type { TeamsService } from './teams.ts';

const Email = Type.String({ format: 'email', maxLength: 254 });
const Name = Type.String({ minLength: 1, maxLength: 200 });
const Role = Type.Union([Type.Literal('admin'), Type.Literal('member')]);
const Password = Type.String({ minLength: 8, maxLength: 256 });

const User = Type.Object({
  id: Uuid, email: Type.String(), name: Type.String(), role: Role, disabled: Type.Boolean(),
  created_at: Timestamp, updated_at: Timestamp,
});
const Team = Type.Object({
  id: Uuid, name: Type.String(), member_ids: Type.Array(Uuid), created_at: Timestamp, updated_at: Timestamp,
});

export function identityRoutes(app: FastifyInstance, users: UsersService, teams: TeamsService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tagsU = ['Users'];
  const tagsT = ['Teams'];

  r.get('/v1/users', {
    config: { entity: 'Users' },
    schema: { tags: tagsU, summary: 'List users of your company', querystring: ListQuery, response: { 200: pageSchema(User), ...problemResponses } },
  }, (req) => users.list(actorOf(req), req.query));

  r.post('/v1/users', {
    config: { entity: 'Users' },
    schema: {
      tags: tagsU, summary: 'Create a user (admins)',
      body: Type.Object({ email: Email, name: Name, role: Type.Optional(Role), password: Type.Optional(Password) }, { additionalProperties: false }),
      response: { 201: User, ...problemResponses },
    },
  }, async (req, reply) => {
    const user = await users.create(actorOf(req), req.principal!.companyId, req.body);
    return reply.code(201).header('location', `/v1/users/${user.id}`).send(user);
  });

  r.get('/v1/users/:id', {
    config: { entity: 'Users' },
    schema: { tags: tagsU, summary: 'Get a user', params: IdParams, response: { 200: User, ...problemResponses } },
  }, (req) => users.get(actorOf(req), req.params.id));

  r.put('/v1/users/:id', {
    config: { entity: 'Users' },
    schema: {
      tags: tagsU, summary: 'Change a user (admins); fields left out stay unchanged', params: IdParams,
      body: Type.Object({
        email: Type.Optional(Email), name: Type.Optional(Name), role: Type.Optional(Role),
        disabled: Type.Optional(Type.Boolean()), password: Type.Optional(Password),
      }, { additionalProperties: false }),
      response: { 200: User, ...problemResponses },
    },
  }, (req) => users.update(actorOf(req), req.params.id, req.body));

  r.delete('/v1/users/:id', {
    config: { entity: 'Users' },
    schema: { tags: tagsU, summary: 'Delete a user (admins)', params: IdParams, response: { 204: Type.Null(), ...problemResponses } },
  }, async (req, reply) => {
    await users.delete(actorOf(req), req.params.id);
    return reply.code(204).send(null);
  });

  const TeamBody = {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    member_ids: Type.Array(Uuid, { maxItems: 1000 }),
  };
  r.get('/v1/teams', {
    config: { entity: 'Teams' },
    schema: { tags: tagsT, summary: 'List teams', querystring: ListQuery, response: { 200: pageSchema(Team), ...problemResponses } },
  }, (req) => teams.list(actorOf(req), req.query));

  r.post('/v1/teams', {
    config: { entity: 'Teams' },
    schema: {
      tags: tagsT, summary: 'Create a team (admins)',
      body: Type.Object({ name: TeamBody.name, member_ids: Type.Optional(TeamBody.member_ids) }, { additionalProperties: false }),
      response: { 201: Team, ...problemResponses },
    },
  }, async (req, reply) => {
    const team = await teams.create(actorOf(req), req.body);
    return reply.code(201).header('location', `/v1/teams/${team.id}`).send(team);
  });

  r.get('/v1/teams/:id', {
    config: { entity: 'Teams' },
    schema: { tags: tagsT, summary: 'Get a team', params: IdParams, response: { 200: Team, ...problemResponses } },
  }, (req) => teams.get(actorOf(req), req.params.id));

  r.put('/v1/teams/:id', {
    config: { entity: 'Teams' },
    schema: {
      tags: tagsT, summary: 'Change a team (admins); member_ids replaces the member list', params: IdParams,
      body: Type.Object({ name: Type.Optional(TeamBody.name), member_ids: Type.Optional(TeamBody.member_ids) }, { additionalProperties: false }),
      response: { 200: Team, ...problemResponses },
    },
  }, (req) => teams.update(actorOf(req), req.params.id, req.body));

  r.delete('/v1/teams/:id', {
    config: { entity: 'Teams' },
    schema: { tags: tagsT, summary: 'Delete a team (admins)', params: IdParams, response: { 204: Type.Null(), ...problemResponses } },
  }, async (req, reply) => {
    await teams.delete(actorOf(req), req.params.id);
    return reply.code(204).send(null);
  });
}
