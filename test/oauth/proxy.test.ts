// Behind a TLS-terminating proxy: FLOWGATE_BASE_URL is https while the app itself speaks http.
// Every URL the provider publishes comes from the base URL, cookies are Secure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { Browser, formAction, formFields, freePort, fullFlow, makeClient, makeTestStore, PASSWORD, REDIRECT_URI, seedRefresh, seedUser, startServer } from './helpers.ts';

test('an https base URL in front of a plain-http app', async () => {
  const port = await freePort();
  const publicBase = `https://127.0.0.1:${port}`;
  const store = makeTestStore();
  const server = await startServer(store, { port, env: { FLOWGATE_BASE_URL: publicBase } });
  // What the proxy does: https://host -> http://host.
  const direct = (u: string) => u.replace(publicBase, `http://127.0.0.1:${port}`);
  try {
    assert.equal(server.issuer, `${publicBase}/oauth2`);
    const d = await (await fetch(`http://127.0.0.1:${port}/oauth2/.well-known/openid-configuration`)).json() as Record<string, string>;
    assert.equal(d.issuer, `${publicBase}/oauth2`);
    assert.equal(d.token_endpoint, `${publicBase}/oauth2/token`);

    const user = await seedUser(server.handle);
    const { clientId, clientSecret } = await server.service.clients.create({ name: 'proxied', redirectUris: [REDIRECT_URI] });
    const verifier = crypto.randomBytes(32).toString('base64url');
    const challenge = crypto.createHash('sha256').update(verifier).digest('base64url');
    const browser = new Browser();
    const q = new URLSearchParams({ client_id: clientId, response_type: 'code', scope: 'openid email', redirect_uri: REDIRECT_URI, code_challenge: challenge, code_challenge_method: 'S256', state: 's1' });
    let res = await browser.request(direct(`${publicBase}/oauth2/authorize?${q}`));
    assert.equal(res.status, 303);
    const loginUrl = new URL(res.headers.get('location')!, publicBase).href;
    assert.ok(loginUrl.startsWith(`${publicBase}/oauth2/interaction/`), loginUrl);
    for (const c of res.headers.getSetCookie()) assert.match(c, /;\s*secure/i, c);

    res = await browser.request(direct(loginUrl));
    assert.equal(res.status, 200);
    const html = await res.text();
    const csrfCookie = res.headers.getSetCookie().find((c) => c.startsWith('_fg_login_csrf='));
    assert.match(csrfCookie ?? '', /;\s*Secure/);
    res = await browser.request(direct(new URL(formAction(html), publicBase).href), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf: formFields(html).csrf, email: user.email, password: PASSWORD }).toString(),
    });
    assert.equal(res.status, 303);
    const resume = res.headers.get('location')!;
    assert.ok(resume.startsWith(`${publicBase}/oauth2/authorize/`), resume);
    res = await browser.request(direct(resume));
    assert.equal(res.status, 303);
    const cb = new URL(res.headers.get('location')!);
    assert.equal(cb.searchParams.get('iss'), `${publicBase}/oauth2`);
    const sessionCookie = res.headers.getSetCookie().find((c) => c.startsWith('_fg_session='));
    assert.match(sessionCookie ?? '', /;\s*secure/i);

    const tok = await fetch(`http://127.0.0.1:${port}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: 'Basic ' + Buffer.from(`${clientId}:${clientSecret}`).toString('base64') },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: cb.searchParams.get('code')!, redirect_uri: REDIRECT_URI, code_verifier: verifier }).toString(),
    });
    const body = await tok.json() as Record<string, string>;
    assert.equal(tok.status, 200, JSON.stringify(body));
    const idt = JSON.parse(Buffer.from(body.id_token.split('.')[1], 'base64url').toString());
    assert.equal(idt.iss, `${publicBase}/oauth2`);
  } finally {
    await server.stop();
    await store.destroy();
  }
});

test('a base URL with a path (proxy strips it): published URLs and cookie paths keep it', async () => {
  const port = await freePort();
  const publicBase = `http://127.0.0.1:${port}/flowgate`;
  const store = makeTestStore();
  const server = await startServer(store, { port, env: { FLOWGATE_BASE_URL: publicBase } });
  try {
    const d = await (await fetch(`http://127.0.0.1:${port}/oauth2/.well-known/openid-configuration`)).json() as Record<string, string>;
    assert.equal(d.issuer, `${publicBase}/oauth2`);
    assert.equal(d.authorization_endpoint, `${publicBase}/oauth2/authorize`);
    assert.equal(d.token_endpoint, `${publicBase}/oauth2/token`);
    const { clientId } = await server.service.clients.create({ name: 'p', redirectUris: [REDIRECT_URI] });
    const q = new URLSearchParams({ client_id: clientId, response_type: 'code', scope: 'openid email', redirect_uri: REDIRECT_URI, code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' });
    const res = await fetch(`http://127.0.0.1:${port}/oauth2/authorize?${q}`, { redirect: 'manual' });
    assert.equal(res.status, 303);
    assert.match(res.headers.get('location') ?? '', /^\/flowgate\/oauth2\/interaction\/[A-Za-z0-9_-]+$/);
    const interactionCookie = res.headers.getSetCookie().find((c) => c.startsWith('_fg_interaction='));
    assert.match(interactionCookie ?? '', /path=\/flowgate\/oauth2\/interaction\//i);
    const page = await fetch(`http://127.0.0.1:${port}${(res.headers.get('location') ?? '').replace('/flowgate', '')}`, {
      headers: { cookie: res.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ') },
    });
    assert.equal(page.status, 200);
    assert.match(await page.text(), /action="\/flowgate\/oauth2\/interaction\//);
  } finally {
    await server.stop();
    await store.destroy();
  }
});

test('works when the app registered @fastify/middie at the root already', async () => {
  const store = makeTestStore();
  const server = await startServer(store, { rootMiddie: true });
  try {
    const user = await seedUser(server.handle);
    const client = await makeClient(server);
    const { tokens } = await fullFlow(client, user.email);
    const res = await seedRefresh(server, client.clientId, client.clientSecret!, tokens.refresh_token!);
    assert.equal(res.status, 200);
    // Fastify's own routes next to it are untouched (root formbody parses /echo).
    const echo = await fetch(`${server.baseUrl}/echo`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=1' });
    assert.deepEqual(await echo.json(), { body: { a: '1' } });
  } finally {
    await server.stop();
    await store.destroy();
  }
});
