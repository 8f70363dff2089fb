// ID-token signing keys: generated on first start, private JWKs stored encrypted with the key ring.
//
// A key's state follows from timestamps alone, so every instance derives the same picture:
//   next     activates_at in the future: published in JWKS (key_ops ["verify"]), not signing
//   current  the newest key of its alg whose activates_at has passed: signs ID tokens
//   retired  superseded: still published until the newest ID token it signed has expired
//            (successor's activates_at + ID-token TTL + clock tolerance), then deleted
// `rotate()` adds a new ES256 and RS256 key that activate after a delay (default 1 hour), so
// clients that cache the JWKS see a key before any token is signed with it.
import crypto from 'node:crypto';
import { promisify } from 'node:util';
import type { Keyring } from '../../crypto/keyring.ts';
import { registerSecretColumn } from '../../crypto/secret-registry.ts';
import { nowIso } from '../../db/time.ts';
import type { OAuthDb } from './db.ts';
import type { OAuthSigningKeyRow } from './tables.ts';

registerSecretColumn({
  table: 'oauth_signing_keys',
  idColumn: 'kid',
  column: 'private_jwk',
  aadColumns: ['kid'],
  aad: (row) => signingKeyAad(String(row.kid)),
});

export function signingKeyAad(kid: string): string {
  return `oauth_signing_key:${kid}`;
}

export const SIGNING_ALGS = ['ES256', 'RS256'] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];
export type KeyStatus = 'current' | 'next' | 'retired' | 'expired';

export interface SigningKeyInfo {
  kid: string;
  alg: string;
  status: KeyStatus;
  createdAt: string;
  activatesAt: string;
  /** For retired keys: when the key leaves the JWKS. */
  publishedUntil: string | null;
}

export interface SigningKeysOptions {
  /** Longest lifetime of anything signed with these keys (the ID-token TTL), seconds. */
  signedTokenTtlSeconds: number;
  clockToleranceSeconds: number;
  /** Delay between publishing a rotated key and signing with it, seconds. */
  activationDelaySeconds: number;
}

export interface LoadedKeys {
  /** For oidc-provider's `jwks` option: private JWKs, current keys first. */
  jwks: { keys: Array<Record<string, unknown>> };
  /** Changes whenever the published set or a key's role changes. */
  signature: string;
  /** Epoch ms of the next time-driven change (activation or end of publication), or null. */
  nextChangeAt: number | null;
}

const generateKeyPair = promisify(crypto.generateKeyPair);

async function generate(alg: SigningAlg): Promise<{ kid: string; privateJwk: crypto.JsonWebKey; publicJwk: Record<string, unknown> }> {
  const { privateKey } = alg === 'ES256'
    ? await generateKeyPair('ec', { namedCurve: 'P-256' })
    : await generateKeyPair('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  // RFC 7638 thumbprint as kid (what oidc-provider would compute).
  const members = jwk.kty === 'EC'
    ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }
    : { e: jwk.e, kty: jwk.kty, n: jwk.n };
  const kid = crypto.createHash('sha256').update(JSON.stringify(members)).digest('base64url');
  const privateJwk = { ...jwk, kid, alg, use: 'sig' };
  const publicJwk = { ...members, kid, alg, use: 'sig' };
  return { kid, privateJwk, publicJwk };
}

interface Derived { row: OAuthSigningKeyRow; status: KeyStatus; publishedUntil: number | null }

export class SigningKeys {
  readonly #db: OAuthDb;
  readonly #keyring: Keyring;
  readonly #opts: SigningKeysOptions;

  constructor(db: OAuthDb, keyring: Keyring, opts: SigningKeysOptions) {
    this.#db = db;
    this.#keyring = keyring;
    this.#opts = opts;
  }

  /** Creates an immediately active key for every algorithm that has none (first start). */
  async ensure(): Promise<void> {
    const rows = await this.#db.selectFrom('oauth_signing_keys').select(['alg']).execute();
    const have = new Set(rows.map((r) => r.alg));
    for (const alg of SIGNING_ALGS) {
      if (!have.has(alg)) await this.#insert(alg, Date.now());
    }
  }

  /**
   * Publishes a new key per algorithm. It signs from `activatesAt` on (after the activation
   * delay, or at once with `immediate`); the previous key stays in the JWKS until the ID tokens
   * it signed have expired.
   */
  async rotate(opts: { immediate?: boolean } = {}): Promise<{ kid: string; kids: string[]; activatesAt: string }> {
    const at = Date.now() + (opts.immediate ? 0 : this.#opts.activationDelaySeconds * 1000);
    const kids: string[] = [];
    for (const alg of SIGNING_ALGS) kids.push(await this.#insert(alg, at));
    return { kid: kids[0], kids, activatesAt: new Date(at).toISOString() };
  }

  async #insert(alg: SigningAlg, activatesAt: number): Promise<string> {
    const { kid, privateJwk, publicJwk } = await generate(alg);
    await this.#db.insertInto('oauth_signing_keys').values({
      kid,
      alg,
      private_jwk: this.#keyring.encrypt(JSON.stringify(privateJwk), signingKeyAad(kid)),
      public_jwk: JSON.stringify(publicJwk),
      created_at: nowIso(),
      activates_at: new Date(activatesAt).toISOString(),
    }).execute();
    return kid;
  }

  async #derive(now: number): Promise<Derived[]> {
    const rows = await this.#db.selectFrom('oauth_signing_keys').selectAll().execute();
    const out: Derived[] = [];
    const keep = (this.#opts.signedTokenTtlSeconds + this.#opts.clockToleranceSeconds) * 1000;
    for (const alg of new Set(rows.map((r) => r.alg))) {
      const ofAlg = rows.filter((r) => r.alg === alg).sort((a, b) =>
        a.activates_at.localeCompare(b.activates_at) || a.created_at.localeCompare(b.created_at) || a.kid.localeCompare(b.kid));
      const active = ofAlg.filter((r) => Date.parse(r.activates_at) <= now);
      active.forEach((row, i) => {
        if (i === active.length - 1) {
          out.push({ row, status: 'current', publishedUntil: null });
        } else {
          const until = Date.parse(active[i + 1].activates_at) + keep;
          out.push({ row, status: until > now ? 'retired' : 'expired', publishedUntil: until });
        }
      });
      for (const row of ofAlg) {
        if (Date.parse(row.activates_at) > now) out.push({ row, status: 'next', publishedUntil: null });
      }
    }
    return out;
  }

  async list(now = Date.now()): Promise<SigningKeyInfo[]> {
    const order: Record<KeyStatus, number> = { current: 0, next: 1, retired: 2, expired: 3 };
    return (await this.#derive(now))
      .sort((a, b) => order[a.status] - order[b.status] || a.row.alg.localeCompare(b.row.alg))
      .map((d) => ({
        kid: d.row.kid,
        alg: d.row.alg,
        status: d.status,
        createdAt: d.row.created_at,
        activatesAt: d.row.activates_at,
        publishedUntil: d.publishedUntil === null ? null : new Date(d.publishedUntil).toISOString(),
      }));
  }

  /** The key set for the provider (decrypting private keys, at use). */
  async load(now = Date.now()): Promise<LoadedKeys> {
    const derived = (await this.#derive(now)).filter((d) => d.status !== 'expired');
    const rank = (s: KeyStatus) => (s === 'current' ? 0 : s === 'next' ? 1 : 2);
    const algRank = (a: string) => SIGNING_ALGS.indexOf(a as SigningAlg);
    derived.sort((a, b) => rank(a.status) - rank(b.status) || algRank(a.row.alg) - algRank(b.row.alg));
    const keys: Array<Record<string, unknown>> = [];
    for (const d of derived) {
      const jwk = JSON.parse(await this.#keyring.decryptStringAsync(d.row.private_jwk, signingKeyAad(d.row.kid))) as Record<string, unknown>;
      // Only current keys may sign; the others are published for verification only.
      if (d.status !== 'current') jwk.key_ops = ['verify'];
      keys.push(jwk);
    }
    const changes = derived.flatMap((d) => [
      d.status === 'next' ? Date.parse(d.row.activates_at) : null,
      d.status === 'retired' ? d.publishedUntil : null,
    ]).filter((t): t is number => t !== null && t > now);
    return {
      jwks: { keys },
      signature: derived.map((d) => `${d.row.kid}:${d.status}`).join(','),
      nextChangeAt: changes.length ? Math.min(...changes) : null,
    };
  }

  /** A cheap fingerprint of the table, to notice rotations made by another process. */
  async tableSignature(): Promise<string> {
    const rows = await this.#db.selectFrom('oauth_signing_keys').select(['kid', 'activates_at']).orderBy('kid').execute();
    return rows.map((r) => `${r.kid}@${r.activates_at}`).join(',');
  }

  /** Deletes keys that are no longer published. */
  async prune(now = Date.now()): Promise<number> {
    const expired = (await this.#derive(now)).filter((d) => d.status === 'expired').map((d) => d.row.kid);
    if (expired.length === 0) return 0;
    const res = await this.#db.deleteFrom('oauth_signing_keys').where('kid', 'in', expired).executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}
