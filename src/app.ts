// Builds the Fastify app from the modules. Routes parse and answer; services decide.
import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { AppContext } from './context.ts';
import { registerErrorHandling } from './http/errors.ts';
import { registerAuth, type Authenticators } from './http/auth.ts';
import { loggerOptions, registerObservability, requestIdOptions } from './http/observability.ts';
import { Problem, OPTIONAL_BODY } from './http/schemas.ts';
import { ping } from './db/index.ts';
import { identityRoutes } from './modules/identity/routes.ts';
import { tokenRoutes } from './modules/tokens/routes.ts';
import { auditRoutes } from './modules/audit/routes.ts';
import { PAT_PREFIX } from './modules/tokens/service.ts';
import { modules } from './modules/index.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export interface BuildOptions {
  /** Where log lines go (tests capture them); stdout when absent. */
  logStream?: NodeJS.WritableStream;
}

function validators() {
  // Bodies are strict: no coercion ("1" is not 1) and unknown fields are errors, not dropped.
  // Query strings and paths are text by nature, so they are coerced.
  const base = { allErrors: true, removeAdditional: false, useDefaults: true, strict: false } as const;
  const body = addFormats(new Ajv({ ...base, coerceTypes: false }));
  const text = addFormats(new Ajv({ ...base, coerceTypes: 'array' }));
  return ({ schema, httpPart }: { schema: Record<string, unknown>; httpPart?: string }) => {
    const validate = (httpPart === 'body' ? body : text).compile(schema);
    if (httpPart !== 'body' || !schema[OPTIONAL_BODY]) return validate;
    // A body marked optional may be left out entirely (e.g. regenerate with defaults).
    const optional = (data: unknown) => {
      if (data === undefined || data === null) return true;
      const ok = validate(data);
      optional.errors = validate.errors;
      return ok;
    };
    optional.errors = null as typeof validate.errors;
    return optional;
  };
}

export async function buildApp(ctx: AppContext, opts: BuildOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: loggerOptions(ctx.config.logLevel, opts.logStream),
    ...requestIdOptions(),
    bodyLimit: 1024 * 1024,
    trustProxy: false,
    routerOptions: { ignoreTrailingSlash: true },
    return503OnClosing: true,
  });
  app.setValidatorCompiler(validators());
  // The API speaks JSON only; Fastify's default text/plain parser would turn bodies into strings.
  app.removeContentTypeParser('text/plain');
  registerErrorHandling(app);
  registerObservability(app);
  app.addSchema(Problem);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'flowgate', version: '0.1.0', description: 'Automation Platform API: personal access tokens, OAuth 2.0, connector auths, white-label flows.' },
      servers: [{ url: ctx.config.baseUrl }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'A personal access token (fgp_...) or an OAuth 2.0 access token' },
          basic: { type: 'http', scheme: 'basic', description: 'User name: the e-mail of the token owner; password: a personal access token' },
        },
      },
      security: [{ bearer: [] }, { basic: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  const auth: Authenticators = {
    patPrefix: PAT_PREFIX,
    pat: (t) => ctx.services.tokens.authenticate(t),
  };
  const bearers = modules.map((m) => m.bearer?.(ctx)).filter((b): b is NonNullable<typeof b> => Boolean(b));
  if (bearers.length) {
    auth.oauth = async (t) => {
      for (const b of bearers) {
        const p = await b(t);
        if (p) return p;
      }
      return null;
    };
  }
  registerAuth(app, auth);

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    try {
      await ping(ctx.database.db);
      return { status: 'ready' };
    } catch {
      return reply.code(503).send({ status: 'unavailable', reason: 'database unreachable' });
    }
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  const s = ctx.services;
  identityRoutes(app, s.users, s.teams);
  tokenRoutes(app, s.tokens);
  auditRoutes(app, s.audit);
  for (const m of modules) await m.routes?.(app, ctx);

  return app;
}
