// The login page: real HTML without JavaScript, CSRF, one answer for unknown e-mail and wrong
// password, disabled users, rate limits, escaping.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  authUrl, Browser, formAction, formFields, fullFlow, makeClient, makeTestStore, PASSWORD, seedUser, startServer, submitLogin,
  type SeededUser, type Server, type TestClient,
} from './helpers.ts';
import { BAD_CREDENTIALS } from '../../src/modules/oauth/index.ts';

let server: Server;
let user: SeededUser;
let client: TestClient;

before(async () => {
  server = await startServer(makeTestStore());
  user = await seedUser(server.handle, { company: 'Umbrella & <Sons>' });
  client = await makeClient(server);
});
after(async () => {
  await server.stop();
  await server.store.destroy();
});

async function openLoginPage(c: TestClient = client, params: Record<string, string> = {}, browser = new Browser()) {
  const { url } = await authUrl(c, params);
  const r = await browser.follow(url, () => false);
  assert.equal(r.res.status, 200);
  return { browser, res: r.res, html: await r.res.text(), url: r.url };
}

function errorText(html: string): string | null {
  return /<p class="error"[^>]*>([^<]*)<\/p>/.exec(html)?.[1] ?? null;
}

test('the login page is accessible HTML with labelled email and password fields and a CSRF token', async () => {
  const { res, html, url } = await openLoginPage();
  assert.match(new URL(url).pathname, /^\/oauth2\/interaction\/[A-Za-z0-9_-]+$/);
  assert.match(res.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.equal(res.headers.get('x-frame-options'), 'DENY');
  assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'none'/);
  assert.match(html, /<html lang="en">/);
  assert.match(html, /<label for="email">E-mail<\/label>/);
  assert.match(html, /<input id="email" name="email" type="email"/);
  assert.match(html, /<label for="password">Password<\/label>/);
  assert.match(html, /<input id="password" name="password" type="password"/);
  assert.match(html, /<form method="post" action="\/oauth2\/interaction\/[^"]+"/);
  assert.ok(formFields(html).csrf?.length >= 40);
  assert.doesNotMatch(html, /<script/i);
  assert.match(html, /Sign in to flowgate/);
  // The client's name is shown, escaped ("Test client <xxxx>").
  assert.match(html, /to continue to <strong>Test client &#60;[0-9a-f]{4}&#62;<\/strong>/);
});

test('unknown e-mail and wrong password get the same answer', async () => {
  const a = await openLoginPage();
  const wrongPassword = await submitLogin(a.browser, a.url, a.html, user.email, 'not the password');
  const b = await openLoginPage();
  const unknownEmail = await submitLogin(b.browser, b.url, b.html, 'nobody@example.com', 'not the password');
  assert.equal(wrongPassword.status, 401);
  assert.equal(unknownEmail.status, 401);
  const t1 = await wrongPassword.text();
  const t2 = await unknownEmail.text();
  assert.equal(errorText(t1), BAD_CREDENTIALS);
  assert.equal(errorText(t2), BAD_CREDENTIALS);
  assert.equal(BAD_CREDENTIALS, 'E-mail or password is incorrect.');
  // Nothing about the company leaks for a wrong password.
  assert.doesNotMatch(t1, /Umbrella/);
  // The form is shown again, e-mail kept, and works.
  const again = await submitLogin(a.browser, a.url, t1, user.email, PASSWORD);
  assert.equal(again.status, 303);
});

test('a disabled user cannot log in', async () => {
  const disabled = await seedUser(server.handle, { disabled: true, company: 'Umbrella & <Sons>' });
  const { browser, html, url } = await openLoginPage();
  const wrong = await submitLogin(browser, url, html, disabled.email, 'nope');
  assert.equal(wrong.status, 401);
  const page = await wrong.text();
  assert.equal(errorText(page), BAD_CREDENTIALS);
  const right = await submitLogin(browser, url, page, disabled.email, PASSWORD);
  assert.equal(right.status, 403);
  assert.equal(right.headers.get('location'), null);
  const text = await right.text();
  assert.match(errorText(text) ?? '', /disabled/);
  // Once the password proved who it is, the company is named (escaped).
  assert.match(text, /Umbrella &#38; &#60;Sons&#62;/);
});

test('a POST without the CSRF token (or with a forged one) is refused', async () => {
  const { browser, html, url } = await openLoginPage();
  const action = new URL(formAction(html), url);
  for (const csrf of [undefined, 'forged', formFields(html).csrf + 'x']) {
    const body = new URLSearchParams({ email: user.email, password: PASSWORD, ...(csrf === undefined ? {} : { csrf }) });
    const res = await browser.request(action, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: body.toString() });
    assert.equal(res.status, 403, String(csrf));
    assert.equal(res.headers.get('location'), null);
  }
  // The token of the page but without the cookie (another browser): refused too.
  const stranger = new Browser();
  stranger.cookies = browser.cookies.filter((c) => c.name !== '_fg_login_csrf');
  const res = await submitLogin(stranger, url, html, user.email, PASSWORD);
  assert.equal(res.status, 403);
  // The genuine form still works.
  const ok = await submitLogin(browser, url, html, user.email, PASSWORD);
  assert.equal(ok.status, 303);
});

test('failed logins are rate-limited per account with 429 and Retry-After', async () => {
  const victim = await seedUser(server.handle);
  const { browser, html, url } = await openLoginPage();
  let page = html;
  for (let i = 0; i < 5; i++) {
    const res = await submitLogin(browser, url, page, victim.email, `wrong ${i}`);
    assert.equal(res.status, 401);
    page = await res.text();
  }
  const limited = await submitLogin(browser, url, page, victim.email.toUpperCase(), PASSWORD);
  assert.equal(limited.status, 429);
  const retry = Number(limited.headers.get('retry-after'));
  assert.ok(retry > 0 && retry <= 900, `Retry-After ${retry}`);
  assert.match(await limited.text(), /Too many failed sign-in attempts/);
  // Another account from the same place is not affected.
  const other = await submitLogin(browser, url, page, user.email, PASSWORD);
  assert.equal(other.status, 303);
});

test('failed logins are rate-limited per IP', async () => {
  const s = await startServer(makeTestStore(), { options: { loginLimits: { perAccount: 100, perIp: 3, windowMs: 60_000 } } });
  try {
    const u = await seedUser(s.handle);
    const c = await makeClient(s);
    const { url } = await authUrl(c);
    const browser = new Browser();
    const first = await browser.follow(url, () => false);
    let page = await first.res.text();
    for (let i = 0; i < 3; i++) {
      const res = await submitLogin(browser, first.url, page, `someone${i}@example.com`, 'x');
      assert.equal(res.status, 401);
      page = await res.text();
    }
    const limited = await submitLogin(browser, first.url, page, u.email, PASSWORD);
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.headers.get('retry-after')) > 0);
  } finally {
    await s.stop();
    await s.store.destroy();
  }
});

test('everything echoed is escaped', async () => {
  const { browser, html, url } = await openLoginPage();
  const evil = '"><script>alert(1)</script>@x.example';
  const res = await submitLogin(browser, url, html, evil, 'x');
  const text = await res.text();
  assert.doesNotMatch(text, /<script>/);
  assert.match(text, /value="&#34;&#62;&#60;script&#62;alert\(1\)&#60;\/script&#62;@x.example"/);
});

test('an unknown or finished interaction answers with an expiry page', async () => {
  const res = await fetch(`${server.baseUrl}/oauth2/interaction/doesnotexist`);
  assert.equal(res.status, 400);
  assert.match(await res.text(), /expired/);
  const post = await fetch(`${server.baseUrl}/oauth2/interaction/doesnotexist`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'email=a&password=b&csrf=c',
  });
  assert.equal(post.status, 400);
});

test('with an existing session, prompt=login shows the company of the signed-in user', async () => {
  const browser = new Browser();
  await fullFlow(client, user.email, {}, browser);
  const { html } = await openLoginPage(client, { prompt: 'login' }, browser);
  assert.match(html, /Sign in to Umbrella &#38; &#60;Sons&#62;/);
});

test('the session cookie is HttpOnly and SameSite=Lax', async () => {
  const { browser, html, url } = await openLoginPage();
  const res = await submitLogin(browser, url, html, user.email, PASSWORD);
  assert.equal(res.status, 303);
  const resumed = await fetch(new URL(res.headers.get('location')!, url), {
    redirect: 'manual',
    headers: { cookie: browser.cookies.map((c) => `${c.name}=${c.value}`).join('; ') },
  });
  const setCookies = resumed.headers.getSetCookie().filter((c) => c.startsWith('_fg_session='));
  assert.ok(setCookies.length > 0);
  for (const c of setCookies) {
    assert.match(c, /httponly/i);
    assert.match(c, /samesite=lax/i);
  }
});

test('a user disabled while signed in gets no new code from the existing session', async () => {
  const u = await seedUser(server.handle);
  const browser = new Browser();
  await fullFlow(client, u.email, {}, browser);
  await server.handle.db.updateTable('users').set({ disabled: 1 }).where('id', '=', u.id).execute();
  // Silent authorization: login_required, no code.
  const silent = await authUrl(client, { prompt: 'none' });
  const s1 = await browser.follow(silent.url, (l) => l.startsWith('http://127.0.0.1:9/'));
  assert.ok(s1.stopped);
  assert.equal(new URL(s1.url).searchParams.get('error'), 'login_required');
  assert.equal(new URL(s1.url).searchParams.get('code'), null);
  // Interactive: asked to sign in again, and refused.
  const { url } = await authUrl(client);
  const r = await browser.follow(url, (l) => l.startsWith('http://127.0.0.1:9/'));
  assert.equal(r.stopped, false);
  assert.equal(r.res.status, 200);
  const html = await r.res.text();
  assert.match(html, /name="password"/);
  assert.match(html, /Sign in to flowgate/, 'the disabled account\'s company is not shown');
  const res = await submitLogin(browser, r.url, html, u.email, PASSWORD);
  assert.equal(res.status, 403);
  // Another user can sign in from this browser.
  const ok = await submitLogin(browser, r.url, html, user.email, PASSWORD);
  assert.equal(ok.status, 303);
});
