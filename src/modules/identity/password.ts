// argon2id via @node-rs/argon2 (N-API with prebuilt binaries; no compile step).
import { hash, verify } from '@node-rs/argon2';
import crypto from 'node:crypto';

// OWASP's argon2id baseline: m=19 MiB, t=2, p=1.
const OPTIONS = { memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return hash(password, OPTIONS);
}

// A fixed hash to verify against when the user does not exist, so an unknown e-mail costs
// the same time as a wrong password.
let dummyHash: Promise<string> | null = null;

export async function verifyPassword(stored: string | null, password: string): Promise<boolean> {
  if (!stored) {
    dummyHash ??= hash(crypto.randomBytes(16).toString('hex'), OPTIONS);
    await verify(await dummyHash, password).catch(() => false);
    return false;
  }
  try {
    return await verify(stored, password);
  } catch {
    return false;
  }
}

export function randomPassword(): string {
  return crypto.randomBytes(18).toString('base64url');
}
