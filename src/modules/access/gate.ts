// The one permission gate. Routes declare their entity; the auth hook calls checkScope
// before any handler runs; services call requireAdmin / object rules for what depends on
// the object itself. Effective right = token scopes AND what the user may do.
import { AppError } from '../../http/errors.ts';
import type { Principal } from './principal.ts';
import { scopesAllow, scopesThatAllow, SCOPE_FREE_ENTITIES, type Entity, type Operation } from './scopes.ts';

export function scopeAllows(principal: Principal, entity: Entity, operation: Operation): boolean {
  if (SCOPE_FREE_ENTITIES.has(entity) || principal.scopes === null) return true;
  return scopesAllow(principal.scopes, entity, operation);
}

export function checkScope(principal: Principal, entity: Entity, operation: Operation): void {
  if (scopeAllows(principal, entity, operation)) return;
  const needed = scopesThatAllow(entity, operation);
  throw new AppError(403, 'insufficient_scope',
    `This credential's scopes do not allow ${operation} on ${entity}; one of these scopes is needed: ${needed.join(', ')}.`, {
      headers: { 'www-authenticate': `Bearer realm="flowgate", error="insufficient_scope", scope="${needed.join(' ')}"` },
      extra: { required_scopes: needed, entity, operation },
    });
}

export function isAdmin(principal: Principal): boolean {
  return principal.role === 'admin';
}

export function requireAdmin(principal: Principal, action: string): void {
  if (!isAdmin(principal)) throw new AppError(403, 'admin_required', `Only company admins may ${action}.`);
}
