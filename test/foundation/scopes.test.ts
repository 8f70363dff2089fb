// The seed's section 5.1 table, written out literally (not derived from src), checked
// against the gate for every scope x level x entity x operation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ENTITIES, OPERATIONS, parseScope, grantAllows, grantCovers, VALID_SCOPES, type Entity, type Operation } from '../../src/modules/access/scopes.ts';

const SEED: Record<string, { full: string[]; readOnly: string[] }> = {
  automation: { full: ['Flows', 'Flow Runs', 'Flow Run Steps', 'Run Flows', 'Webhook Runs'], readOnly: ['Connector Auths', 'Env Variables', 'File Uploads'] },
  company: { full: ['Env Variables', 'File Uploads', 'Teams', 'Users', 'Audit Events'], readOnly: [] },
  connector_auth: { full: ['Connector Auths'], readOnly: [] },
  connectors: { full: ['Connectors', 'Connector Actions'], readOnly: [] },
  dashboard: { full: ['Dashboards', 'Data Sources', 'Forecasts', 'Insights', 'Transforms'], readOnly: [] },
  embed: { full: ['Embeds'], readOnly: [] },
};
const LEVEL_OPS: Record<string, Operation[]> = {
  '': ['create', 'read', 'update', 'delete'],
  manage: ['create', 'read', 'update'],
  view: ['read'],
};

function expected(scope: string, level: string, entity: string, op: Operation): boolean {
  const def = SEED[scope];
  if (def.readOnly.includes(entity)) return op === 'read';
  if (!def.full.includes(entity)) return false;
  return LEVEL_OPS[level].includes(op);
}

test('every scope x level x entity x operation matches the seed table', () => {
  let checked = 0;
  for (const scope of Object.keys(SEED)) {
    for (const level of Object.keys(LEVEL_OPS)) {
      const grant = parseScope(level ? `${scope}:${level}` : scope);
      assert.ok(grant, `${scope}:${level} parses`);
      for (const entity of ENTITIES) {
        for (const op of OPERATIONS) {
          assert.equal(grantAllows(grant, entity as Entity, op), expected(scope, level, entity, op), `${scope}${level ? ':' + level : ''} ${op} ${entity}`);
          checked++;
        }
      }
    }
  }
  assert.equal(checked, 6 * 3 * ENTITIES.length * 4);
});

test('automation:webhook_run only triggers webhook flows', () => {
  const g = parseScope('automation:webhook_run')!;
  for (const entity of ENTITIES) for (const op of OPERATIONS) {
    assert.equal(grantAllows(g, entity as Entity, op), entity === 'Webhook Runs' && op === 'create', `${op} ${entity}`);
  }
});

test('scope strings: valid list and unknown ones refused', () => {
  assert.equal(VALID_SCOPES.length, 19);
  for (const bad of ['', 'admin', 'automation:edit', 'company:view:x', 'connector_auth:', 'Connector_Auth', 'embed:webhook_run']) {
    assert.equal(parseScope(bad), null, bad);
  }
});

test('no-escalation coverage: same scope, same or lower level', () => {
  const c = (held: string, wanted: string) => grantCovers(parseScope(held)!, parseScope(wanted)!);
  assert.ok(c('connector_auth', 'connector_auth:view'));
  assert.ok(c('connector_auth:manage', 'connector_auth:manage'));
  assert.ok(!c('connector_auth:view', 'connector_auth:manage'));
  assert.ok(!c('connector_auth:manage', 'connector_auth'));
  assert.ok(!c('company', 'connector_auth:view'));
  assert.ok(c('automation', 'automation:webhook_run'));
  assert.ok(c('automation:manage', 'automation:webhook_run'));
  assert.ok(!c('automation:view', 'automation:webhook_run'));
  assert.ok(!c('automation:webhook_run', 'automation:view'));
});
