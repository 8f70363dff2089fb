// The OAuth login flow with plain fetch, for the benchmark: authorization request with PKCE,
// the login form (e-mail, password, CSRF token), the redirect with the code, the code
// exchange. No test dependencies. The server may publish another host name for itself
// (FLOWGATE_BASE_URL); every URL it sends back is fetched on `url`'s origin instead.
import crypto from 'node:crypto';

export const BENCH_REDIRECT_URI = 'http://127.0.0.1:9/callback';

export interface OAuthTokens { access_token: string; refresh_token: string; id_token: string; expires_in: number }

class Jar {
  #cookies = new Map<string, string>();
  store(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const i = pair.indexOf('=');
      const name = pair.slice(0, i).trim();
      const expired = attrs.some((a) => /^\s*max-age\s*=\s*0\s*$/i.test(a));
      if (expired) this.#cookies.delete(name);
      else this.#cookies.set(name, pair.slice(i + 1).trim());
    }
  }
  header(): string {
    return [...this.#cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

/** Logs `email` in and returns the tokens of the code exchange (scope "email openid"). */
export async function oauthLogin(url: string, client: { client_id: string; client_secret: string }, email: string, password: string): Promise<OAuthTokens> {
  const origin = new URL(url).origin;
  const local = (u: string, base: string) => {
    const abs = new URL(u, base);
    return abs.href.startsWith(BENCH_REDIRECT_URI) ? abs.href : origin + abs.pathname + abs.search;
  };
  const jar = new Jar();
  const get = async (u: string, init: RequestInit = {}) => {
    const res = await fetch(u, { ...init, redirect: 'manual', headers: { ...(init.headers as Record<string, string>), cookie: jar.header() } });
    jar.store(res);
    return res;
  };
  /** Follows redirects until the client's redirect URI (returned) or a page (returned with its URL). */
  const follow = async (start: string): Promise<{ callback?: string; page?: string; at: string }> => {
    let at = start;
    for (let i = 0; i < 10; i++) {
      const res = await get(at);
      const loc = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && loc) {
        await res.arrayBuffer();
        const next = local(loc, at);
        if (next.startsWith(BENCH_REDIRECT_URI)) return { callback: next, at };
        at = next;
        continue;
      }
      return { page: await res.text(), at };
    }
    throw new Error('too many redirects');
  };

  const verifier = crypto.randomBytes(32).toString('base64url');
  const challenge = crypto.createHash('sha256').update(verifier).digest('base64url');
  const q = new URLSearchParams({
    response_type: 'code', client_id: client.client_id, redirect_uri: BENCH_REDIRECT_URI, scope: 'email openid',
    state: crypto.randomBytes(8).toString('hex'), code_challenge: challenge, code_challenge_method: 'S256',
  });
  const form = await follow(`${origin}/oauth2/authorize?${q}`);
  let callback = form.callback;
  if (!callback) {
    const html = form.page ?? '';
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1]?.replace(/&#38;/g, '&');
    const csrf = /name="csrf" value="([^"]*)"/.exec(html)?.[1];
    if (!action || !csrf) throw new Error(`no login form: ${html.slice(0, 200)}`);
    const posted = await get(local(action, form.at), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf, email, password }).toString(),
    });
    await posted.arrayBuffer();
    if (posted.status !== 303) throw new Error(`login failed: ${posted.status}`);
    const done = await follow(local(posted.headers.get('location')!, form.at));
    callback = done.callback;
    if (!callback) throw new Error(`no redirect to the client: ${done.page?.slice(0, 200)}`);
  }
  const code = new URL(callback).searchParams.get('code');
  if (!code) throw new Error(`no code: ${callback}`);
  const res = await fetch(`${origin}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuth(client) },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: BENCH_REDIRECT_URI, code_verifier: verifier }),
  });
  const body = await res.json() as OAuthTokens;
  if (res.status !== 200 || !body.refresh_token) throw new Error(`code exchange failed: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

export function basicAuth(client: { client_id: string; client_secret: string }): string {
  return 'Basic ' + Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64');
}

/** The seed's refresh request (section 4.4). */
export function seedRefreshBody(clientId: string, refreshToken: string): string {
  return `grant_type=refresh_token&client_id=${encodeURIComponent(clientId)}&refresh_token=${encodeURIComponent(refreshToken)}`;
}
