// HTTP connector against a real node:http server (test/support/servers.ts).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runAction, testConnection } from '../../src/modules/connectors/runtime/index.ts';
import { ConnectorError, type HttpRequestOutput, type ResolvedCredential } from '../../src/modules/connectors/runtime/types.ts';
import { startHttpServer, type HttpHandler, type TestHttpServer } from '../support/servers.ts';
import { closedPort, cred, ctx, TRICKY_PASSWORD } from './_helpers.ts';

const TOKEN = 'tok_live_9f8e7d6c5b4a';

async function rejectsWith(p: Promise<unknown>, code: string): Promise<ConnectorError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ConnectorError, `expected a ConnectorError, got ${String(err)}`);
    assert.equal(err.code, code, `code (message: ${err.message})`);
    return err;
  }
  assert.fail(`expected a ConnectorError ${code}, but the call succeeded`);
}

/** Routes by path; unknown paths echo. */
const routes: HttpHandler = async (req, res) => {
  const url = new URL(req.url, 'http://x');
  switch (url.pathname) {
    case '/json':
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'x-extra': 'yes' });
      res.end(JSON.stringify({ items: [1, 2, 3], nested: { ok: true } }));
      return;
    case '/problem':
      res.writeHead(422, { 'content-type': 'application/problem+json' });
      res.end(JSON.stringify({ title: 'invalid' }));
      return;
    case '/text':
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('just text {not json}');
      return;
    case '/empty-json':
      res.writeHead(204, { 'content-type': 'application/json' });
      res.end();
      return;
    case '/missing':
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('nope');
      return;
    case '/redirect':
      res.writeHead(302, { location: 'http://127.0.0.2:1/elsewhere' });
      res.end();
      return;
    case '/huge': {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(1024 * 1024, 0x61);
      for (let i = 0; i < 6; i++) if (!res.write(chunk)) await new Promise((r) => res.once('drain', r));
      res.end();
      return;
    }
    case '/hang':
      return; // never answers
    default:
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(req));
  }
};

describe('http connector', { timeout: 20_000 }, () => {
  let srv: TestHttpServer;
  before(async () => {
    srv = await startHttpServer(routes);
  });
  after(async () => {
    await srv?.close();
  });

  const bearer = (authType: string, over: Partial<ResolvedCredential> = {}) =>
    cred({ authType, apiEndpoint: `${srv.url}/v2`, authToken: TOKEN, ...over });
  const basic = (over: Partial<ResolvedCredential> = {}) =>
    cred({ authType: 'basic_auth', apiEndpoint: `${srv.url}/v2`, username: 'alice', password: TRICKY_PASSWORD, ...over });
  const request = async (input: unknown, c: ResolvedCredential, timeoutMs = 5_000) =>
    (await runAction('http', 'request', input, c, ctx(timeoutMs))) as HttpRequestOutput;
  const last = () => srv.requests[srv.requests.length - 1]!;

  it('applies Basic auth for basic_auth and username_password', async () => {
    for (const authType of ['basic_auth', 'username_password']) {
      const out = await request({ url: 'items' }, basic({ authType }));
      assert.equal(out.status, 200);
      assert.equal(last().headers.authorization, 'Basic ' + Buffer.from(`alice:${TRICKY_PASSWORD}`).toString('base64'));
    }
  });

  it('applies Bearer auth for api_key, oauth2 and refreshable_token', async () => {
    for (const authType of ['api_key', 'oauth2', 'refreshable_token']) {
      await request({ url: 'items' }, bearer(authType));
      assert.equal(last().headers.authorization, `Bearer ${TOKEN}`, authType);
    }
  });

  it("the credential's auth wins over an Authorization header in the input", async () => {
    await request({ url: 'items', headers: { Authorization: 'Bearer attacker', 'X-Trace': 'abc' } }, bearer('api_key'));
    assert.equal(last().headers.authorization, `Bearer ${TOKEN}`);
    assert.equal(last().headers['x-trace'], 'abc');
    // authType 'none' sends no auth of its own, so the input's header goes through
    await request({ url: 'items', headers: { authorization: 'Token xyz' } }, cred({ authType: 'none', apiEndpoint: srv.url }));
    assert.equal(last().headers.authorization, 'Token xyz');
  });

  it('Basic auth: fields win over URL user-info, which fills empty fields and is not sent in the URL', async () => {
    const withUrlInfo = `http://bob:${encodeURIComponent('url-pass')}@127.0.0.1:${srv.port}/v2`;
    await request({ url: 'a' }, basic({ apiEndpoint: withUrlInfo }));
    assert.equal(last().headers.authorization, 'Basic ' + Buffer.from(`alice:${TRICKY_PASSWORD}`).toString('base64'));
    await request({ url: 'a' }, basic({ apiEndpoint: withUrlInfo, username: null, password: '' }));
    assert.equal(last().headers.authorization, 'Basic ' + Buffer.from('bob:url-pass').toString('base64'));
    assert.equal(last().url, '/v2/a');
  });

  it('resolves a relative url against the endpoint, keeping its base path, and adds the query', async () => {
    await request({ url: 'items', query: { q: 'a b', n: 2, tag: ['x', 'y'] } }, bearer('api_key'));
    assert.equal(last().url, '/v2/items?q=a+b&n=2&tag=x&tag=y');
    await request({ url: 'items/7?expand=1' }, bearer('api_key', { apiEndpoint: `${srv.url}/v2/` }));
    assert.equal(last().url, '/v2/items/7?expand=1');
    await request({}, bearer('api_key'));
    assert.equal(last().url, '/v2');
    await request({ url: '/root-level' }, bearer('api_key'));
    assert.equal(last().url, '/root-level');
  });

  it('refuses to send credentials to another origin', async () => {
    const before = srv.requests.length;
    const other = `http://127.0.0.1:${await closedPort()}/steal`;
    await rejectsWith(request({ url: other }, bearer('api_key')), 'bad_input');
    await rejectsWith(request({ url: 'https://example.com/' }, bearer('oauth2')), 'bad_input');
    await rejectsWith(request({ url: `${srv.url}/x` }, bearer('api_key', { apiEndpoint: null })), 'bad_input');
    assert.equal(srv.requests.length, before);
    // without secrets an absolute URL is fine
    const out = await request({ url: `${srv.url}/json` }, cred({ authType: 'none' }));
    assert.equal(out.status, 200);
  });

  it('sends JSON bodies as JSON and string bodies as they are', async () => {
    await request({ method: 'post', url: 'items', body: { name: 'n', n: [1] } }, bearer('api_key'));
    assert.equal(last().method, 'POST');
    assert.equal(last().headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(last().body), { name: 'n', n: [1] });
    await request({ method: 'PUT', url: 'items', body: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } }, bearer('api_key'));
    assert.equal(last().body, 'a=1');
    assert.equal(last().headers['content-type'], 'application/x-www-form-urlencoded');
    await rejectsWith(request({ method: 'GET', url: 'items', body: 'x' }, bearer('api_key')), 'bad_input');
  });

  it('parses JSON responses and returns other bodies as text', async () => {
    const json = await request({ url: '/json' }, bearer('api_key'));
    assert.equal(json.status, 200);
    assert.deepEqual(json.body, { items: [1, 2, 3], nested: { ok: true } });
    assert.equal(json.headers['x-extra'], 'yes');
    const text = await request({ url: '/text' }, bearer('api_key'));
    assert.equal(text.body, 'just text {not json}');
    const problem = await request({ url: '/problem' }, bearer('api_key'));
    assert.deepEqual(problem, { ...problem, status: 422, body: { title: 'invalid' } });
    const empty = await request({ url: '/empty-json' }, bearer('api_key'));
    assert.equal(empty.status, 204);
    assert.equal(empty.body, null);
  });

  it('a non-2xx status is returned, not thrown; redirects are not followed', async () => {
    const out = await request({ url: '/missing' }, bearer('api_key'));
    assert.equal(out.status, 404);
    assert.equal(out.body, 'nope');
    const r = await request({ url: '/redirect' }, bearer('api_key'));
    assert.equal(r.status, 302);
    assert.equal(r.headers.location, 'http://127.0.0.2:1/elsewhere');
  });

  it('keeps secrets out of the output even when the server echoes them', async () => {
    const out = await request({ url: 'echo' }, basic());
    const dump = JSON.stringify(out);
    assert.ok(!dump.includes(Buffer.from(`alice:${TRICKY_PASSWORD}`).toString('base64')), dump);
    const echoed = (out.body as { headers: Record<string, string> }).headers;
    assert.match(echoed.authorization!, /\*\*\*/, 'the echoed header is there, redacted');
    assert.equal(echoed.host, `127.0.0.1:${srv.port}`, 'the rest of the echo is intact');
    const out2 = await request({ url: 'echo' }, bearer('api_key'));
    assert.ok(!JSON.stringify(out2).includes(TOKEN));
  });

  it('caps the response body at 5 MB', async () => {
    const err = await rejectsWith(request({ url: '/huge' }, bearer('api_key'), 10_000), 'protocol_error');
    assert.match(err.message, /limit/);
  });

  it('times out on a server that does not answer, and honours ctx.signal', async () => {
    const t0 = Date.now();
    const err = await rejectsWith(request({ url: '/hang' }, bearer('api_key'), 250), 'timeout');
    assert.ok(Date.now() - t0 < 3_000);
    assert.ok(!err.message.includes(TOKEN));
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    await rejectsWith(runAction('http', 'request', { url: '/hang' }, bearer('api_key'), ctx(20_000, ac.signal)), 'timeout');
  });

  it('a closed port: refused', async () => {
    const c = bearer('api_key', { apiEndpoint: `http://127.0.0.1:${await closedPort()}/v2` });
    await rejectsWith(request({ url: 'x' }, c), 'refused');
    const r = await testConnection('http', c, ctx());
    assert.equal(r.error?.code, 'refused');
  });

  it('rejects malformed input and credentials with bad_input', async () => {
    await rejectsWith(request({ url: 'x', method: 'GE T' }, bearer('api_key')), 'bad_input');
    await rejectsWith(request({ url: 'x', headers: { 'x-a': 'a\r\nInjected: 1' } }, bearer('api_key')), 'bad_input');
    await rejectsWith(request({ url: 'x', query: 'a=1' }, bearer('api_key')), 'bad_input');
    await rejectsWith(request({ url: 'x' }, bearer('api_key', { authToken: null })), 'bad_input');
    await rejectsWith(request({ url: 'x' }, bearer('kerberos')), 'bad_input');
    await rejectsWith(request({ url: 'x' }, bearer('api_key', { apiEndpoint: 'sftp://127.0.0.1/' })), 'bad_input');
  });

  describe('testConnection', () => {
    let authSrv: TestHttpServer;
    before(async () => {
      authSrv = await startHttpServer((req, res) => {
        const url = new URL(req.url, 'http://x');
        if (url.pathname.startsWith('/broken')) {
          res.writeHead(500);
          res.end('boom');
        } else if (req.headers.authorization === `Bearer ${TOKEN}`) {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"me":"alice"}');
        } else {
          res.writeHead(url.pathname.startsWith('/forbidden') ? 403 : 401);
          res.end(`bad credentials: ${req.headers.authorization ?? ''}`);
        }
      });
    });
    after(async () => {
      await authSrv?.close();
    });

    it('2xx is ok', async () => {
      const r = await testConnection('http', bearer('oauth2', { apiEndpoint: `${authSrv.url}/v2` }), ctx());
      assert.deepEqual(r, { ok: true, error: null });
      assert.equal(authSrv.requests.at(-1)?.method, 'GET');
      assert.equal(authSrv.requests.at(-1)?.url, '/v2');
    });

    it('401 and 403 are authentication_failed, without the secret in the message', async () => {
      const wrong = 'wrong-token-123456';
      const r = await testConnection('http', bearer('api_key', { apiEndpoint: `${authSrv.url}/v2`, authToken: wrong }), ctx());
      assert.equal(r.ok, false);
      assert.equal(r.error?.code, 'authentication_failed');
      assert.ok(!r.error!.message.includes(wrong));
      const r2 = await testConnection('http', basic({ apiEndpoint: `${authSrv.url}/forbidden` }), ctx());
      assert.equal(r2.error?.code, 'authentication_failed');
      assert.match(r2.error!.message, /403/);
      assert.ok(!r2.error!.message.includes(TRICKY_PASSWORD));
    });

    it('other statuses >= 400 are http_error', async () => {
      const r = await testConnection('http', bearer('api_key', { apiEndpoint: `${authSrv.url}/broken` }), ctx());
      assert.equal(r.error?.code, 'http_error');
      assert.match(r.error!.message, /500/);
    });

    it('a hanging endpoint is a timeout', async () => {
      const r = await testConnection('http', bearer('api_key', { apiEndpoint: `${srv.url}/hang` }), ctx(200));
      assert.equal(r.error?.code, 'timeout');
    });
  });
});
