// Secret token format, after GitHub's: `<prefix>_<30 base62 random><6 base62 CRC32>`.
// 30 base62 characters carry ~178 bits. The checksum lets us refuse a typo or a
// scanner's false positive without touching the database, and lets secret scanners
// recognise our tokens.
import crypto from 'node:crypto';
import zlib from 'node:zlib';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BODY_LEN = 30;
const CHECK_LEN = 6;

function base62(n: number, width: number): string {
  let s = '';
  for (let i = 0; i < width; i++) {
    s = ALPHABET[n % 62] + s;
    n = Math.floor(n / 62);
  }
  return s;
}

function randomBase62(len: number): string {
  // Rejection sampling keeps the distribution uniform.
  let out = '';
  while (out.length < len) {
    for (const b of crypto.randomBytes(len * 2)) {
      if (b < 248) out += ALPHABET[b % 62];
      if (out.length === len) break;
    }
  }
  return out;
}

export function generateToken(prefix: string): string {
  const head = `${prefix}_${randomBase62(BODY_LEN)}`;
  return head + base62(zlib.crc32(head), CHECK_LEN);
}

export function hasValidChecksum(token: string, prefix: string): boolean {
  const expectedLen = prefix.length + 1 + BODY_LEN + CHECK_LEN;
  if (token.length !== expectedLen || !token.startsWith(prefix + '_')) return false;
  if (!/^[0-9A-Za-z]+$/.test(token.slice(prefix.length + 1))) return false;
  const head = token.slice(0, -CHECK_LEN);
  return base62(zlib.crc32(head), CHECK_LEN) === token.slice(-CHECK_LEN);
}

/** What lists show instead of the value: prefix and last four characters. */
export function tokenHint(token: string): string {
  const i = token.indexOf('_');
  return `${token.slice(0, i + 1)}...${token.slice(-4)}`;
}

/** Keyed digest; only this is stored. Pass a KeyObject on hot paths: building one per call is costly. */
export function tokenDigest(key: Buffer | crypto.KeyObject, token: string): string {
  return crypto.createHmac('sha256', key).update(token).digest('hex');
}

export function digestKey(raw: Buffer): crypto.KeyObject {
  return crypto.createSecretKey(raw);
}

export function timingSafeEqualHex(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  return crypto.timingSafeEqual(Buffer.from(a, 'hex'), Buffer.from(b, 'hex'));
}
