// The full scope matrix over the endpoints of this module: for every scope string, every
// endpoint either passes the gate or answers 403 insufficient_scope, as the seed's table
// (written out here, independent of src) says. Object rules (admin role) are not in play:
// every token belongs to an admin.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app.ts';

const SCOPES = ['automation', 'company', 'connector_auth', 'connectors', 'dashboard', 'embed'];
const LEVELS = ['', ':manage', ':view'];
// entity -> scopes that cover it fully; read-only coverage listed separately.
const FULL: Record<string, string[]> = { Users: ['company'], Teams: ['company'], 'Audit Events': ['company'] };
const READ_ONLY: Record<string, string[]> = {};
const OPS_OF_LEVEL: Record<string, string[]> = { '': ['create', 'read', 'update', 'delete'], ':manage': ['create', 'read', 'update'], ':view': ['read'] };

function allowed(scope: string, entity: string, op: string): boolean {
  if (scope === 'automation:webhook_run') return false;
  const [name, ext] = scope.split(':');
  if (READ_ONLY[entity]?.includes(name)) return op === 'read';
  if (!FULL[entity]?.includes(name)) return false;
  return OPS_OF_LEVEL[ext ? ':' + ext : ''].includes(op);
}

let t: TestApp;
let ids: { user: string; team: string };
before(async () => {
  t = await startTestApp();
  const team = (await t.call('POST', '/v1/teams', { body: { name: 'Matrix' } })).json();
  ids = { user: t.tenant.admin.id, team: team.id };
});
after(async () => { await t.close(); });

test('every scope x every endpoint: gate answers as the seed table says', async () => {
  const endpoints: Array<{ m: string; url: () => string; entity: string; op: string; body?: unknown }> = [
    { m: 'GET', url: () => '/v1/users', entity: 'Users', op: 'read' },
    { m: 'POST', url: () => '/v1/users', entity: 'Users', op: 'create', body: { email: 'x', name: '' } },
    { m: 'GET', url: () => `/v1/users/${ids.user}`, entity: 'Users', op: 'read' },
    { m: 'PUT', url: () => `/v1/users/${ids.user}`, entity: 'Users', op: 'update', body: {} },
    { m: 'DELETE', url: () => '/v1/users/00000000-0000-4000-8000-000000000000', entity: 'Users', op: 'delete' },
    { m: 'GET', url: () => '/v1/teams', entity: 'Teams', op: 'read' },
    { m: 'POST', url: () => '/v1/teams', entity: 'Teams', op: 'create', body: { name: '' } },
    { m: 'GET', url: () => `/v1/teams/${ids.team}`, entity: 'Teams', op: 'read' },
    { m: 'PUT', url: () => `/v1/teams/${ids.team}`, entity: 'Teams', op: 'update', body: {} },
    { m: 'DELETE', url: () => '/v1/teams/00000000-0000-4000-8000-000000000000', entity: 'Teams', op: 'delete' },
    { m: 'GET', url: () => '/v1/audit-events', entity: 'Audit Events', op: 'read' },
  ];
  const scopeStrings = [...SCOPES.flatMap((s) => LEVELS.map((l) => s + l)), 'automation:webhook_run'];
  let checks = 0;
  for (const scope of scopeStrings) {
    const u = await t.newUser(t.tenant.companyId, { role: 'admin', scopes: [scope] });
    for (const e of endpoints) {
      const res = await t.call(e.m, e.url(), { token: u.token, ...(e.body !== undefined ? { body: e.body } : {}) });
      const denied = res.statusCode === 403 && res.json().code === 'insufficient_scope';
      const expectAllowed = allowed(scope, e.entity, e.op);
      assert.equal(!denied, expectAllowed, `${scope} ${e.m} ${e.url()} -> ${res.statusCode} ${res.body.slice(0, 200)}`);
      if (denied) {
        assert.match(String(res.headers['www-authenticate']), /error="insufficient_scope", scope="[^"]*company/);
        assert.ok(res.json().required_scopes.includes('company'));
      }
      checks++;
    }
  }
  assert.equal(checks, 19 * endpoints.length);
});

test('personal access token endpoints need no scope but authentication', async () => {
  const u = await t.newUser(t.tenant.companyId, { scopes: ['embed:view'] });
  assert.equal((await t.call('GET', '/v1/personal-access-tokens', { token: u.token })).statusCode, 200);
  assert.equal((await t.call('GET', '/v1/personal-access-tokens', { token: null })).statusCode, 401);
});
