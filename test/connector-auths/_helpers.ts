// Helpers for the connector-auth tests (not a test file itself).
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { TestApp } from '../support/app.ts';
import { SFTP_CONNECTOR_ID } from '../../src/modules/connectors/catalogue.ts';

/** The seed's sample create body (section 2.2): an SFTP URL with user:password, two tags. */
export function sampleBody(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    connector_id: SFTP_CONNECTOR_ID,
    name: 'Customer 42 SFTP',
    auth_type: 'username_password',
    auth_token: '',
    auth_details: '',
    api_endpoint: 'sftp://user:password@sftp.example.com:22/path',
    user_input: {},
    username: 'user',
    password: 'password',
    tags: ['customer-42', 'files'],
    ...over,
  };
}

export async function createAuth(t: TestApp, body: Record<string, unknown> = sampleBody(), token?: string): Promise<Record<string, any>> {
  const res = await t.call('POST', '/v1/connector-auths', { body, ...(token ? { token } : {}) });
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

export async function countRows(t: TestApp, table: string): Promise<number> {
  const r = await sql<{ n: number }>`select count(*) as n from ${sql.table(table)}`.execute(t.ctx.database.db);
  return Number(r.rows[0].n);
}

/** Row counts of every table this module writes (and the audit log), for no-partial-write checks. */
export async function snapshot(t: TestApp): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of ['connectors', 'connector_actions', 'connector_auths', 'connector_auth_grants', 'audit_events']) {
    out[table] = await countRows(t, table);
  }
  return out;
}

/** The raw stored row, for tests that look at what is really in the database. */
export async function rawAuthRow(t: TestApp, id: string): Promise<Record<string, any>> {
  const r = await sql<Record<string, any>>`select * from connector_auths where id = ${id}`.execute(t.ctx.database.db);
  return r.rows[0];
}

export const ZERO_UUID = '00000000-0000-4000-8000-000000000000';
