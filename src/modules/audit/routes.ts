import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { actorOf } from '../../http/auth.ts';
import { ListQuery, pageSchema } from '../../http/pagination.ts';
import { Nullable, Timestamp, Uuid, problemResponses } from '../../http/schemas.ts';
import { requireAdmin } from '../access/gate.ts';
import type { AuditService } from './service.ts';

const AuditEvent = Type.Object({
  id: Uuid, action: Type.String(), actor_user_id: Nullable(Type.String()), credential_kind: Type.String(),
  credential_id: Nullable(Type.String()), ip: Nullable(Type.String()), request_id: Nullable(Type.String()),
  target_type: Nullable(Type.String()), target_id: Nullable(Type.String()),
  details: Type.Record(Type.String(), Type.Unknown()), created_at: Timestamp,
});

export function auditRoutes(app: FastifyInstance, audit: AuditService): void {
  app.withTypeProvider<TypeBoxTypeProvider>().get('/v1/audit-events', {
    config: { entity: 'Audit Events' },
    schema: { tags: ['Audit'], summary: 'The company\'s audit log (admins)', querystring: ListQuery, response: { 200: pageSchema(AuditEvent), ...problemResponses } },
  }, (req) => {
    requireAdmin(req.principal!, 'read the audit log');
    return audit.list(actorOf(req).principal.companyId, req.query);
  });
}
