// The one place that parses credentials. Bearer PAT | Bearer OAuth access token |
// Basic e-mail:PAT become a Principal; then the route's declared entity is checked
// against the principal's scopes before any handler runs.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from './errors.ts';
import type { Actor, Principal } from '../modules/access/principal.ts';
import { checkScope } from '../modules/access/gate.ts';
import { methodOperation, ENTITIES, type Entity, type Operation } from '../modules/access/scopes.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The entity of the seed's scope table this route acts on. Every /v1 route must say. */
    entity?: Entity;
    /** Overrides the operation implied by the HTTP method. */
    operation?: Operation;
    /** 'optional': the route authenticates by other means when no Authorization header is sent. */
    auth?: 'required' | 'optional' | 'none';
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}

export interface Authenticators {
  pat(token: string): Promise<Principal | null>;
  /** OAuth access tokens; absent until the provider is mounted. */
  oauth?(token: string): Promise<Principal | null>;
  patPrefix: string;
}

const REALM = 'Bearer realm="flowgate"';
const invalidToken = () => new AppError(401, 'invalid_token', 'The credential is unknown, expired or revoked.', {
  headers: { 'www-authenticate': `${REALM}, error="invalid_token"` },
});
const invalidRequest = (detail: string) => new AppError(400, 'invalid_request', detail, {
  headers: { 'www-authenticate': `${REALM}, error="invalid_request"` },
});

/** Names that carry a bearer token outside the header (RFC 6750 2.3); we refuse them. */
const QUERY_TOKEN_NAMES = ['access_token', 'token', 'private_token'];

export function actorOf(request: FastifyRequest): Actor {
  if (!request.principal) throw new Error('actorOf called on an unauthenticated request');
  return { principal: request.principal, ip: request.ip ?? null, requestId: request.id };
}

export async function resolveCredentials(request: FastifyRequest, auth: Authenticators): Promise<Principal | null> {
  const query = (request.query ?? {}) as Record<string, unknown>;
  const header = request.headers.authorization;
  if (QUERY_TOKEN_NAMES.some((n) => n in query) && request.routeOptions.config.auth !== 'optional') {
    throw invalidRequest('Send credentials in the Authorization header, not in the query string.');
  }
  if (header === undefined) return null;
  if (Array.isArray(header)) throw invalidRequest('Send exactly one Authorization header.');
  const m = /^([A-Za-z]+) +([^\s]+)\s*$/.exec(header);
  if (!m) throw invalidRequest('The Authorization header is malformed; expected "Bearer <token>".');
  const scheme = m[1].toLowerCase();
  const value = m[2];
  if (scheme === 'bearer') {
    const principal = value.startsWith(auth.patPrefix + '_') ? await auth.pat(value) : await auth.oauth?.(value) ?? null;
    if (!principal) throw invalidToken();
    return principal;
  }
  if (scheme === 'basic') {
    let decoded: string;
    try {
      decoded = Buffer.from(value, 'base64').toString('utf8');
    } catch {
      throw invalidRequest('The Basic credentials are not valid base64.');
    }
    const i = decoded.indexOf(':');
    if (i < 0) throw invalidRequest('Basic credentials must be <e-mail>:<personal access token>.');
    const email = decoded.slice(0, i).trim().toLowerCase();
    const secret = decoded.slice(i + 1);
    // Only a PAT is accepted as the Basic password (never the user's login password), and
    // the user name must be the e-mail of the token's owner.
    const principal = await auth.pat(secret);
    if (!principal || principal.email.toLowerCase() !== email) throw invalidToken();
    return principal;
  }
  throw new AppError(401, 'unsupported_auth_scheme', 'Use "Authorization: Bearer <token>" or Basic with e-mail and personal access token.', {
    headers: { 'www-authenticate': REALM },
  });
}

export function registerAuth(app: FastifyInstance, auth: Authenticators): void {
  app.decorateRequest('principal', null);

  // A /v1 route without an entity does not start: the gate must know what every route touches.
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/v1')) return;
    const cfg = (route.config ?? {}) as { entity?: Entity; auth?: string };
    if (cfg.auth === 'none') return;
    if (!cfg.entity || !ENTITIES.includes(cfg.entity)) {
      throw new Error(`route ${route.method} ${route.url} declares no entity of the scope table`);
    }
  });

  app.addHook('onRequest', async (request) => {
    const cfg = request.routeOptions.config;
    if (!cfg?.entity || cfg.auth === 'none') return;
    request.principal = await resolveCredentials(request, auth);
    if (!request.principal) {
      if (cfg.auth === 'optional') return;
      throw new AppError(401, 'missing_credentials', 'Authentication is required: send "Authorization: Bearer <token>".', {
        headers: { 'www-authenticate': REALM },
      });
    }
    checkScope(request.principal, cfg.entity, cfg.operation ?? methodOperation(request.method));
  });
}
