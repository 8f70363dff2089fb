// Logging, request ids and Prometheus metrics.
import crypto from 'node:crypto';
import { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import client from 'prom-client';

// Query parameters whose values are secrets; their values never reach a log line.
const SECRET_PARAMS = /^(access_token|token|refresh_token|client_secret|code|password|private_token|webhook_token|id_token_hint)$/i;

export function scrubUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const params = new URLSearchParams(url.slice(q + 1));
  for (const k of [...params.keys()]) if (SECRET_PARAMS.test(k)) params.set(k, '[redacted]');
  return url.slice(0, q + 1) + params.toString();
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Counts a request into the HTTP metrics. For handlers that answer on the raw response,
     * outside Fastify's reply (the OAuth provider), whose requests skip the onResponse hook.
     * `route` must be a pattern (bounded cardinality), never a raw URL.
     */
    recordRequest(method: string, route: string, status: number, seconds: number): void;
  }
}

export function loggerOptions(level: string, stream?: NodeJS.WritableStream): FastifyServerOptions['logger'] {
  return {
    level,
    ...(stream ? { stream } : {}),
    redact: {
      paths: [
        'req.headers.authorization', 'req.headers.cookie', 'req.headers["x-webhook-token"]',
        'headers.authorization', 'headers.cookie', '*.password', '*.auth_token', '*.auth_details', '*.client_secret',
        '*.refresh_token', '*.access_token', '*.token',
      ],
      censor: '[redacted]',
    },
    serializers: {
      req: (req: { method: string; url: string; ip?: string; socket?: { remoteAddress?: string } }) => ({
        method: req.method, url: scrubUrl(req.url), remote: req.ip ?? req.socket?.remoteAddress,
      }),
    },
  };
}

export function requestIdOptions(): Pick<FastifyServerOptions, 'genReqId' | 'logController'> {
  return {
    logController: new LogController({ requestIdLogLabel: 'request_id' }),
    genReqId: (req) => {
      const h = req.headers['x-request-id'];
      return typeof h === 'string' && REQUEST_ID.test(h) ? h : crypto.randomUUID();
    },
  };
}

export function registerObservability(app: FastifyInstance): client.Registry {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const requests = new client.Counter({
    name: 'flowgate_http_requests_total', help: 'HTTP requests by route and status',
    labelNames: ['method', 'route', 'status'], registers: [registry],
  });
  const latency = new client.Histogram({
    name: 'flowgate_http_request_duration_seconds', help: 'HTTP request latency by route',
    labelNames: ['method', 'route'], buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5], registers: [registry],
  });
  const record = (method: string, route: string, status: number, seconds: number) => {
    requests.inc({ method, route, status: String(status) });
    latency.observe({ method, route }, seconds);
  };
  app.decorate('recordRequest', record);
  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
  });
  app.addHook('onResponse', async (req, reply) => {
    // The route pattern, never the raw URL: ids must not explode label cardinality.
    record(req.method, req.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
  });
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    reply.type(registry.contentType);
    return registry.metrics();
  });
  return registry;
}
