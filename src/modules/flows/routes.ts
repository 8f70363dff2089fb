// Routes of flows ("Flows"), starting runs ("Run Flows", and the webhook: "Webhook Runs"),
// runs ("Flow Runs") and their steps ("Flow Run Steps").
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { actorOf } from '../../http/auth.ts';
import { AppError, badRequest, notFound } from '../../http/errors.ts';
import { ListQuery, pageSchema } from '../../http/pagination.ts';
import { IdParams, Nullable, Timestamp, Uuid, problemResponses } from '../../http/schemas.ts';
import type { Config } from '../../config.ts';
import { FLOW_STATUSES, MAX_STEPS, type FlowsService } from './service.ts';
import { triggerRequest, type RunsService } from './runs.ts';
import type { FlowRow } from './tables.ts';

export const MAX_PREFER_WAIT_SECONDS = 60;
const MAX_QUERY_PARAMS = 100;

const Status = Type.Enum([...FLOW_STATUSES]);
const Step = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 64, description: 'Unique in the flow; later steps read its output as steps.<name>.output' }),
  connector_id: Uuid,
  action: Type.String({ minLength: 1, maxLength: 64, description: 'An action name of the connector, e.g. upload_file' }),
  connector_auth_id: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 2048, description: 'A uuid4, or a template that renders one, e.g. {{ request.query.customer_auth_id }}; null or absent: no stored credential (HTTP only)' }))),
  input: Type.Optional(Type.Record(Type.String({ maxLength: 200 }), Type.Unknown(), { description: 'Action input; string values may be templates' })),
}, { additionalProperties: false });

const FlowSchema = Type.Object({
  id: Uuid,
  name: Type.String(),
  status: Status,
  steps: Type.Array(Type.Object({
    name: Type.String(), connector_id: Uuid, action: Type.String(), connector_auth_id: Nullable(Type.String()),
    input: Type.Record(Type.String(), Type.Unknown()),
  })),
  webhook_token_required: Type.Boolean(),
  webhook_token_hint: Type.String(),
  webhook_url: Type.String(),
  owner_user_id: Uuid,
  created_at: Timestamp,
  updated_at: Timestamp,
});
const FlowWithToken = Type.Object({ ...FlowSchema.properties, webhook_token: Type.String({ description: 'Shown in this response only' }) });
const TokenSchema = Type.Object({ webhook_token: Type.String(), webhook_token_hint: Type.String(), webhook_url: Type.String() });

const RunError = Nullable(Type.Object({ code: Type.String(), message: Type.String(), step: Nullable(Type.String()) }));
const RunSchema = Type.Object({
  id: Uuid, flow_id: Uuid, status: Type.Enum(['queued', 'running', 'success', 'error']), trigger: Type.String(),
  triggered_by_user_id: Nullable(Uuid), attempts: Type.Integer(), error: RunError,
  created_at: Timestamp, started_at: Nullable(Timestamp), finished_at: Nullable(Timestamp), updated_at: Timestamp,
});
const Accepted = Type.Object({ run_id: Uuid, status: Type.Literal('queued') });
const StepSchema = Type.Object({
  id: Uuid, run_id: Uuid, position: Type.Integer(), name: Type.String(), connector_id: Uuid, action: Type.String(),
  connector_auth_id: Nullable(Type.String()), status: Type.Enum(['running', 'success', 'error']),
  input: Type.Unknown(), output: Type.Unknown(), error: Nullable(Type.Object({ code: Type.String(), message: Type.String() })),
  started_at: Timestamp, finished_at: Nullable(Timestamp), duration_ms: Nullable(Type.Integer()),
});

const FlowBody = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  status: Status,
  steps: Type.Array(Step, { maxItems: MAX_STEPS }),
  webhook_token_required: Type.Boolean(),
};

const startResponses = { 200: RunSchema, 202: Accepted, ...problemResponses, 409: Type.Ref('Problem'), 429: Type.Ref('Problem') };

/** `Prefer: wait=N` (RFC 7240), capped at 60 seconds; null when absent. */
export function preferWait(header: string | string[] | undefined): number | null {
  const text = Array.isArray(header) ? header.join(',') : header ?? '';
  const m = /(?:^|[,;\s])wait\s*=\s*"?(\d{1,6})"?/i.exec(text);
  return m ? Math.min(Number(m[1]), MAX_PREFER_WAIT_SECONDS) : null;
}

function checkQuery(query: unknown): void {
  const n = Object.keys((query ?? {}) as object).length;
  if (n > MAX_QUERY_PARAMS) throw badRequest('too_many_query_parameters', `At most ${MAX_QUERY_PARAMS} query parameters.`, [{ field: 'querystring', message: `at most ${MAX_QUERY_PARAMS} parameters` }]);
}

const invalidWebhookToken = () => new AppError(401, 'invalid_webhook_token', 'The webhook token is not valid for this flow.', {
  headers: { 'www-authenticate': 'Bearer realm="flowgate", error="invalid_token"' },
});
const webhookCredentialsRequired = () => new AppError(401, 'missing_credentials',
  'This webhook needs the flow\'s webhook token (header X-Webhook-Token) or a token with the automation or automation:webhook_run scope.', {
    headers: { 'www-authenticate': 'Bearer realm="flowgate"' },
  });

export async function flowRoutes(app: FastifyInstance, deps: { flows: FlowsService; runs: RunsService; config: Config }): Promise<void> {
  const { flows, runs, config } = deps;
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  /** Accepts a run and answers 202, or 200 with the finished run under `Prefer: wait`. */
  async function start(req: FastifyRequest, reply: FastifyReply, flow: FlowRow, trigger: 'webhook' | 'api', by: string | null) {
    checkQuery(req.query);
    const run = await runs.accept(flow, trigger, by, triggerRequest(req.query, req.body, req.headers));
    reply.header('location', `/v1/flow-runs/${run.id}`).header('vary', 'Prefer');
    const wait = preferWait(req.headers.prefer);
    if (wait !== null) {
      reply.header('preference-applied', `wait=${wait}`);
      const done = await runs.waitFor(flow.company_id, run.id, wait * 1000);
      if (done) return reply.code(200).send(done);
    }
    return reply.code(202).send({ run_id: run.id, status: 'queued' as const });
  }

  // ---- flows ----
  const ftags = ['Flows'];
  r.get('/v1/flows', {
    config: { entity: 'Flows' },
    schema: { tags: ftags, summary: 'List flows (filter: name, status, owner_user_id, webhook_token_required, created_at, updated_at)', querystring: ListQuery, response: { 200: pageSchema(FlowSchema), ...problemResponses } },
  }, (req) => flows.list(actorOf(req), req.query));

  r.post('/v1/flows', {
    config: { entity: 'Flows' },
    schema: {
      tags: ftags, summary: 'Create a flow (you become its owner); the response shows the webhook token once',
      body: Type.Object({
        name: FlowBody.name, status: Type.Optional(FlowBody.status), steps: Type.Optional(FlowBody.steps),
        webhook_token_required: Type.Optional(FlowBody.webhook_token_required),
      }, { additionalProperties: false }),
      response: { 201: FlowWithToken, ...problemResponses },
    },
  }, async (req, reply) => {
    const flow = await flows.create(actorOf(req), req.body);
    return reply.code(201).header('location', `/v1/flows/${flow.id}`).header('cache-control', 'no-store').send(flow);
  });

  r.get('/v1/flows/:id', {
    config: { entity: 'Flows' },
    schema: { tags: ftags, summary: 'Get a flow', params: IdParams, response: { 200: FlowSchema, ...problemResponses } },
  }, (req) => flows.get(actorOf(req), req.params.id));

  r.put('/v1/flows/:id', {
    config: { entity: 'Flows' },
    schema: {
      tags: ftags, summary: 'Change a flow (its owner or an admin); fields left out stay unchanged', params: IdParams,
      body: Type.Object({
        name: Type.Optional(FlowBody.name), status: Type.Optional(FlowBody.status), steps: Type.Optional(FlowBody.steps),
        webhook_token_required: Type.Optional(FlowBody.webhook_token_required),
      }, { additionalProperties: false }),
      response: { 200: FlowSchema, ...problemResponses },
    },
  }, (req) => flows.update(actorOf(req), req.params.id, req.body));

  r.delete('/v1/flows/:id', {
    config: { entity: 'Flows' },
    schema: { tags: ftags, summary: 'Delete a flow with its runs (its owner or an admin)', params: IdParams, response: { 204: Type.Null(), ...problemResponses } },
  }, async (req, reply) => {
    await flows.delete(actorOf(req), req.params.id);
    return reply.code(204).send(null);
  });

  r.post('/v1/flows/:id/webhook-token', {
    config: { entity: 'Flows', operation: 'update' },
    schema: { tags: ftags, summary: 'Regenerate the webhook token (the old one stops working at once)', params: IdParams, response: { 200: TokenSchema, ...problemResponses } },
  }, async (req, reply) => {
    const t = await flows.regenerateWebhookToken(actorOf(req), req.params.id);
    return reply.header('cache-control', 'no-store').send(t);
  });

  r.post('/v1/flows/:id/run', {
    config: { entity: 'Run Flows' },
    schema: {
      tags: ftags,
      summary: 'Start a run: query parameters reach the steps as request.query, the JSON body as request.body; Prefer: wait=<s> (max 60) answers 200 with the finished run',
      params: IdParams, response: startResponses,
    },
  }, async (req, reply) => {
    const p = req.principal!;
    const flow = await flows.row(p.companyId, req.params.id);
    if (!flow) throw notFound('flow');
    return start(req, reply, flow, 'api', p.userId);
  });

  // ---- the webhook: rate-limited per client IP, in its own scope ----
  const webhook = async (scope: FastifyInstance) => {
    const windowMs = config.webhookRateWindowSeconds * 1000;
    await scope.register(rateLimit, {
      global: false,
      max: config.webhookRateLimit,
      timeWindow: windowMs,
      keyGenerator: (req) => req.ip,
      errorResponseBuilder: (_req, ctx) => {
        const retry = Math.max(1, Math.ceil(ctx.ttl / 1000));
        return new AppError(429, 'rate_limited', `Too many webhook calls from your address: at most ${ctx.max} per ${config.webhookRateWindowSeconds} seconds; retry in ${retry} seconds.`, {
          headers: { 'retry-after': String(retry) },
        });
      },
    });
    scope.withTypeProvider<TypeBoxTypeProvider>().post('/v1/flow-webhook/:flow_id', {
      config: { entity: 'Webhook Runs', auth: 'optional', rateLimit: { max: config.webhookRateLimit, timeWindow: windowMs } },
      schema: {
        tags: ftags,
        summary: 'Start a white-label run: ?<name>=<connector auth uuid4>&... reach the steps as request.query.<name>, the JSON body as request.body. ' +
          'Credential: the flow\'s webhook token (X-Webhook-Token header, Bearer, or ?webhook_token=), or a PAT/OAuth token with automation or automation:webhook_run; none when the flow does not require one.',
        params: Type.Object({ flow_id: Uuid }, { additionalProperties: false }),
        response: startResponses,
      },
    }, async (req, reply) => {
      const flowId = req.params.flow_id;
      const p = req.principal;
      let flow: FlowRow | undefined;
      let by: string | null = null;
      if (p && p.kind === 'webhook_token') {
        if (p.credentialId !== flowId) throw invalidWebhookToken();
        flow = await flows.flowForWebhook(flowId);
        if (!flow) throw invalidWebhookToken();
      } else if (p) {
        flow = await flows.row(p.companyId, flowId);
        if (!flow) throw notFound('flow');
        by = p.userId;
      } else {
        const header = req.headers['x-webhook-token'];
        const fromQuery = (req.query as Record<string, unknown>)?.webhook_token;
        const token = typeof header === 'string' ? header.trim() : typeof fromQuery === 'string' ? fromQuery : null;
        flow = await flows.flowForWebhook(flowId);
        if (token) {
          if (!flow || !flows.webhookTokenMatches(flow, token)) throw invalidWebhookToken();
        } else if (!flow || flow.webhook_token_required === 1) {
          // An unknown flow answers like a protected one: no oracle for flow ids.
          throw webhookCredentialsRequired();
        }
      }
      return start(req, reply, flow, 'webhook', by);
    });
  };

  // ---- runs and steps ----
  const rtags = ['Flow runs'];
  r.get('/v1/flow-runs', {
    config: { entity: 'Flow Runs' },
    schema: { tags: rtags, summary: 'List runs (filter: flow_id, status, trigger, created_at, started_at, finished_at)', querystring: ListQuery, response: { 200: pageSchema(RunSchema), ...problemResponses } },
  }, (req) => runs.list(actorOf(req), req.query));

  r.get('/v1/flow-runs/:id', {
    config: { entity: 'Flow Runs' },
    schema: { tags: rtags, summary: 'Get a run', params: IdParams, response: { 200: RunSchema, ...problemResponses } },
  }, (req) => runs.get(actorOf(req), req.params.id));

  r.get('/v1/flow-runs/:id/steps', {
    config: { entity: 'Flow Run Steps' },
    schema: { tags: rtags, summary: 'The steps of a run: rendered input, output, error and timings (secrets shown as ***)', params: IdParams, response: { 200: Type.Object({ data: Type.Array(StepSchema), next_cursor: Type.Null() }), ...problemResponses } },
  }, (req) => runs.steps(actorOf(req), req.params.id));

  await app.register(webhook);
}
