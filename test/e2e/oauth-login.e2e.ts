// Browser end-to-end test of the seed's OAuth flow (sections 4.4 and 5.2) against the real
// `flowgate serve` process: staff create the API user and the client with the CLI, a headless
// Chromium signs in on the HTML login page, the client's redirect URI (a tiny local server)
// receives the code, the code is exchanged, the seed's refresh request is sent byte for byte,
// and the access token calls /v1.
//
// Run with `npm run test:e2e`. Needs Debian's chromium at /usr/bin/chromium (or
// FLOWGATE_E2E_CHROMIUM); without it the test FAILS with a message saying so, never skips.
// FLOWGATE_TEST_DB=postgres runs the server on PostgreSQL. FLOWGATE_E2E_SCREENSHOTS=<dir> keeps
// the screenshots (default: a temp dir, printed and removed afterwards).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { makeTestStore } from '../support/db.ts';
import { runCli, startServer } from '../support/process.ts';

const CHROMIUM = process.env.FLOWGATE_E2E_CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const EMAIL = 'api-user@example.com';
const PASSWORD = 'e2e correct horse battery';
const BAD_CREDENTIALS = 'E-mail or password is incorrect.';

function requireChromium(): void {
  try {
    fs.accessSync(CHROMIUM, fs.constants.X_OK);
  } catch {
    throw new Error(`The browser E2E needs Chromium at ${CHROMIUM} (Debian: apt-get install chromium; ` +
      'or set FLOWGATE_E2E_CHROMIUM). It was not found, so the test fails instead of skipping.');
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** The client's redirect URI: records every callback's query and shows a plain page. */
async function startRedirectServer(): Promise<{ url: string; hits: URLSearchParams[]; close(): Promise<void> }> {
  const hits: URLSearchParams[] = [];
  const server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (u.pathname !== '/callback') {
      res.writeHead(404).end();
      return;
    }
    hits.push(u.searchParams);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!DOCTYPE html><title>Callback</title><p>Signed in; the tool has the code.</p>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/callback`,
    hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function cli(store: ReturnType<typeof makeTestStore>, args: string[], env: Record<string, string>): any {
  const r = runCli(store, ['--json', ...args], env);
  assert.equal(r.code, 0, `flowgate ${args.join(' ')} failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

test('the seed flow through the real login page in headless Chromium', { timeout: 180_000 }, async () => {
  requireChromium();
  const store = makeTestStore();
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = { FLOWGATE_BASE_URL: baseUrl };
  const server = await startServer(store, { ...env, PORT: String(port) });
  const redirect = await startRedirectServer();
  const shots = process.env.FLOWGATE_E2E_SCREENSHOTS ?? fs.mkdtempSync(path.join(os.tmpdir(), 'flowgate-e2e-'));
  fs.mkdirSync(shots, { recursive: true });
  let browser: Browser | undefined;
  try {
    // Seed 5.2 steps 1 and 2: staff issue the client; a dedicated API user is created.
    const user = cli(store, ['users', 'create', '--email', EMAIL, '--name', 'API user', '--password', PASSWORD, '--role', 'admin'], env);
    const client = cli(store, ['clients', 'create', '--name', 'e2e', '--redirect-uri', redirect.url], env);
    assert.match(client.client_id, /^fgc_/);
    assert.match(client.client_secret, /^fgcs_/);

    // Discovery names {auth_url} and {token_url}.
    const discovery = await (await fetch(`${baseUrl}/oauth2/.well-known/openid-configuration`)).json() as Record<string, string>;
    assert.equal(discovery.authorization_endpoint, `${baseUrl}/oauth2/authorize`);
    assert.equal(discovery.token_endpoint, `${baseUrl}/oauth2/token`);

    const verifier = crypto.randomBytes(32).toString('base64url');
    const challenge = crypto.createHash('sha256').update(verifier).digest('base64url');
    const state = crypto.randomBytes(16).toString('base64url');
    const authorize = `${discovery.authorization_endpoint}?response_type=code&client_id=${encodeURIComponent(client.client_id)}` +
      `&redirect_uri=${encodeURIComponent(redirect.url)}&scope=email%20openid&state=${state}` +
      `&code_challenge=${challenge}&code_challenge_method=S256`;

    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    const page = await browser.newPage();
    const first = await page.goto(authorize);
    assert.equal(first?.status(), 200);
    assert.match(page.url(), new RegExp(`^${baseUrl}/oauth2/interaction/`));
    assert.equal(await page.title(), 'Sign in · flowgate');
    await page.getByRole('heading', { name: /Sign in to/ }).waitFor();
    assert.match(await page.locator('p.sub').innerText(), /to continue to e2e/);
    await page.screenshot({ path: path.join(shots, '1-login.png'), fullPage: true });

    // A wrong password: the page says so, the user stays on the form.
    await page.getByLabel('E-mail').fill(EMAIL);
    await page.getByLabel('Password').fill('not the password');
    const [failed] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Sign in' }).click(),
    ]);
    assert.equal(failed.status(), 401);
    await page.getByRole('alert').waitFor();
    assert.equal((await page.getByRole('alert').innerText()).trim(), BAD_CREDENTIALS);
    assert.equal(await page.getByLabel('E-mail').inputValue(), EMAIL, 'the e-mail is kept');
    assert.equal(await page.getByLabel('Password').inputValue(), '', 'the password is not echoed');
    await page.screenshot({ path: path.join(shots, '2-wrong-password.png'), fullPage: true });
    assert.equal(redirect.hits.length, 0);

    // The right password: the browser lands on the client's redirect URI with a code.
    await page.getByLabel('Password').fill(PASSWORD);
    await Promise.all([
      page.waitForURL((u) => u.href.startsWith(redirect.url), { timeout: 30_000 }),
      page.getByRole('button', { name: 'Sign in' }).click(),
    ]);
    await page.screenshot({ path: path.join(shots, '3-callback.png') });
    assert.equal(redirect.hits.length, 1);
    const callback = redirect.hits[0];
    assert.equal(callback.get('state'), state);
    assert.equal(callback.get('iss'), `${baseUrl}/oauth2`);
    const code = callback.get('code');
    assert.ok(code, `no code in the callback: ${callback}`);
    assert.equal(new URL(page.url()).searchParams.get('code'), code);

    // The tool exchanges the code at {token_url}.
    const basic = 'Basic ' + Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64');
    const exchanged = await fetch(discovery.token_endpoint, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: basic },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirect.url, code_verifier: verifier }),
    });
    const first_tokens = await exchanged.json() as Record<string, any>;
    assert.equal(exchanged.status, 200, JSON.stringify(first_tokens));
    assert.equal(first_tokens.token_type, 'Bearer');
    assert.ok(first_tokens.refresh_token, 'scope "email openid" yields a refresh_token');
    const idToken = JSON.parse(Buffer.from(first_tokens.id_token.split('.')[1], 'base64url').toString());
    assert.equal(idToken.sub, user.id);
    assert.equal(idToken.email, EMAIL);
    assert.equal(idToken.email_verified, true);

    // Seed 4.4: the refresh request, byte for byte.
    const refreshed = await fetch(`${baseUrl}/oauth2/token`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/x-www-form-urlencoded',
        Authorization: 'Basic ' + Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64'),
      },
      body: `grant_type=refresh_token&client_id=${encodeURIComponent(client.client_id)}&refresh_token=${encodeURIComponent(first_tokens.refresh_token)}`,
    });
    const tokens = await refreshed.json() as Record<string, any>;
    assert.equal(refreshed.status, 200, JSON.stringify(tokens));
    assert.equal(refreshed.headers.get('cache-control'), 'no-store');
    assert.equal(tokens.token_type, 'Bearer');
    assert.ok(tokens.access_token && tokens.id_token && tokens.expires_in > 0);
    assert.ok(tokens.refresh_token && tokens.refresh_token !== first_tokens.refresh_token, 'the refresh token rotates');

    // Seed 5.2 step 5: the access token on the API.
    const users = await fetch(`${baseUrl}/v1/users`, { headers: { Authorization: `Bearer ${tokens.access_token}` } });
    const body = await users.json() as { data: Array<{ id: string; email: string }> };
    assert.equal(users.status, 200, JSON.stringify(body));
    assert.ok(body.data.some((u) => u.id === user.id && u.email === EMAIL));
    const refused = await fetch(`${baseUrl}/v1/users`, { headers: { Authorization: `Bearer ${first_tokens.access_token}x` } });
    assert.equal(refused.status, 401);

    // Nothing secret reached the server's log.
    const log = server.output();
    for (const secret of [PASSWORD, client.client_secret, code, first_tokens.refresh_token, tokens.refresh_token, tokens.access_token]) {
      assert.ok(!log.includes(secret), 'a secret appears in the server log');
    }
    process.stdout.write(`# screenshots: ${shots}\n`);
  } finally {
    await browser?.close();
    await redirect.close();
    await server.stop();
    await store.destroy();
    if (!process.env.FLOWGATE_E2E_SCREENSHOTS) fs.rmSync(shots, { recursive: true, force: true });
  }
});
