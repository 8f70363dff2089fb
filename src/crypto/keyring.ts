// Envelope encryption for stored secrets (AES-256-GCM, node:crypto only).
//
//   master key (KEK)  — FLOWGATE_ENCRYPTION_KEY, or <dataDir>/master.key created on first start
//     └─ wraps data keys (DEKs) — rows of `encryption_keys` (k1, k2, …; exactly one active)
//          └─ encrypt secrets — `fg1:<keyId>:<iv b64url>:<ciphertext+tag b64url>`
//
// The master key never touches the database; only its fingerprint (an HMAC of a fixed label)
// is stored in `settings`, so that starting with the wrong key fails before anything is written.
import fs from 'node:fs';
import path from 'node:path';
import crypto, { type KeyObject } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { isUniqueViolation, type Db } from '../db/index.ts';
import { nowIso } from '../db/time.ts';
import { registerSecretColumn, secretColumns, type SecretColumn } from './secret-registry.ts';

const FINGERPRINT_SETTING = 'master_key_fingerprint';
const FINGERPRINT_LABEL = 'flowgate key fingerprint v1';
const KEY_FILE_NAME = 'master.key';
const CT_VERSION = 'fg1';
const WRAP_VERSION = 'fgk1';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const NAMED_SECRET_PREFIX = 'secret:';
const B64URL = /^[A-Za-z0-9_-]*$/;
const KEY_ID = /^[A-Za-z0-9_-]{1,64}$/;

// Named secrets live in `settings` under `secret:<name>`; register them so rotate/status see them.
registerSecretColumn({
  table: 'settings',
  idColumn: 'key',
  column: 'value',
  aadColumns: ['key'],
  where: { column: 'key', prefix: NAMED_SECRET_PREFIX },
  aad: (row) => `setting:${String(row.key).slice(NAMED_SECRET_PREFIX.length)}`,
});

/** The master key does not match the one the database was initialised with. Nothing was written. */
export class KeyMismatchError extends Error {
  readonly fingerprint: string;
  readonly expectedFingerprint: string | null;
  constructor(message: string, fingerprint: string, expectedFingerprint: string | null) {
    super(message);
    this.name = 'KeyMismatchError';
    this.fingerprint = fingerprint;
    this.expectedFingerprint = expectedFingerprint;
  }
}

export type DecryptFailure = 'malformed' | 'unknown_key' | 'auth_failed';

/** Any decryption failure. The message never contains plaintext, ciphertext or key material. */
export class DecryptError extends Error {
  readonly reason: DecryptFailure;
  constructor(reason: DecryptFailure, detail?: string) {
    const text = reason === 'malformed'
      ? 'malformed ciphertext'
      : reason === 'unknown_key'
        ? `unknown data key${detail ? ` ${detail}` : ''}`
        : 'authentication failed (wrong key, wrong associated data or tampered ciphertext)';
    super(`Could not decrypt secret: ${text}`);
    this.name = 'DecryptError';
    this.reason = reason;
  }
}

export interface KeyringOpenOptions {
  db: Db;
  dataDir: string;
  /** FLOWGATE_ENCRYPTION_KEY (base64 of 32 bytes), or null to use `<dataDir>/master.key`. */
  masterKeyB64: string | null;
}

export interface RotateOptions {
  /** Rows read and re-encrypted per batch (default 200). */
  batchSize?: number;
  /** Test hook: runs after a batch has been read and re-encrypted in memory, before it is written. */
  beforeBatchWrite?: (info: { table: string; column: string; ids: unknown[] }) => Promise<void> | void;
}

export interface RotateResult {
  newKeyId: string;
  /** Stored ciphertexts rewritten with the new key. */
  reencrypted: number;
  /** Rows that could not be decrypted (left unchanged, still on their old key). */
  skipped: number;
}

export interface KeyStatus {
  fingerprint: string;
  activeKeyId: string;
  keys: Array<{ id: string; status: string; created_at: string; records: number }>;
}

interface DataKey { id: string; key: KeyObject; status: string; created_at: string }
interface MasterKey { key: Buffer; source: 'env' | 'file'; file: string | null; pendingFile: boolean }
interface Parsed { keyId: string; iv: Buffer; body: Buffer }

export class Keyring {
  #db: Db;
  #kek: KeyObject;
  #fingerprint: string;
  #source: 'env' | 'file';
  #keyFile: string | null;
  #keys = new Map<string, DataKey>();
  #active = '';
  #reloading: Promise<void> | null = null;
  #named = new Map<string, Buffer>();

  private constructor(db: Db, kek: KeyObject, fingerprint: string, source: 'env' | 'file', keyFile: string | null) {
    this.#db = db;
    this.#kek = kek;
    this.#fingerprint = fingerprint;
    this.#source = source;
    this.#keyFile = keyFile;
  }

  static async open(opts: KeyringOpenOptions): Promise<Keyring> {
    const db = opts.db;
    const mk = loadMasterKey(opts.dataDir, opts.masterKeyB64);
    const stored = await readFingerprint(db);

    if (mk.pendingFile) {
      // No key file yet. If the database was already initialised, a fresh random key cannot be
      // the right one: refuse before writing the file (unless a racing process just created it).
      const hasKeys = (await db.selectFrom('encryption_keys').select('id').limit(1).execute()).length > 0;
      const raced = stored !== undefined || hasKeys ? readKeyFile(mk.file!) : null;
      if (raced) {
        mk.key = raced;
        mk.pendingFile = false;
      } else if (stored !== undefined || hasKeys) {
        throw new KeyMismatchError(
          `The master key file ${mk.file} does not exist, but this database was already encrypted with another key ` +
            `(expected fingerprint ${stored ?? 'unknown'}); restore the key file or set FLOWGATE_ENCRYPTION_KEY; ` +
            'refusing to start. Nothing was changed.',
          fingerprintOf(mk.key),
          stored ?? null,
        );
      } else {
        mk.key = persistKeyFile(mk.file!, mk.key);
      }
    }

    const fingerprint = fingerprintOf(mk.key);
    const describe = mk.source === 'env' ? 'FLOWGATE_ENCRYPTION_KEY' : `The master key file ${mk.file}`;
    if (stored !== undefined && stored !== fingerprint) {
      throw new KeyMismatchError(
        `${describe} does not match the key this database was encrypted with ` +
          `(fingerprint ${fingerprint}, expected ${stored}); refusing to start. Nothing was changed.`,
        fingerprint,
        stored,
      );
    }
    const kek = crypto.createSecretKey(mk.key);
    mk.key.fill(0);

    if (stored === undefined || !(await hasActiveKey(db))) {
      await withTransientRetry(() => initialise(db, kek, fingerprint, describe));
    }

    const ring = new Keyring(db, kek, fingerprint, mk.source, mk.file);
    await ring.reload();
    return ring;
  }

  get fingerprint(): string {
    return this.#fingerprint;
  }

  get activeKeyId(): string {
    return this.#active;
  }

  /** Where the master key came from; callers may warn about a key file next to a remote database. */
  get keySource(): 'env' | 'file' {
    return this.#source;
  }

  /** Path of the master key file when keySource is 'file', else null. */
  get keyFile(): string | null {
    return this.#keyFile;
  }

  encrypt(plaintext: string | Buffer, aad: string): string {
    return this.#encryptWith(this.#active, plaintext, aad);
  }

  decrypt(ciphertext: string, aad: string): Buffer {
    if (typeof aad !== 'string') throw new TypeError('aad must be a string');
    const p = parse(ciphertext);
    if (!p) throw new DecryptError('malformed');
    const dk = this.#keys.get(p.keyId);
    if (!dk) throw new DecryptError('unknown_key', p.keyId);
    try {
      const d = crypto.createDecipheriv('aes-256-gcm', dk.key, p.iv, { authTagLength: TAG_BYTES });
      d.setAAD(Buffer.from(aad, 'utf8'));
      d.setAuthTag(p.body.subarray(p.body.length - TAG_BYTES));
      return Buffer.concat([d.update(p.body.subarray(0, p.body.length - TAG_BYTES)), d.final()]);
    } catch {
      throw new DecryptError('auth_failed');
    }
  }

  decryptString(ciphertext: string, aad: string): string {
    return this.decrypt(ciphertext, aad).toString('utf8');
  }

  /** Like decrypt, but on an unknown key id reloads the data keys once (another process may have rotated). */
  async decryptAsync(ciphertext: string, aad: string): Promise<Buffer> {
    const p = parse(ciphertext);
    if (p && !this.#keys.has(p.keyId)) await this.reload();
    return this.decrypt(ciphertext, aad);
  }

  async decryptStringAsync(ciphertext: string, aad: string): Promise<string> {
    return (await this.decryptAsync(ciphertext, aad)).toString('utf8');
  }

  keyIdOf(ciphertext: string): string {
    const p = parse(ciphertext);
    if (!p) throw new DecryptError('malformed');
    return p.keyId;
  }

  /** Reloads DEKs from the database (another process may have rotated). */
  async reload(): Promise<void> {
    if (!this.#reloading) {
      this.#reloading = this.#load().finally(() => {
        this.#reloading = null;
      });
    }
    return this.#reloading;
  }

  async #load(): Promise<void> {
    const rows = await this.#db.selectFrom('encryption_keys').selectAll().execute();
    const keys = new Map<string, DataKey>();
    const active: string[] = [];
    for (const row of rows) {
      const prev = this.#keys.get(row.id);
      let key = prev?.key;
      if (!key) {
        const raw = unwrapDek(this.#kek, row.id, row.wrapped_key);
        if (!raw) throw new Error(`Data key ${row.id} in encryption_keys cannot be unwrapped with the master key (corrupted row?)`);
        key = crypto.createSecretKey(raw);
        raw.fill(0);
      }
      keys.set(row.id, { id: row.id, key, status: row.status, created_at: row.created_at });
      if (row.status === 'active') active.push(row.id);
    }
    if (active.length === 0) throw new Error('encryption_keys has no active data key');
    // Exactly one should be active; if a crash ever left two, prefer the newest.
    active.sort(compareKeyIds);
    this.#keys = keys;
    this.#active = active[active.length - 1];
  }

  /**
   * Creates a new active DEK (old -> retired but kept for decryption), then re-encrypts every
   * registered secret column with it, in batches, each row updated only if its ciphertext did
   * not change meanwhile (compare-and-set), so it is safe while the service runs.
   */
  async rotate(opts: RotateOptions = {}): Promise<RotateResult> {
    const batchSize = Math.max(1, Math.floor(opts.batchSize ?? 200));
    const newKeyId = await withTransientRetry(() => this.#createKey());
    await this.reload();
    // Another process may have rotated again meanwhile: re-encrypt to whatever is active now.
    const target = this.#active;
    let reencrypted = 0;
    let skipped = 0;
    for (const col of secretColumns()) {
      const bad = new Set<string>();
      for (let pass = 0; pass < 5; pass++) {
        const r = await this.#reencryptColumn(col, target, batchSize, bad, opts.beforeBatchWrite);
        reencrypted += r.updated;
        // A row changed under us: its new value may still use an old key, so go round again.
        if (r.conflicts === 0) break;
      }
      skipped += bad.size;
    }
    return { newKeyId, reencrypted, skipped };
  }

  async #createKey(): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      const ids = (await this.#db.selectFrom('encryption_keys').select('id').execute()).map((r) => r.id);
      const max = ids.reduce((m, id) => Math.max(m, keyNumber(id)), 0);
      const id = `k${max + 1}`;
      const dek = crypto.randomBytes(KEY_BYTES);
      const wrapped = wrapDek(this.#kek, id, dek);
      dek.fill(0);
      try {
        await this.#db.transaction().execute(async (trx) => {
          // Write first: on SQLite this takes the write lock up front.
          await trx.insertInto('encryption_keys')
            .values({ id, wrapped_key: wrapped, status: 'active', created_at: nowIso() })
            .execute();
          await trx.updateTable('encryption_keys')
            .set({ status: 'retired' })
            .where('status', '=', 'active')
            .where('id', '!=', id)
            .execute();
        });
        return id;
      } catch (err) {
        // A concurrent rotation took this id: pick the next one.
        if (isUniqueViolation(err) && attempt < 10) continue;
        throw err;
      }
    }
  }

  async #reencryptColumn(
    col: SecretColumn,
    target: string,
    batchSize: number,
    bad: Set<string>,
    hook: RotateOptions['beforeBatchWrite'],
  ): Promise<{ updated: number; conflicts: number }> {
    const db = this.#db as unknown as Kysely<any>;
    const columns = [...new Set([col.idColumn, col.column, ...col.aadColumns])];
    const targetPrefix = `${CT_VERSION}:${target}:`;
    let updated = 0;
    let conflicts = 0;
    let last: unknown = undefined;
    for (;;) {
      let q = db.selectFrom(col.table)
        .select(columns)
        .where(col.column, 'is not', null)
        .where(col.column, '!=', '')
        .where(sql<boolean>`not (${startsWith(col.column, targetPrefix)})`);
      if (col.where) q = q.where(startsWith(col.where.column, col.where.prefix));
      if (last !== undefined) q = q.where(col.idColumn, '>', last);
      const rows: Record<string, unknown>[] = await q.orderBy(col.idColumn).limit(batchSize).execute();
      if (rows.length === 0) break;
      last = rows[rows.length - 1][col.idColumn];

      const writes: Array<{ id: unknown; old: string; next: string }> = [];
      for (const row of rows) {
        const old = row[col.column];
        if (typeof old !== 'string' || old === '') continue;
        const id = row[col.idColumn];
        let next: string;
        try {
          const aad = col.aad(row);
          const plain = await this.decryptAsync(old, aad);
          next = this.#encryptWith(target, plain, aad);
          plain.fill(0);
        } catch (err) {
          if (!(err instanceof DecryptError)) throw err;
          bad.add(String(id));
          continue;
        }
        bad.delete(String(id));
        writes.push({ id, old, next });
      }
      if (hook) await hook({ table: col.table, column: col.column, ids: writes.map((w) => w.id) });
      if (writes.length === 0) continue;
      const [u, c] = await withTransientRetry(() => this.#db.transaction().execute(async (trx) => {
        const t = trx as unknown as Kysely<any>;
        let u = 0;
        let c = 0;
        for (const w of writes) {
          const res = await t.updateTable(col.table)
            .set({ [col.column]: w.next })
            .where(col.idColumn, '=', w.id)
            .where(col.column, '=', w.old)
            .executeTakeFirst();
          if (Number(res.numUpdatedRows) > 0) u++;
          else c++;
        }
        return [u, c] as const;
      }));
      updated += u;
      conflicts += c;
    }
    return { updated, conflicts };
  }

  /** Key ids with how many stored ciphertexts use each (over all registered columns), plus fingerprint. */
  async status(): Promise<KeyStatus> {
    await this.reload();
    const ids = [...this.#keys.keys()].sort(compareKeyIds);
    const counts = new Map<string, number>(ids.map((id) => [id, 0]));
    const db = this.#db as unknown as Kysely<any>;
    for (const col of secretColumns()) {
      let q = db.selectFrom(col.table).select(ids.map((id, i) =>
        sql<number>`coalesce(sum(case when ${startsWith(col.column, `${CT_VERSION}:${id}:`)} then 1 else 0 end), 0)`.as(`c${i}`)));
      if (col.where) q = q.where(startsWith(col.where.column, col.where.prefix));
      const row: Record<string, unknown> | undefined = await q.executeTakeFirst();
      ids.forEach((id, i) => counts.set(id, counts.get(id)! + Number(row?.[`c${i}`] ?? 0)));
    }
    return {
      fingerprint: this.#fingerprint,
      activeKeyId: this.#active,
      keys: ids.map((id) => {
        const k = this.#keys.get(id)!;
        return { id, status: k.status, created_at: k.created_at, records: counts.get(id)! };
      }),
    };
  }

  /**
   * A random 32-byte secret kept in `settings` under `secret:<name>`, encrypted with the keyring
   * (AAD `setting:<name>`); created on first call. Registered so rotate re-encrypts it.
   */
  async namedSecret(name: string): Promise<Buffer> {
    if (typeof name !== 'string' || name === '') throw new TypeError('namedSecret: name must be a non-empty string');
    const cached = this.#named.get(name);
    if (cached) return Buffer.from(cached);
    const key = NAMED_SECRET_PREFIX + name;
    const aad = `setting:${name}`;
    const read = () => this.#db.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirst();
    let row = await read();
    if (!row) {
      const fresh = crypto.randomBytes(KEY_BYTES);
      const value = this.encrypt(fresh, aad);
      fresh.fill(0);
      // Another process may create it at the same moment: keep whichever landed first.
      await this.#db.insertInto('settings').values({ key, value }).onConflict((oc) => oc.column('key').doNothing()).execute();
      row = await read();
      if (!row) throw new Error(`namedSecret: could not create settings row ${key}`);
    }
    const secret = await this.decryptAsync(row.value, aad);
    this.#named.set(name, Buffer.from(secret));
    return secret;
  }

  #encryptWith(keyId: string, plaintext: string | Buffer, aad: string): string {
    if (typeof aad !== 'string') throw new TypeError('aad must be a string');
    const dk = this.#keys.get(keyId);
    if (!dk) throw new Error(`Unknown data key ${keyId}`);
    const data = typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext;
    if (!Buffer.isBuffer(data)) throw new TypeError('plaintext must be a string or Buffer');
    const iv = crypto.randomBytes(IV_BYTES);
    const c = crypto.createCipheriv('aes-256-gcm', dk.key, iv, { authTagLength: TAG_BYTES });
    c.setAAD(Buffer.from(aad, 'utf8'));
    const body = Buffer.concat([c.update(data), c.final(), c.getAuthTag()]);
    return `${CT_VERSION}:${keyId}:${iv.toString('base64url')}:${body.toString('base64url')}`;
  }
}

// ---------------------------------------------------------------------------------------------

function parse(ct: unknown): Parsed | null {
  if (typeof ct !== 'string' || ct.length > 64 * 1024 * 1024) return null;
  const parts = ct.split(':');
  if (parts.length !== 4 || parts[0] !== CT_VERSION) return null;
  const [, keyId, ivText, bodyText] = parts;
  if (!KEY_ID.test(keyId) || !B64URL.test(ivText) || !B64URL.test(bodyText)) return null;
  const iv = Buffer.from(ivText, 'base64url');
  const body = Buffer.from(bodyText, 'base64url');
  // Canonical encodings only, so that any change to the text is a change to the bytes.
  if (iv.toString('base64url') !== ivText || body.toString('base64url') !== bodyText) return null;
  if (iv.length !== IV_BYTES || body.length < TAG_BYTES) return null;
  return { keyId, iv, body };
}

function fingerprintOf(kek: Buffer): string {
  return crypto.createHmac('sha256', kek).update(FINGERPRINT_LABEL).digest('hex').slice(0, 16);
}

function wrapDek(kek: KeyObject, id: string, dek: Buffer): string {
  const iv = crypto.randomBytes(IV_BYTES);
  const c = crypto.createCipheriv('aes-256-gcm', kek, iv, { authTagLength: TAG_BYTES });
  c.setAAD(Buffer.from(`flowgate dek ${id}`, 'utf8'));
  const body = Buffer.concat([c.update(dek), c.final(), c.getAuthTag()]);
  return `${WRAP_VERSION}:${iv.toString('base64url')}:${body.toString('base64url')}`;
}

function unwrapDek(kek: KeyObject, id: string, wrapped: string): Buffer | null {
  const parts = wrapped.split(':');
  if (parts.length !== 3 || parts[0] !== WRAP_VERSION) return null;
  const iv = Buffer.from(parts[1], 'base64url');
  const body = Buffer.from(parts[2], 'base64url');
  if (iv.length !== IV_BYTES || body.length !== KEY_BYTES + TAG_BYTES) return null;
  try {
    const d = crypto.createDecipheriv('aes-256-gcm', kek, iv, { authTagLength: TAG_BYTES });
    d.setAAD(Buffer.from(`flowgate dek ${id}`, 'utf8'));
    d.setAuthTag(body.subarray(KEY_BYTES));
    return Buffer.concat([d.update(body.subarray(0, KEY_BYTES)), d.final()]);
  } catch {
    return null;
  }
}

function keyNumber(id: string): number {
  const m = /^k(\d+)$/.exec(id);
  return m ? Number(m[1]) : 0;
}

function compareKeyIds(a: string, b: string): number {
  return keyNumber(a) - keyNumber(b) || (a < b ? -1 : a > b ? 1 : 0);
}

/** `substr(column, 1, n) = prefix`: a prefix test with no LIKE escaping, identical on both engines. */
function startsWith(column: string, prefix: string) {
  return sql<boolean>`substr(${sql.ref(column)}, 1, ${sql.lit([...prefix].length)}) = ${prefix}`;
}

async function readFingerprint(db: Db): Promise<string | undefined> {
  const row = await db.selectFrom('settings').select('value').where('key', '=', FINGERPRINT_SETTING).executeTakeFirst();
  return row?.value;
}

async function hasActiveKey(db: Db): Promise<boolean> {
  const row = await db.selectFrom('encryption_keys').select('id').where('status', '=', 'active').limit(1).executeTakeFirst();
  return row !== undefined;
}

/**
 * First-open initialisation: records the fingerprint and creates k1, atomically. Racing openers
 * insert the same fixed ids and ignore the conflict, then re-read; a different master key rolls
 * the whole transaction back, so nothing is written.
 */
async function initialise(db: Db, kek: KeyObject, fingerprint: string, describe: string): Promise<void> {
  const dek = crypto.randomBytes(KEY_BYTES);
  const wrapped = wrapDek(kek, 'k1', dek);
  dek.fill(0);
  await db.transaction().execute(async (trx) => {
    // Writes first: on SQLite the first statement then takes the write lock (honouring busy_timeout).
    await trx.insertInto('settings')
      .values({ key: FINGERPRINT_SETTING, value: fingerprint })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    await trx.insertInto('encryption_keys')
      .values({ id: 'k1', wrapped_key: wrapped, status: 'active', created_at: nowIso() })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    const stored = await trx.selectFrom('settings').select('value').where('key', '=', FINGERPRINT_SETTING).executeTakeFirst();
    if (stored?.value !== fingerprint) {
      throw new KeyMismatchError(
        `${describe} does not match the key this database was encrypted with ` +
          `(fingerprint ${fingerprint}, expected ${stored?.value}); refusing to start. Nothing was changed.`,
        fingerprint,
        stored?.value ?? null,
      );
    }
    // Data keys left behind without a fingerprint must still be ours.
    for (const row of await trx.selectFrom('encryption_keys').select(['id', 'wrapped_key']).execute()) {
      const raw = unwrapDek(kek, row.id, row.wrapped_key);
      if (!raw) {
        throw new KeyMismatchError(
          `${describe} cannot unwrap data key ${row.id} stored in this database (fingerprint ${fingerprint}); ` +
            'refusing to start. Nothing was changed.',
          fingerprint,
          null,
        );
      }
      raw.fill(0);
    }
  });
}

function loadMasterKey(dataDir: string, masterKeyB64: string | null): MasterKey {
  if (masterKeyB64 !== null && masterKeyB64 !== undefined) {
    const key = decodeKey(masterKeyB64);
    if (!key) throw new Error('FLOWGATE_ENCRYPTION_KEY must be the base64 encoding of exactly 32 bytes');
    return { key, source: 'env', file: null, pendingFile: false };
  }
  const file = path.join(dataDir, KEY_FILE_NAME);
  const existing = readKeyFile(file);
  if (existing) return { key: existing, source: 'file', file, pendingFile: false };
  return { key: crypto.randomBytes(KEY_BYTES), source: 'file', file, pendingFile: true };
}

function decodeKey(b64: string): Buffer | null {
  const text = b64.trim();
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) return null;
  const key = Buffer.from(text, text.includes('-') || text.includes('_') ? 'base64url' : 'base64');
  return key.length === KEY_BYTES ? key : null;
}

/** The key in `file`, or null when the file does not exist. */
function readKeyFile(file: string): Buffer | null {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const key = decodeKey(text);
  if (!key) throw new Error(`${file} does not contain the base64 encoding of a 32-byte key`);
  return key;
}

/**
 * Creates `file` (mode 0600, directory 0700) holding `key`, atomically: written to a temp file
 * then hard-linked into place, so a racing process either wins or reads the complete winner.
 * Returns the key actually on disk.
 */
function persistKeyFile(file: string, key: Buffer): Buffer {
  const dir = path.dirname(file);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const data = key.toString('base64') + '\n';
  const tmp = path.join(dir, `.${KEY_FILE_NAME}.${process.pid}.${crypto.randomBytes(6).toString('hex')}.tmp`);
  const fd = fs.openSync(tmp, 'wx', 0o600);
  try {
    fs.fchmodSync(fd, 0o600);
    fs.writeSync(fd, data);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.linkSync(tmp, file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return readExisting(file);
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EXDEV') throw err;
    // Filesystems without hard links: exclusive create instead.
    try {
      fs.writeFileSync(file, data, { flag: 'wx', mode: 0o600 });
    } catch (err2) {
      if ((err2 as NodeJS.ErrnoException).code === 'EEXIST') return readExisting(file);
      throw err2;
    }
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  try {
    const dfd = fs.openSync(dir, 'r');
    try {
      fs.fsyncSync(dfd);
    } finally {
      fs.closeSync(dfd);
    }
  } catch {
    // Directory fsync is best effort (not supported everywhere).
  }
  return key;
}

function readExisting(file: string): Buffer {
  const key = readKeyFile(file);
  if (!key) throw new Error(`${file} disappeared while it was being created; try again`);
  return key;
}

function isTransient(err: unknown): boolean {
  const e = err as { code?: unknown; errcode?: unknown; message?: unknown };
  if (e?.code === '40001' || e?.code === '40P01') return true;
  if (typeof e?.errcode === 'number' && (e.errcode & 0xff) === 5) return true;
  return /database is locked|SQLITE_BUSY/.test(String(e?.message ?? ''));
}

async function withTransientRetry<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!isTransient(err) || attempt >= 4) throw err;
      await new Promise((r) => setTimeout(r, 20 * (attempt + 1) + Math.floor(Math.random() * 30)));
    }
  }
}
