// Object permissions (seed 5.3): visibility company | private | restricted x grants of each
// right (to a user, and to a team) x every kind of user (owner, admin, plain member, granted
// user, member of a granted team, member of another team) x every operation. The expected
// rights are written out here from the documented rule, independent of src.
// Invisible -> 404 (and absent from lists); visible without the right -> 403 forbidden.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, problem, type TestApp } from '../support/app.ts';
import { createAuth } from './_helpers.ts';
import { closedPort } from '../connectors/_helpers.ts';
import { HTTP_CONNECTOR_ID } from '../../src/modules/connectors/catalogue.ts';
import { ConnectorAuthResolveError } from '../../src/modules/connector-auths/service.ts';

type Right = 'read' | 'update' | 'delete' | 'manage';
type Who = 'owner' | 'admin' | 'member' | 'grantedUser' | 'teamMember' | 'otherTeamMember';
interface U { id: string; token: string }

let t: TestApp;
let port: number;
let users: Record<Who, U>;
let team: string;
let n = 0;

before(async () => {
  t = await startTestApp();
  port = await closedPort();
  const cid = t.tenant.companyId;
  users = {
    owner: await t.newUser(cid),
    admin: await t.newUser(cid, { role: 'admin' }),
    member: await t.newUser(cid),
    grantedUser: await t.newUser(cid),
    teamMember: await t.newUser(cid),
    otherTeamMember: await t.newUser(cid),
  };
  team = (await t.call('POST', '/v1/teams', { body: { name: 'Granted', member_ids: [users.teamMember.id] } })).json().id;
  await t.call('POST', '/v1/teams', { body: { name: 'Other', member_ids: [users.otherTeamMember.id] } });
});
after(async () => { await t.close(); });

function implied(r: Right): Right[] {
  if (r === 'manage') return ['read', 'update', 'delete', 'manage'];
  return r === 'read' ? ['read'] : ['read', r];
}

/** The documented rule, written out. */
function expectedRights(who: Who, visibility: string, grant: Right): Set<Right> {
  if (who === 'owner' || who === 'admin') return new Set(['read', 'update', 'delete', 'manage']);
  const out = new Set<Right>();
  if (visibility === 'company') out.add('read');
  if ((who === 'grantedUser' || who === 'teamMember') && visibility !== 'private') for (const r of implied(grant)) out.add(r);
  return out;
}

async function makeAuth(visibility: string, grant: Right): Promise<string> {
  const a = await createAuth(t, {
    connector_id: HTTP_CONNECTOR_ID, name: `v${++n}`, auth_type: 'basic_auth', username: 'u', password: 'pw-secret',
    api_endpoint: `http://127.0.0.1:${port}/`,
  }, users.owner.token);
  const grants = visibility === 'private' ? [] : [
    { grantee_type: 'user', grantee_id: users.grantedUser.id, rights: [grant] },
    { grantee_type: 'team', grantee_id: team, rights: [grant] },
  ];
  const res = await t.call('PUT', `/v1/connector-auths/${a.id}/permissions`, { token: users.owner.token, body: { visibility, grants } });
  assert.equal(res.statusCode, 200, res.body);
  return a.id;
}

function expectStatus(res: { statusCode: number; body: string; json(): any; headers: any }, allowed: boolean, visible: boolean, ok: number, what: string) {
  if (!visible) { problem(res as any, 404, 'not_found'); return; }
  if (allowed) assert.equal(res.statusCode, ok, `${what}: ${res.body}`);
  else {
    const p = problem(res as any, 403, 'forbidden');
    assert.ok(p.required_right, what);
  }
}

test('visibility x grant x user x operation', async () => {
  let checks = 0;
  for (const visibility of ['company', 'restricted', 'private']) {
    for (const grant of ['read', 'update', 'delete', 'manage'] as Right[]) {
      for (const who of Object.keys(users) as Who[]) {
        const rights = expectedRights(who, visibility, grant);
        const visible = rights.has('read');
        const id = await makeAuth(visibility, grant);
        const tok = users[who].token;
        const what = `${visibility}/${grant}/${who}`;

        expectStatus(await t.call('GET', `/v1/connector-auths/${id}`, { token: tok }), true, visible, 200, `${what} GET`);
        const list = (await t.call('GET', `/v1/connector-auths?limit=200&filter=name,eq,%22v${n}%22`, { token: tok })).json();
        assert.equal(list.data.length, visible ? 1 : 0, `${what} list`);
        expectStatus(await t.call('PUT', `/v1/connector-auths/${id}`, { token: tok, body: { name: `v${n}` } }), rights.has('update'), visible, 200, `${what} PUT`);
        expectStatus(await t.call('GET', `/v1/connector-auths/${id}/permissions`, { token: tok }), rights.has('manage'), visible, 200, `${what} GET permissions`);
        expectStatus(await t.call('PUT', `/v1/connector-auths/${id}/permissions`, { token: tok, body: { visibility } }), rights.has('manage'), visible, 200, `${what} PUT permissions`);
        expectStatus(await t.call('POST', `/v1/connector-auths/${id}/test`, { token: tok }), rights.has('update'), visible, 200, `${what} test`);

        // resolveForRun with this user as the flow's owner: the read right decides.
        const resolve = t.ctx.services.connectorAuths.resolveForRun({
          companyId: t.tenant.companyId, userId: users[who].id, authId: id, connectorId: HTTP_CONNECTOR_ID, purpose: 'matrix',
        });
        if (visible) assert.equal((await resolve).password, 'pw-secret', `${what} resolve`);
        else await assert.rejects(resolve, (e: unknown) => e instanceof ConnectorAuthResolveError && e.code === 'connector_auth_not_found', `${what} resolve`);

        expectStatus(await t.call('DELETE', `/v1/connector-auths/${id}`, { token: tok }), rights.has('delete'), visible, 204, `${what} DELETE`);
        checks++;
      }
    }
  }
  assert.equal(checks, 3 * 4 * 6);
});

test('lists filter by visibility in SQL: pages stay full and correct', async () => {
  const t2 = await startTestApp();
  try {
    const owner = await t2.newUser(t2.tenant.companyId);
    const reader = await t2.newUser(t2.tenant.companyId);
    const visibleIds: string[] = [];
    for (let i = 0; i < 12; i++) {
      const a = await createAuth(t2, { connector_id: HTTP_CONNECTOR_ID, name: `p${i}`, auth_type: 'none', api_endpoint: 'https://x.example.com' }, owner.token);
      const vis = i % 3 === 0 ? 'company' : i % 3 === 1 ? 'private' : 'restricted';
      const grants = vis === 'restricted' && i % 2 === 0 ? [{ grantee_type: 'user', grantee_id: reader.id, rights: ['read'] }] : [];
      await t2.call('PUT', `/v1/connector-auths/${a.id}/permissions`, { token: owner.token, body: { visibility: vis, grants } });
      if (vis === 'company' || grants.length) visibleIds.push(a.id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: any = (await t2.call('GET', `/v1/connector-auths?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { token: reader.token })).json();
      if (page.next_cursor) assert.equal(page.data.length, 2, 'a page before the last one is full');
      seen.push(...page.data.map((a: any) => a.id));
      cursor = page.next_cursor;
      pages++;
    } while (cursor);
    assert.deepEqual(seen, visibleIds);
    assert.equal(pages, Math.ceil(visibleIds.length / 2));
  } finally {
    await t2.close();
  }
});

test('permissions: making an auth private drops its grants; only owner or admin hand it over', async () => {
  const id = await makeAuth('restricted', 'manage');
  const perms = (await t.call('GET', `/v1/connector-auths/${id}/permissions`, { token: users.grantedUser.token })).json();
  assert.equal(perms.visibility, 'restricted');
  assert.deepEqual(perms.grants.map((g: any) => g.rights), [['read', 'update', 'delete', 'manage'], ['read', 'update', 'delete', 'manage']]);
  // A manager who is not the owner cannot change the owner.
  problem(await t.call('PUT', `/v1/connector-auths/${id}/permissions`, { token: users.grantedUser.token, body: { owner_user_id: users.grantedUser.id } }), 403, 'forbidden');
  // The owner makes it private: grants go, the granted user no longer sees it.
  const priv = await t.call('PUT', `/v1/connector-auths/${id}/permissions`, { token: users.owner.token, body: { visibility: 'private' } });
  assert.equal(priv.statusCode, 200, priv.body);
  assert.deepEqual(priv.json().grants, []);
  problem(await t.call('GET', `/v1/connector-auths/${id}`, { token: users.grantedUser.token }), 404, 'not_found');
  problem(await t.call('GET', `/v1/connector-auths/${id}`, { token: users.teamMember.token }), 404, 'not_found');
  // An admin hands it to the member; the old owner loses it (private).
  const handed = await t.call('PUT', `/v1/connector-auths/${id}/permissions`, { token: users.admin.token, body: { owner_user_id: users.member.id } });
  assert.equal(handed.json().owner_user_id, users.member.id);
  assert.equal((await t.call('GET', `/v1/connector-auths/${id}`, { token: users.member.token })).statusCode, 200);
  problem(await t.call('GET', `/v1/connector-auths/${id}`, { token: users.owner.token }), 404, 'not_found');
  const ev = (await t.call('GET', `/v1/audit-events?filter=action,eq,%22connector_auth.permissions_changed%22&filter=target_id,eq,%22${id}%22`)).json().data;
  assert.equal(ev.length, 3);
});

test('leaving a team or losing a grant takes the access away at once', async () => {
  const id = await makeAuth('restricted', 'read');
  assert.equal((await t.call('GET', `/v1/connector-auths/${id}`, { token: users.teamMember.token })).statusCode, 200);
  await t.call('PUT', `/v1/teams/${team}`, { body: { member_ids: [] } });
  try {
    problem(await t.call('GET', `/v1/connector-auths/${id}`, { token: users.teamMember.token }), 404, 'not_found');
  } finally {
    await t.call('PUT', `/v1/teams/${team}`, { body: { member_ids: [users.teamMember.id] } });
  }
  await t.call('PUT', `/v1/connector-auths/${id}/permissions`, { token: users.owner.token, body: { grants: [] } });
  problem(await t.call('GET', `/v1/connector-auths/${id}`, { token: users.grantedUser.token }), 404, 'not_found');
});

test('a PAT acts with its owner\'s rights limited by its scopes', async () => {
  const id = await makeAuth('restricted', 'manage');
  const viewToken = (await t.newUser(t.tenant.companyId, { scopes: ['connector_auth:view'] }));
  // Same user rights (none) -> 404; a view token of the granted user can read but not update.
  problem(await t.call('GET', `/v1/connector-auths/${id}`, { token: viewToken.token }), 404, 'not_found');
  const granted = await t.ctx.services.tokens.create(null, { companyId: t.tenant.companyId, userId: users.grantedUser.id },
    { expiration: null, scopes: ['connector_auth:view'], note: 'view' });
  assert.equal((await t.call('GET', `/v1/connector-auths/${id}`, { token: granted.token })).statusCode, 200);
  problem(await t.call('PUT', `/v1/connector-auths/${id}`, { token: granted.token, body: { name: 'x' } }), 403, 'insufficient_scope');
});

test('deleting a granted user or team removes its grants', async () => {
  const cid = t.tenant.companyId;
  const g = await t.newUser(cid);
  const tm = await t.newUser(cid);
  const tempTeam = (await t.call('POST', '/v1/teams', { body: { name: `Temp ${++n}`, member_ids: [tm.id] } })).json().id;
  const a = await createAuth(t, { connector_id: HTTP_CONNECTOR_ID, name: `del${++n}`, auth_type: 'none', api_endpoint: 'https://x.example.com' }, users.owner.token);
  const set = await t.call('PUT', `/v1/connector-auths/${a.id}/permissions`, { token: users.owner.token, body: { visibility: 'restricted', grants: [
    { grantee_type: 'user', grantee_id: g.id, rights: ['update'] }, { grantee_type: 'team', grantee_id: tempTeam, rights: ['read'] },
  ] } });
  assert.equal(set.json().grants.length, 2, set.body);
  assert.equal((await t.call('DELETE', `/v1/users/${g.id}`)).statusCode, 204);
  assert.equal((await t.call('DELETE', `/v1/teams/${tempTeam}`)).statusCode, 204);
  assert.deepEqual((await t.call('GET', `/v1/connector-auths/${a.id}/permissions`, { token: users.owner.token })).json().grants, []);
  problem(await t.call('GET', `/v1/connector-auths/${a.id}`, { token: tm.token }), 404, 'not_found');
});
