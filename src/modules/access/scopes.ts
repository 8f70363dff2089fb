// The scope table of the seed (section 5.1), as data. This is the one place it lives.
export const OPERATIONS = ['create', 'read', 'update', 'delete'] as const;
export type Operation = (typeof OPERATIONS)[number];

export const ENTITIES = [
  'Flows', 'Flow Runs', 'Flow Run Steps', 'Run Flows', 'Webhook Runs',
  'Connector Auths', 'Env Variables', 'File Uploads', 'Teams', 'Users', 'Audit Events',
  'Connectors', 'Connector Actions',
  'Dashboards', 'Data Sources', 'Forecasts', 'Insights', 'Transforms',
  'Embeds',
  // Not covered by any scope: any authenticated principal may manage its own tokens,
  // within the no-escalation rule of the tokens service.
  'Personal Access Tokens',
] as const;
export type Entity = (typeof ENTITIES)[number];

/** Entities that need authentication but no scope. */
export const SCOPE_FREE_ENTITIES: ReadonlySet<Entity> = new Set<Entity>(['Personal Access Tokens']);

interface ScopeDef {
  /** Entities the scope's level applies to. */
  entities: Entity[];
  /** Entities the scope only ever reads, whatever its level. */
  readOnly: Entity[];
}

export const SCOPE_TABLE: Record<string, ScopeDef> = {
  // 'Webhook Runs' is the webhook entry of 'Run Flows' (POST /v1/flow-webhook/...), split out
  // so that automation:webhook_run can grant it alone.
  automation: {
    entities: ['Flows', 'Flow Runs', 'Flow Run Steps', 'Run Flows', 'Webhook Runs'],
    readOnly: ['Connector Auths', 'Env Variables', 'File Uploads'],
  },
  // 'Audit Events' (beyond the seed) is company administration; writes never exist for it.
  company: { entities: ['Env Variables', 'File Uploads', 'Teams', 'Users', 'Audit Events'], readOnly: [] },
  connector_auth: { entities: ['Connector Auths'], readOnly: [] },
  connectors: { entities: ['Connectors', 'Connector Actions'], readOnly: [] },
  dashboard: { entities: ['Dashboards', 'Data Sources', 'Forecasts', 'Insights', 'Transforms'], readOnly: [] },
  embed: { entities: ['Embeds'], readOnly: [] },
};

export const LEVELS = { full: ['create', 'read', 'update', 'delete'], manage: ['create', 'read', 'update'], view: ['read'] } as const;
export type Level = keyof typeof LEVELS;
const LEVEL_RANK: Record<Level, number> = { view: 1, manage: 2, full: 3 };

export interface ScopeGrant { scope: string; level: Level | 'webhook_run' }

/** Every scope string a token may carry, in a stable order. */
export const VALID_SCOPES: readonly string[] = [
  ...Object.keys(SCOPE_TABLE).flatMap((s) => [s, `${s}:manage`, `${s}:view`]),
  'automation:webhook_run',
];

export function parseScope(s: string): ScopeGrant | null {
  if (s === 'automation:webhook_run') return { scope: 'automation', level: 'webhook_run' };
  const [name, ext, ...rest] = s.split(':');
  if (rest.length || !name || !(name in SCOPE_TABLE)) return null;
  if (ext === undefined) return { scope: name, level: 'full' };
  if (ext === 'manage' || ext === 'view') return { scope: name, level: ext };
  return null;
}

export function formatScope(g: ScopeGrant): string {
  return g.level === 'full' ? g.scope : `${g.scope}:${g.level}`;
}

/** Does this one scope allow `operation` on `entity`? */
export function grantAllows(g: ScopeGrant, entity: Entity, operation: Operation): boolean {
  const def = SCOPE_TABLE[g.scope];
  if (!def) return false;
  if (g.level === 'webhook_run') return entity === 'Webhook Runs' && operation === 'create';
  if (def.readOnly.includes(entity)) return operation === 'read';
  if (!def.entities.includes(entity)) return false;
  return (LEVELS[g.level] as readonly Operation[]).includes(operation);
}

export function scopesAllow(grants: readonly ScopeGrant[], entity: Entity, operation: Operation): boolean {
  return grants.some((g) => grantAllows(g, entity, operation));
}

/** The narrowest scope strings that would allow the operation (for error messages). */
export function scopesThatAllow(entity: Entity, operation: Operation): string[] {
  return VALID_SCOPES.filter((s) => grantAllows(parseScope(s)!, entity, operation));
}

/** Is `wanted` no wider than `held` (same scope, same or lower level)? */
export function grantCovers(held: ScopeGrant, wanted: ScopeGrant): boolean {
  if (held.scope !== wanted.scope) return false;
  if (wanted.level === 'webhook_run') return held.level === 'webhook_run' || held.level === 'full' || held.level === 'manage';
  if (held.level === 'webhook_run') return false;
  return LEVEL_RANK[wanted.level] <= LEVEL_RANK[held.level];
}

export function methodOperation(method: string): Operation {
  switch (method) {
    case 'GET': case 'HEAD': return 'read';
    case 'POST': return 'create';
    case 'PUT': case 'PATCH': return 'update';
    case 'DELETE': return 'delete';
    default: return 'read';
  }
}
