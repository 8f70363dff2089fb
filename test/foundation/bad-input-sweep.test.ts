// Every route in the generated OpenAPI document, fed bad input of every kind: malformed JSON,
// wrong body types, unknown fields, ids that are not uuids, unknown uuids, bad query strings.
// Each answer must be a problem+json with a stable code and a 4xx status: never a 500, never a
// stack trace.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app.ts';

let t: TestApp;
before(async () => { t = await startTestApp(); });
after(async () => { await t.close(); });

const RANDOM_UUID = '3f6d2c1e-8b7a-4c5d-9e0f-1a2b3c4d5e6f';

test('no endpoint answers bad input with a 500 or without a problem document', async () => {
  const doc = (await t.app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> };
  const paths = Object.entries(doc.paths).filter(([p]) => p.startsWith('/v1/'));
  assert.ok(paths.length >= 30, `expected the whole API in the document, got ${paths.length} paths`);
  let checked = 0;
  for (const [path, ops] of paths) {
    for (const method of Object.keys(ops).map((m) => m.toUpperCase())) {
      const withIds = (id: string) => path.replace(/\{[^}]+\}/g, id);
      const cases: Array<{ url: string; headers?: Record<string, string>; payload?: string }> = [
        { url: withIds('not-a-uuid') },
        { url: withIds(RANDOM_UUID) },
        { url: withIds(RANDOM_UUID) + '?limit=abc&filter=nope' },
      ];
      if (method === 'POST' || method === 'PUT') {
        const url = withIds(RANDOM_UUID);
        const json = { 'content-type': 'application/json' };
        cases.push(
          { url, headers: json, payload: '{"broken":' },
          { url, headers: json, payload: '[1,2,3]' },
          { url, headers: json, payload: '"a string"' },
          { url, headers: json, payload: '{"surely_not_a_field": true, "name": 12345}' },
          { url, headers: json, payload: JSON.stringify({ name: 'x'.repeat(100_000) }) },
          { url, headers: { 'content-type': 'application/xml' }, payload: '<a/>' },
        );
      }
      for (const c of cases) {
        const res = await t.app.inject({
          method: method as 'GET', url: c.url,
          headers: { authorization: `Bearer ${t.tenant.token}`, ...(c.headers ?? {}) },
          ...(c.payload !== undefined ? { payload: c.payload } : {}),
        });
        const what = `${method} ${c.url.slice(0, 120)} ${c.payload?.slice(0, 40) ?? ''} -> ${res.statusCode} ${res.body.slice(0, 200)}`;
        assert.ok(res.statusCode < 500, what);
        if (res.statusCode >= 400) {
          assert.match(String(res.headers['content-type']), /^application\/problem\+json/, what);
          const body = res.json();
          assert.equal(typeof body.code, 'string', what);
          assert.equal(body.status, res.statusCode, what);
          assert.ok(!/\n\s+at /.test(res.body), 'no stack trace: ' + what);
        }
        checked++;
      }
    }
  }
  assert.ok(checked > 150, `checked ${checked} requests`);
});
