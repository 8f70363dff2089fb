// The template sandbox at render time: what the save-time check cannot see (keys computed from
// request data) must still never reach a constructor, a function or the process, and a render's
// work is bounded.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { compileTemplate, renderDeep, TemplateRenderError, TemplateSyntaxError, MAX_ITERATIONS } from '../../src/modules/flows/templates.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { startHttpServer, type TestHttpServer } from '../support/servers.ts';
import { HTTP_CONNECTOR_ID } from '../../src/modules/connectors/catalogue.ts';
import { createFlow, steps, waitRun, webhook, worker } from './_helpers.ts';

const data = () => ({
  request: { body: { name: 'Bob', items: [{ n: 1 }, { n: 2 }], nested: { deep: true } }, query: { k: 'constructor' }, headers: {} },
  steps: {}, env: {}, run: { id: 'r1' },
});
const render = (src: string, d: Record<string, unknown> = data()) => compileTemplate(src).render(d);

test('ordinary templates render; one {{ expression }} keeps its JSON type', () => {
  assert.equal(render('Hello {{ request.body.name | upper }}'), 'Hello BOB');
  assert.deepEqual(render('{{ request.body.items }}'), [{ n: 1 }, { n: 2 }]);
  assert.equal(render('{{ request.body.items | length }}'), 2);
  assert.equal(render('{{ request.body.nested.deep }}'), true);
  assert.equal(render('{{ request.body.missing }}'), null);
  assert.equal(render('x{{ request.body.items }}'), 'x[{"n":1},{"n":2}]');
  assert.equal(render('{% for i in request.body.items %}{{ i.n }}{% if not loop.last %},{% endif %}{% endfor %}'), '1,2');
  assert.equal(render('{{ request.body | tojson }}'), JSON.stringify(data().request.body));
  assert.equal(render('{{ "a:b" | b64encode }}'), Buffer.from('a:b').toString('base64'));
  assert.equal(render('{{ request.body.items | join("-", "n") }}'), '1-2');
  assert.equal(render('{{ request.body.name | replace("o", "0") }}'), 'B0b');
  assert.equal(render('{{ request.body.name if request.body.nested.deep else "no" }}'), 'Bob');
  assert.equal(render('{{ request.body.name is string }}'), true);
});

test('keys computed at run time never reach constructors, prototypes or functions', () => {
  const d = data();
  for (const k of ['constructor', '__proto__', 'prototype', 'toString', 'valueOf', 'hasOwnProperty', '__defineGetter__']) {
    (d.request.query as Record<string, string>).k = k;
    assert.equal(render('{{ request.body[request.query.k] }}', d), null, k);
    assert.equal(render('{{ request.body.name[request.query.k] }}', d), null, k);
    assert.equal(render('{{ request.body.items[request.query.k] }}', d), null, k);
    assert.equal(render('{{ request.body[request.query.k][request.query.k] }}', d), null, k);
    assert.equal(render('{{ request.body["" ~ request.query.k] }}', d), null, k);
  }
  // Nunjucks' default globals are gone, and the context's own prototype is not reachable.
  for (const name of ['range', 'cycler', 'joiner', 'lipsum', 'toString', 'hasOwnProperty', 'valueOf', 'process', 'global', 'globalThis', 'require']) {
    assert.equal(render(`{{ ${name} }}`), null, name);
  }
  assert.throws(() => render('{{ constructor }}'), TemplateSyntaxError);
  // Methods of strings and arrays are not callable (and not even visible).
  assert.equal(render('{{ request.body.name.toUpperCase }}'), null);
  assert.equal(render('{{ request.body.items.map }}'), null);
  // Own data properties remain readable, including `length` and indices.
  assert.equal(render('{{ request.body.name.length }}'), 3);
  assert.deepEqual(render('{{ request.body.items[1] }}'), { n: 2 });
});

test('the documented escape does not execute, whether at save time or at run time', () => {
  assert.throws(() => compileTemplate('{{ range.constructor("return process")() }}'), TemplateSyntaxError);
  assert.throws(() => compileTemplate('{{ request.body[request.query.k]("return process")() }}'), /calling a function is not allowed/);
  let called = false;
  const trap = { request: { body: { f: () => { called = true; return 'pwned'; } } } };
  assert.equal(render('{{ request.body.f }}', trap), null);
  assert.equal(called, false);
});

test('work is bounded: loop iterations, output size, and exploding filters', () => {
  const big = Array.from({ length: 400 }, (_, i) => i);
  const d = { request: { body: { big, s: 'x'.repeat(1000) } } };
  assert.throws(() => render('{% for a in request.body.big %}{% for b in request.body.big %}{% endfor %}{% endfor %}', d), (e: Error) => e instanceof TemplateRenderError && /at most/.test(e.message));
  assert.ok(MAX_ITERATIONS >= 1000);
  assert.throws(() => render('{% for a in request.body.big %}{% for b in request.body.big %}{{ request.body.s }}{{ request.body.s }}{% endfor %}{% endfor %}', d), TemplateRenderError);
  assert.throws(() => render('{{ request.body.s | replace("x", request.body.s) | replace("x", request.body.s) }}', d), /exceed/);
  assert.throws(() => render('{{ request.body.big | join(request.body.s | replace("x", request.body.s)) }}', d), /exceed/);
  assert.throws(() => compileTemplate('{% for a in x %}{% for b in x %}{% for c in x %}{% for d in x %}{% endfor %}{% endfor %}{% endfor %}{% endfor %}'), /3 deep/);
  assert.throws(() => compileTemplate('x'.repeat(70_000) + '{{ a }}'), /at most/);
});

test('renderDeep renders nested strings and names the failing field', () => {
  const out = renderDeep({ a: '{{ request.body.name }}', b: ['{{ run.id }}', 3, null], c: { d: 'plain {text}' } }, data(), 'input');
  assert.deepEqual(out, { a: 'Bob', b: ['r1', 3, null], c: { d: 'plain {text}' } });
  assert.throws(() => renderDeep({ x: { y: '{{ request.body.name | int(1, 2, 3) | test_missing }}' } }, data(), 'input'), /input\.x\.y/);
});

let t: TestApp;
let api: TestHttpServer;
before(async () => {
  t = await startTestApp();
  api = await startHttpServer();
  worker(t);
});
after(async () => {
  await api.close();
  await t.close();
});

test('a stored flow with computed keys, fed hostile query parameters, only ever sends data', async () => {
  const flow = await createFlow(t, {
    steps: [{
      name: 'send', connector_id: HTTP_CONNECTOR_ID, action: 'request',
      input: { method: 'POST', url: `${api.url}/x`, body: { a: '{{ request.body[request.query.k] }}', b: '{{ request.query[request.query.k] }}', c: '{{ env[request.query.k] }}' } },
    }],
  });
  for (const k of ['constructor', '__proto__', 'prototype']) {
    const res = await webhook(t, flow.id, { token: flow.webhook_token, query: { k }, body: { x: 1 } });
    const run = await waitRun(t, res.json().run_id);
    assert.equal(run.status, 'success', JSON.stringify(run));
    const [s] = await steps(t, run.id);
    assert.deepEqual(s.input.body, { a: null, b: null, c: null }, k);
  }
  for (const r of api.requests) assert.doesNotMatch(r.body, /function|native code|\[object/);
});

test('a render failure at run time is a template_error of that step and field', async () => {
  const flow = await createFlow(t, {
    steps: [{ name: 'send', connector_id: HTTP_CONNECTOR_ID, action: 'request', input: { url: `${api.url}/x`, body: { big: '{% for a in request.body.l %}{% for b in request.body.l %}{% endfor %}{% endfor %}' } } }],
  });
  const res = await webhook(t, flow.id, { token: flow.webhook_token, body: { l: Array.from({ length: 500 }, () => 0) } });
  const run = await waitRun(t, res.json().run_id);
  assert.equal(run.status, 'error');
  assert.equal(run.error.code, 'template_error');
  assert.match(run.error.message, /Step "send": input\.body\.big: loops may run at most/);
});
