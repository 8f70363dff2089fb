// Removes secrets from text that is about to leave the runtime (error messages, logs).
import type { ResolvedCredential } from './types.ts';

export const REDACTED = '***';

/** The forms under which a secret may show up in text: as is, and URL-encoded. */
function secretForms(secret: string): string[] {
  const forms = new Set<string>([secret]);
  const add = (f: () => string) => {
    try {
      forms.add(f());
    } catch {
      // lone surrogates cannot be URL-encoded; the raw form is still scrubbed
    }
  };
  add(() => encodeURIComponent(secret));
  add(() => encodeURI(secret));
  // application/x-www-form-urlencoded (spaces as '+') and WHATWG userinfo encoding
  add(() => new URLSearchParams({ s: secret }).toString().slice(2));
  add(() => {
    const u = new URL('x://h');
    u.password = secret;
    return u.password;
  });
  forms.delete('');
  return [...forms];
}

/**
 * Replaces every occurrence of each non-empty secret, and of its URL-encoded forms, by '***'.
 * Longer forms are replaced first, so a secret that contains another is removed whole.
 */
export function scrubSecrets(message: string, secrets: ReadonlyArray<string | null | undefined>): string {
  if (typeof message !== 'string' || message === '') return message;
  const forms = new Set<string>();
  for (const s of secrets) {
    if (typeof s === 'string' && s !== '') for (const f of secretForms(s)) forms.add(f);
  }
  let out = message;
  for (const f of [...forms].sort((a, b) => b.length - a.length)) {
    if (out.includes(f)) out = out.split(f).join(REDACTED);
  }
  return out;
}

/** Applies scrubSecrets to every string (values and keys) of a JSON-like value. */
export function scrubDeep(value: unknown, secrets: ReadonlyArray<string | null | undefined>): unknown {
  if (!secrets.some((s) => typeof s === 'string' && s !== '')) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return scrubSecrets(v, secrets);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[scrubSecrets(k, secrets)] = walk(x);
      return out;
    }
    return v;
  };
  return walk(value);
}

/**
 * Minimum length of an authDetails string value treated as a secret. Shorter values (scopes,
 * flags, grant types) would otherwise mangle ordinary words in messages.
 */
const MIN_DETAIL_SECRET_LENGTH = 8;

/**
 * Every secret a credential carries: password, token, the password in the endpoint URL's
 * user-info, the Basic-auth token built from them, and the string values of authDetails
 * (JSON; when it is not JSON the whole string).
 */
export function credentialSecrets(cred: ResolvedCredential, extra: ReadonlyArray<string | null | undefined> = []): string[] {
  const out = new Set<string>();
  const add = (s: string | null | undefined) => {
    if (typeof s === 'string' && s !== '') out.add(s);
  };
  add(cred.password);
  add(cred.authToken);
  extra.forEach(add);
  if (cred.apiEndpoint) {
    try {
      const u = new URL(cred.apiEndpoint);
      if (u.password) {
        add(u.password);
        try {
          add(decodeURIComponent(u.password));
        } catch {
          // malformed escape: the raw form is already in
        }
      }
    } catch {
      // unparsable endpoint: nothing structured to take out
    }
  }
  if (cred.authDetails) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(cred.authDetails);
    } catch {
      parsed = undefined;
    }
    if (parsed === null || typeof parsed !== 'object') add(cred.authDetails);
    const walk = (v: unknown) => {
      if (typeof v === 'string') {
        if (v.length >= MIN_DETAIL_SECRET_LENGTH) add(v);
      } else if (Array.isArray(v)) v.forEach(walk);
      else if (v !== null && typeof v === 'object') Object.values(v).forEach(walk);
    };
    walk(parsed);
  }
  for (const s of [...out]) {
    // Basic auth header values built from a secret
    if (cred.username) add(Buffer.from(`${cred.username}:${s}`).toString('base64'));
  }
  return [...out];
}
