// Keyring: envelope encryption, master key handling, rotation, status and named secrets.
// Runs on the engine chosen by FLOWGATE_TEST_DB (sqlite | postgres).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import type { Kysely } from 'kysely';
import { makeTestStore, TEST_DB, type TestStore } from '../support/db.ts';
import type { DatabaseHandle, Db } from '../../src/db/index.ts';
import { Keyring, KeyMismatchError, DecryptError } from '../../src/crypto/keyring.ts';
import { registerSecretColumn, unregisterSecretColumn, secretColumns } from '../../src/crypto/secret-registry.ts';

const newKeyB64 = () => crypto.randomBytes(32).toString('base64');
const fingerprintOf = (b64: string) =>
  crypto.createHmac('sha256', Buffer.from(b64, 'base64')).update('flowgate key fingerprint v1').digest('hex').slice(0, 16);

/** A store plus every handle opened on it, all cleaned up by done(). */
async function setup(): Promise<{ store: TestStore; h: DatabaseHandle; open(): Promise<DatabaseHandle>; done(): Promise<void> }> {
  const store = makeTestStore();
  const handles: DatabaseHandle[] = [];
  const open = async () => {
    const h = await store.open();
    handles.push(h);
    return h;
  };
  let h: DatabaseHandle;
  try {
    h = await open();
  } catch (err) {
    await store.destroy();
    throw err;
  }
  return {
    store,
    h,
    open,
    async done() {
      for (const x of handles) await x.close();
      await store.destroy();
    },
  };
}

async function snapshot(db: Db) {
  return {
    settings: await db.selectFrom('settings').selectAll().orderBy('key').execute(),
    keys: await db.selectFrom('encryption_keys').selectAll().orderBy('id').execute(),
  };
}

function expectDecryptError(fn: () => unknown, reason?: string) {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof DecryptError, `expected DecryptError, got ${String(err)}`);
    if (reason) assert.equal(err.reason, reason);
    return true;
  });
}

test('round trip: strings, unicode, empty and binary; fg1 format; fresh IV each time', async () => {
  const s = await setup();
  try {
    const ring = await Keyring.open({ db: s.h.db, dataDir: s.store.dataDir, masterKeyB64: newKeyB64() });
    assert.equal(ring.activeKeyId, 'k1');
    const aad = 'connector_auth:c1:r1:password';
    for (const text of ['hunter2', 'pässwörd ✓ 🔑', '', 'x'.repeat(10_000)]) {
      const ct = ring.encrypt(text, aad);
      assert.match(ct, /^fg1:k1:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]+$/);
      if (text) assert.ok(!ct.includes(text));
      assert.equal(ring.decryptString(ct, aad), text);
      assert.equal(ring.keyIdOf(ct), 'k1');
      const body = Buffer.from(ct.split(':')[3], 'base64url');
      assert.equal(body.length, Buffer.byteLength(text) + 16, 'ciphertext + 16-byte tag');
    }
    const bin = crypto.randomBytes(77);
    assert.deepEqual(ring.decrypt(ring.encrypt(bin, aad), aad), bin);
    const a = ring.encrypt('same', aad);
    const b = ring.encrypt('same', aad);
    assert.notEqual(a, b, 'random IV per encryption');
    assert.notEqual(a.split(':')[2], b.split(':')[2]);
    assert.equal(await ring.decryptStringAsync(a, aad), 'same');
  } finally {
    await s.done();
  }
});

test('decrypting with a different AAD fails', async () => {
  const s = await setup();
  try {
    const ring = await Keyring.open({ db: s.h.db, dataDir: s.store.dataDir, masterKeyB64: newKeyB64() });
    const ct = ring.encrypt('top secret', 'connector_auth:c1:r1:password');
    assert.equal(ring.decryptString(ct, 'connector_auth:c1:r1:password'), 'top secret');
    for (const wrong of ['connector_auth:c2:r1:password', 'connector_auth:c1:r2:password', 'connector_auth:c1:r1:token', '']) {
      expectDecryptError(() => ring.decrypt(ct, wrong), 'auth_failed');
    }
    await assert.rejects(ring.decryptAsync(ct, 'other'), DecryptError);
  } finally {
    await s.done();
  }
});

test('tampered, malformed or foreign ciphertexts fail with DecryptError that reveals nothing', async () => {
  const s = await setup();
  const key = newKeyB64();
  let foreign: { ct: string; aad: string };
  try {
    const ring = await Keyring.open({ db: s.h.db, dataDir: s.store.dataDir, masterKeyB64: key });
    const aad = 'connector_auth:c1:r1:password';
    const secret = 'very-secret-value-123';
    const ct = ring.encrypt(secret, aad);
    const [v, id, iv, body] = ct.split(':');
    const flip = (str: string, i: number) => {
      const c = str[i];
      const repl = c === 'A' ? 'B' : 'A';
      return str.slice(0, i) + repl + str.slice(i + 1);
    };
    const tampered = [
      [v, id, flip(iv, 0), body],
      [v, id, flip(iv, iv.length - 1), body],
      [v, id, iv, flip(body, 0)],
      [v, id, iv, flip(body, Math.floor(body.length / 2))],
      [v, id, iv, flip(body, body.length - 1)], // inside the tag
      [v, id, iv, body.slice(0, -4)], // truncated tag
    ].map((p) => p.join(':'));
    for (const t of tampered) {
      assert.notEqual(t, ct);
      expectDecryptError(() => ring.decrypt(t, aad));
    }
    const malformed = ['', 'garbage', `fg2:${id}:${iv}:${body}`, `${v}:${id}:${iv}`, `${ct}:extra`,
      `${v}:${id}:${iv}:${body}=`, `${v}:${id}:${iv}+:${body}`, `${v}::${iv}:${body}`, `${v}:${id}:${iv.slice(2)}:${body}`,
      `${v}:${id}:${iv}:${body.slice(0, 10)}`];
    for (const m of malformed) {
      expectDecryptError(() => ring.decrypt(m, aad), 'malformed');
    }
    expectDecryptError(() => ring.decrypt(42 as unknown as string, aad), 'malformed');
    expectDecryptError(() => ring.keyIdOf('nope'), 'malformed');
    expectDecryptError(() => ring.decrypt(`${v}:k9:${iv}:${body}`, aad), 'unknown_key');
    await assert.rejects(ring.decryptAsync(`${v}:k9:${iv}:${body}`, aad), DecryptError);

    foreign = { ct, aad };
    try {
      ring.decrypt(tampered[2], aad);
      assert.fail('should have thrown');
    } catch (err) {
      const text = `${(err as Error).message} ${(err as Error).stack}`;
      assert.ok(!text.includes(secret));
      assert.ok(!text.includes(body));
      assert.ok(!text.includes(key));
    }
  } finally {
    await s.done();
  }
  // Same key id, another store (another DEK, even under the same master key): fails.
  const s2 = await setup();
  try {
    const other = await Keyring.open({ db: s2.h.db, dataDir: s2.store.dataDir, masterKeyB64: key });
    assert.equal(other.activeKeyId, 'k1');
    expectDecryptError(() => other.decrypt(foreign.ct, foreign.aad), 'auth_failed');
  } finally {
    await s2.done();
  }
});

test('master key file: created 0600 in a new 0700 directory, then reused on the next open', async () => {
  const s = await setup();
  try {
    const dataDir = path.join(s.store.dataDir, 'nested', 'data');
    const keyFile = path.join(dataDir, 'master.key');
    assert.ok(!fs.existsSync(keyFile));
    const ring = await Keyring.open({ db: s.h.db, dataDir, masterKeyB64: null });
    assert.ok(fs.existsSync(keyFile));
    assert.equal(fs.statSync(keyFile).mode & 0o777, 0o600);
    assert.equal(fs.statSync(dataDir).mode & 0o777, 0o700);
    assert.deepEqual(fs.readdirSync(dataDir), ['master.key'], 'no temp files left behind');
    const content = fs.readFileSync(keyFile, 'utf8').trim();
    assert.equal(Buffer.from(content, 'base64').length, 32);
    assert.equal(ring.keySource, 'file');
    assert.equal(ring.fingerprint, fingerprintOf(content));
    const stored = await s.h.db.selectFrom('settings').select('value').where('key', '=', 'master_key_fingerprint').executeTakeFirstOrThrow();
    assert.equal(stored.value, ring.fingerprint);

    const ct = ring.encrypt('kept', 'a');
    const h2 = await s.open();
    const again = await Keyring.open({ db: h2.db, dataDir, masterKeyB64: null });
    assert.equal(again.fingerprint, ring.fingerprint);
    assert.equal(fs.readFileSync(keyFile, 'utf8').trim(), content, 'key file not rewritten');
    assert.equal(again.decryptString(ct, 'a'), 'kept');
    assert.equal((await h2.db.selectFrom('encryption_keys').selectAll().execute()).length, 1);
  } finally {
    await s.done();
  }
});

test('FLOWGATE_ENCRYPTION_KEY wins over an existing key file (which is left untouched)', async () => {
  const s = await setup();
  try {
    const fileKey = newKeyB64();
    const envKey = newKeyB64();
    const keyFile = path.join(s.store.dataDir, 'master.key');
    fs.writeFileSync(keyFile, fileKey + '\n', { mode: 0o600 });
    const ring = await Keyring.open({ db: s.h.db, dataDir: s.store.dataDir, masterKeyB64: envKey });
    assert.equal(ring.keySource, 'env');
    assert.equal(ring.fingerprint, fingerprintOf(envKey));
    assert.notEqual(ring.fingerprint, fingerprintOf(fileKey));
    assert.equal(fs.readFileSync(keyFile, 'utf8'), fileKey + '\n');
    // The database now belongs to the env key: the file key is refused.
    await assert.rejects(Keyring.open({ db: s.h.db, dataDir: s.store.dataDir, masterKeyB64: null }), KeyMismatchError);
    const again = await Keyring.open({ db: s.h.db, dataDir: s.store.dataDir, masterKeyB64: envKey });
    assert.equal(again.fingerprint, ring.fingerprint);
  } finally {
    await s.done();
  }
});

test('wrong master key => KeyMismatchError, and nothing is written to the database or files', async () => {
  const s = await setup();
  try {
    const right = newKeyB64();
    const ring = await Keyring.open({ db: s.h.db, dataDir: s.store.dataDir, masterKeyB64: right });
    await ring.namedSecret('session');
    const before = await snapshot(s.h.db);
    assert.equal(before.keys.length, 1);
    const filesBefore = fs.readdirSync(s.store.dataDir).sort();

    const wrong = newKeyB64();
    await assert.rejects(Keyring.open({ db: s.h.db, dataDir: s.store.dataDir, masterKeyB64: wrong }), (err: unknown) => {
      assert.ok(err instanceof KeyMismatchError);
      assert.match(err.message, /FLOWGATE_ENCRYPTION_KEY does not match/);
      assert.ok(err.message.includes(fingerprintOf(wrong)));
      assert.ok(err.message.includes(ring.fingerprint));
      assert.match(err.message, /Nothing was changed\.$/);
      assert.ok(!err.message.includes(wrong) && !err.message.includes(right));
      return true;
    });
    // Key from file, but no file: must not create one.
    await assert.rejects(Keyring.open({ db: s.h.db, dataDir: s.store.dataDir, masterKeyB64: null }), (err: unknown) => {
      assert.ok(err instanceof KeyMismatchError);
      assert.match(err.message, /master\.key does not exist/);
      return true;
    });
    assert.ok(!fs.existsSync(path.join(s.store.dataDir, 'master.key')));
    // Key from a file holding the wrong key.
    fs.writeFileSync(path.join(s.store.dataDir, 'master.key'), wrong, { mode: 0o600 });
    await assert.rejects(Keyring.open({ db: s.h.db, dataDir: s.store.dataDir, masterKeyB64: null }), (err: unknown) => {
      assert.ok(err instanceof KeyMismatchError);
      assert.match(err.message, /master\.key does not match/);
      return true;
    });
    fs.rmSync(path.join(s.store.dataDir, 'master.key'));

    assert.deepEqual(await snapshot(s.h.db), before);
    assert.deepEqual(fs.readdirSync(s.store.dataDir).sort(), filesBefore);
    // The right key still works.
    const ok = await Keyring.open({ db: s.h.db, dataDir: s.store.dataDir, masterKeyB64: right });
    assert.deepEqual(await ok.namedSecret('session'), await ring.namedSecret('session'));
  } finally {
    await s.done();
  }
});

test('data keys without a recorded fingerprint that this master key cannot unwrap are refused, nothing written', async () => {
  const s = await setup();
  try {
    await Keyring.open({ db: s.h.db, dataDir: s.store.dataDir, masterKeyB64: newKeyB64() });
    await s.h.db.deleteFrom('settings').where('key', '=', 'master_key_fingerprint').execute();
    const before = await snapshot(s.h.db);
    await assert.rejects(Keyring.open({ db: s.h.db, dataDir: s.store.dataDir, masterKeyB64: newKeyB64() }), KeyMismatchError);
    assert.deepEqual(await snapshot(s.h.db), before);
  } finally {
    await s.done();
  }
});

// A scratch table standing in for a module's encrypted column.
const SCRATCH = {
  table: 'scratch_secrets',
  idColumn: 'id',
  column: 'secret',
  aadColumns: ['company_id'],
  aad: (row: Record<string, unknown>) => `scratch:${row.company_id}:${row.id}:secret`,
};
const scratchAad = (company: string, id: string) => `scratch:${company}:${id}:secret`;

async function createScratch(db: Db) {
  await (db as unknown as Kysely<any>).schema.createTable(SCRATCH.table)
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('company_id', 'text', (c) => c.notNull())
    .addColumn('secret', 'text')
    .execute();
}

function scratch(db: Db) {
  return db as unknown as Kysely<any>;
}

test('rotate re-encrypts registered columns with compare-and-set; old ciphertexts keep decrypting', async () => {
  const s = await setup();
  registerSecretColumn(SCRATCH);
  try {
    const key = newKeyB64();
    const ring = await Keyring.open({ db: s.h.db, dataDir: s.store.dataDir, masterKeyB64: key });
    const h2 = await s.open();
    const stale = await Keyring.open({ db: h2.db, dataDir: s.store.dataDir, masterKeyB64: key }); // "another process"
    await createScratch(s.h.db);
    const plain = new Map<string, string>();
    for (let i = 1; i <= 7; i++) {
      const id = `r${String(i).padStart(2, '0')}`;
      const company = i % 2 ? 'c1' : 'c2';
      plain.set(id, `secret number ${i}`);
      await scratch(s.h.db).insertInto(SCRATCH.table)
        .values({ id, company_id: company, secret: ring.encrypt(`secret number ${i}`, scratchAad(company, id)) }).execute();
    }
    await scratch(s.h.db).insertInto(SCRATCH.table).values([
      { id: 'r08', company_id: 'c1', secret: null },
      { id: 'r09', company_id: 'c1', secret: '' },
      // Encrypted under the wrong AAD: cannot be re-encrypted, must be left alone.
      { id: 'r10', company_id: 'c1', secret: ring.encrypt('orphan', 'elsewhere') },
    ]).execute();
    // A non-secret setting that happens to hold a ciphertext: outside `secret:*`, not touched.
    const otherSetting = ring.encrypt('not registered', 'x');
    await s.h.db.insertInto('settings').values({ key: 'other', value: otherSetting }).execute();
    const named = await ring.namedSecret('cookie');
    const r10Before = (await scratch(s.h.db).selectFrom(SCRATCH.table).select('secret').where('id', '=', 'r10').executeTakeFirstOrThrow()).secret;

    const oldCt = (await scratch(s.h.db).selectFrom(SCRATCH.table).select('secret').where('id', '=', 'r01').executeTakeFirstOrThrow()).secret as string;
    assert.equal(ring.keyIdOf(oldCt), 'k1');

    let batches = 0;
    let midChecks = 0;
    const result = await ring.rotate({
      batchSize: 3,
      beforeBatchWrite: async ({ table, ids }) => {
        if (table !== SCRATCH.table) return;
        batches++;
        if (batches !== 1) return;
        assert.deepEqual(ids, ['r01', 'r02', 'r03']);
        // Mid-rotation: the new key exists, but old ciphertexts still decrypt everywhere.
        assert.equal(ring.activeKeyId, 'k2');
        assert.equal(ring.decryptString(oldCt, scratchAad('c1', 'r01')), 'secret number 1');
        assert.equal(stale.decryptString(oldCt, scratchAad('c1', 'r01')), 'secret number 1');
        // A concurrent writer (still on k1) changes r02 before the batch is written.
        await scratch(h2.db).updateTable(SCRATCH.table)
          .set({ secret: stale.encrypt('changed meanwhile', scratchAad('c2', 'r02')) })
          .where('id', '=', 'r02').execute();
        midChecks++;
      },
    });
    assert.equal(midChecks, 1);
    assert.ok(batches >= 3, 'batched (7 rows + 1 skipped, batch size 3)');
    assert.equal(result.newKeyId, 'k2');
    assert.equal(result.reencrypted, 7 + 1, '7 scratch rows (r02 on the second pass) + the named secret');
    assert.equal(result.skipped, 1);
    assert.equal(ring.activeKeyId, 'k2');

    plain.set('r02', 'changed meanwhile');
    const rows = await scratch(s.h.db).selectFrom(SCRATCH.table).selectAll().orderBy('id').execute();
    for (const row of rows) {
      if (!plain.has(row.id)) continue;
      assert.equal(ring.keyIdOf(row.secret), 'k2', `${row.id} re-encrypted`);
      assert.equal(ring.decryptString(row.secret, scratchAad(row.company_id, row.id)), plain.get(row.id), `${row.id} value kept`);
    }
    const byId = new Map(rows.map((r) => [r.id, r.secret]));
    assert.equal(byId.get('r08'), null);
    assert.equal(byId.get('r09'), '');
    assert.equal(byId.get('r10'), r10Before);
    assert.equal((await s.h.db.selectFrom('settings').select('value').where('key', '=', 'other').executeTakeFirstOrThrow()).value, otherSetting);
    const namedRow = await s.h.db.selectFrom('settings').select('value').where('key', '=', 'secret:cookie').executeTakeFirstOrThrow();
    assert.equal(ring.keyIdOf(namedRow.value), 'k2');

    const keys = await s.h.db.selectFrom('encryption_keys').selectAll().orderBy('id').execute();
    assert.deepEqual(keys.map((k) => [k.id, k.status]), [['k1', 'retired'], ['k2', 'active']]);
    // After rotation: old ciphertexts still decrypt (retired keys are kept).
    assert.equal(ring.decryptString(oldCt, scratchAad('c1', 'r01')), 'secret number 1');
    // The other process learns about k2 on demand.
    const newCt = byId.get('r01') as string;
    expectDecryptError(() => stale.decrypt(newCt, scratchAad('c1', 'r01')), 'unknown_key');
    assert.equal(await stale.decryptStringAsync(newCt, scratchAad('c1', 'r01')), 'secret number 1');
    assert.equal(stale.activeKeyId, 'k2');
    assert.deepEqual(await stale.namedSecret('cookie'), named);

    // Rotating again moves everything to k3.
    const r2 = await ring.rotate();
    assert.equal(r2.newKeyId, 'k3');
    assert.equal(r2.reencrypted, 8);
    assert.deepEqual((await s.h.db.selectFrom('encryption_keys').select(['id', 'status']).orderBy('id').execute())
      .map((k) => `${k.id}:${k.status}`), ['k1:retired', 'k2:retired', 'k3:active']);
  } finally {
    unregisterSecretColumn(SCRATCH.table, SCRATCH.column);
    await s.done();
  }
});

test('status counts stored ciphertexts per key over every registered column', async () => {
  const s = await setup();
  registerSecretColumn(SCRATCH);
  try {
    const ring = await Keyring.open({ db: s.h.db, dataDir: s.store.dataDir, masterKeyB64: newKeyB64() });
    await createScratch(s.h.db);
    for (let i = 1; i <= 4; i++) {
      await scratch(s.h.db).insertInto(SCRATCH.table)
        .values({ id: `r${i}`, company_id: 'c1', secret: ring.encrypt(`v${i}`, scratchAad('c1', `r${i}`)) }).execute();
    }
    await scratch(s.h.db).insertInto(SCRATCH.table).values([
      { id: 'n1', company_id: 'c1', secret: null },
      { id: 'n2', company_id: 'c1', secret: '' },
      { id: 'n3', company_id: 'c1', secret: 'plain text, not a ciphertext' },
    ]).execute();
    await s.h.db.insertInto('settings').values({ key: 'other', value: ring.encrypt('not registered', 'x') }).execute();
    await ring.namedSecret('a');
    await ring.namedSecret('b');

    let st = await ring.status();
    assert.equal(st.fingerprint, ring.fingerprint);
    assert.equal(st.activeKeyId, 'k1');
    assert.equal(st.keys.length, 1);
    assert.equal(st.keys[0].id, 'k1');
    assert.equal(st.keys[0].status, 'active');
    assert.ok(!Number.isNaN(Date.parse(st.keys[0].created_at)));
    assert.equal(st.keys[0].records, 4 + 2);

    // Leave one scratch row on k1 by making it undecryptable under its AAD.
    await scratch(s.h.db).updateTable(SCRATCH.table).set({ company_id: 'moved' }).where('id', '=', 'r4').execute();
    await ring.rotate();
    st = await ring.status();
    assert.equal(st.activeKeyId, 'k2');
    assert.deepEqual(st.keys.map((k) => [k.id, k.status, k.records]), [['k1', 'retired', 1], ['k2', 'active', 5]]);

    // Status of another registered-table-free view: unregistering drops its rows from the counts.
    unregisterSecretColumn(SCRATCH.table, SCRATCH.column);
    assert.ok(!secretColumns().some((c) => c.table === SCRATCH.table));
    st = await ring.status();
    assert.deepEqual(st.keys.map((k) => k.records), [0, 2]);
  } finally {
    unregisterSecretColumn(SCRATCH.table, SCRATCH.column);
    await s.done();
  }
});

test('namedSecret: 32 random bytes, stored encrypted, stable across reopen and rotate, bound to its name', async () => {
  const s = await setup();
  try {
    const key = newKeyB64();
    const ring = await Keyring.open({ db: s.h.db, dataDir: s.store.dataDir, masterKeyB64: key });
    const a = await ring.namedSecret('oauth-cookie');
    const b = await ring.namedSecret('csrf');
    assert.equal(a.length, 32);
    assert.equal(b.length, 32);
    assert.notDeepEqual(a, b);
    assert.deepEqual(await ring.namedSecret('oauth-cookie'), a);
    const row = await s.h.db.selectFrom('settings').select('value').where('key', '=', 'secret:oauth-cookie').executeTakeFirstOrThrow();
    assert.match(row.value, /^fg1:k1:/);
    assert.ok(!row.value.includes(a.toString('base64url')) && !row.value.includes(a.toString('hex')));
    assert.deepEqual(ring.decrypt(row.value, 'setting:oauth-cookie'), a);

    // Mutating the returned buffer does not change the secret.
    a.fill(0);
    const a1 = await ring.namedSecret('oauth-cookie');
    assert.notDeepEqual(a1, Buffer.alloc(32));

    const h2 = await s.open();
    const reopened = await Keyring.open({ db: h2.db, dataDir: s.store.dataDir, masterKeyB64: key });
    assert.deepEqual(await reopened.namedSecret('oauth-cookie'), a1);
    assert.deepEqual(await reopened.namedSecret('csrf'), b);

    const r = await reopened.rotate();
    assert.equal(r.reencrypted, 2);
    const after = await s.h.db.selectFrom('settings').select('value').where('key', '=', 'secret:oauth-cookie').executeTakeFirstOrThrow();
    assert.match(after.value, /^fg1:k2:/);
    const h3 = await s.open();
    const third = await Keyring.open({ db: h3.db, dataDir: s.store.dataDir, masterKeyB64: key });
    assert.equal(third.activeKeyId, 'k2');
    assert.deepEqual(await third.namedSecret('oauth-cookie'), a1);
    assert.deepEqual(await third.namedSecret('csrf'), b);

    // The ciphertext is bound to its name: copying it under another name does not work.
    await s.h.db.insertInto('settings').values({ key: 'secret:copy', value: after.value }).execute();
    await assert.rejects(third.namedSecret('copy'), DecryptError);
  } finally {
    await s.done();
  }
});

test('concurrent first open of two Keyrings on one store yields one k1 and one fingerprint', async () => {
  const s = await setup();
  try {
    // PostgreSQL: two pools racing for real. SQLite: Keyrings on one handle (a second
    // connection in the same thread would just sit out busy_timeout while the first holds the
    // write lock); cross-connection races on SQLite are covered by the multi-process tests below.
    const h2 = TEST_DB === 'postgres' ? await s.open() : s.h;
    for (let round = 0; round < 5; round++) {
      await s.h.db.deleteFrom('encryption_keys').execute();
      await s.h.db.deleteFrom('settings').execute();
      const key = newKeyB64();
      // Warm both pools so the opens really start together.
      await Promise.all([s.h.db, h2.db].map((db) => db.selectFrom('settings').selectAll().execute()));
      const rings = await Promise.all([s.h.db, h2.db, s.h.db, h2.db].map((db) =>
        Keyring.open({ db, dataDir: s.store.dataDir, masterKeyB64: key })));
      assert.ok(rings.every((r) => r.activeKeyId === 'k1' && r.fingerprint === fingerprintOf(key)));
      const keys = await s.h.db.selectFrom('encryption_keys').selectAll().execute();
      assert.equal(keys.length, 1);
      assert.equal(rings[1].decryptString(rings[0].encrypt('shared', 'x'), 'x'), 'shared');
      assert.equal(rings[0].decryptString(rings[3].encrypt('shared', 'y'), 'y'), 'shared');
    }
  } finally {
    await s.done();
  }
});

// ---- real processes racing ------------------------------------------------------------------

const ROOT = path.resolve(import.meta.dirname, '../..');
const CHILD = `
import { openDatabase } from ${JSON.stringify(pathToFileURL(path.join(ROOT, 'src/db/index.ts')).href)};
import { Keyring } from ${JSON.stringify(pathToFileURL(path.join(ROOT, 'src/crypto/keyring.ts')).href)};
const o = JSON.parse(process.env.KR_CHILD);
const h = await openDatabase({ dataDir: o.dataDir, databaseUrl: o.databaseUrl, pgSchema: o.pgSchema, pgPoolSize: 2 });
await new Promise((r) => setTimeout(r, Math.max(0, o.startAt - Date.now())));
try {
  const ring = await Keyring.open({ db: h.db, dataDir: o.dataDir, masterKeyB64: o.masterKeyB64 });
  console.log(JSON.stringify({ ok: true, fingerprint: ring.fingerprint, active: ring.activeKeyId, ct: ring.encrypt('from ' + o.name, 'race') }));
} catch (err) {
  console.log(JSON.stringify({ ok: false, name: err.name, message: err.message }));
} finally {
  await h.close();
}
`;

interface ChildResult { ok: boolean; fingerprint?: string; active?: string; ct?: string; name?: string; message?: string }

function runChild(store: TestStore, name: string, masterKeyB64: string | null, startAt: number): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, KR_CHILD: JSON.stringify({ dataDir: store.dataDir, databaseUrl: store.databaseUrl, pgSchema: store.pgSchema, masterKeyB64, startAt, name }) };
    const child = spawn(process.execPath, ['--no-warnings', '--input-type=module', '-e', CHILD], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      try {
        resolve(JSON.parse(line));
      } catch {
        reject(new Error(`child ${name} exited ${code}: ${out}\n${err}`));
      }
    });
  });
}

test('two processes racing the first start (key file + database) end up with one key file and one k1', async () => {
  const s = await setup(); // migrated by the parent; the children only open
  try {
    for (let round = 0; round < 3; round++) {
      if (round > 0) {
        fs.rmSync(path.join(s.store.dataDir, 'master.key'), { force: true });
        await s.h.db.deleteFrom('encryption_keys').execute();
        await s.h.db.deleteFrom('settings').execute();
      }
      const startAt = Date.now() + 1500;
      const results = await Promise.all(['a', 'b', 'c'].map((n) => runChild(s.store, n, null, startAt)));
      for (const r of results) assert.ok(r.ok, `child failed: ${r.name}: ${r.message}`);
      assert.equal(new Set(results.map((r) => r.fingerprint)).size, 1, 'one master key');
      assert.ok(results.every((r) => r.active === 'k1'));
      const keys = await s.h.db.selectFrom('encryption_keys').selectAll().execute();
      assert.deepEqual(keys.map((k) => k.id), ['k1']);
      const fileKey = fs.readFileSync(path.join(s.store.dataDir, 'master.key'), 'utf8').trim();
      assert.equal(results[0].fingerprint, fingerprintOf(fileKey));
      const ring = await Keyring.open({ db: s.h.db, dataDir: s.store.dataDir, masterKeyB64: null });
      results.forEach((r, i) => assert.equal(ring.decryptString(r.ct!, 'race'), `from ${'abc'[i]}`));
    }
  } finally {
    await s.done();
  }
});

test('two processes racing the first start with different keys: one wins, the other gets KeyMismatchError', async () => {
  const s = await setup();
  try {
    const keys = [newKeyB64(), newKeyB64()];
    const startAt = Date.now() + 1500;
    const results = await Promise.all(keys.map((k, i) => runChild(s.store, `p${i}`, k, startAt)));
    const winners = results.filter((r) => r.ok);
    const losers = results.filter((r) => !r.ok);
    assert.equal(winners.length, 1, JSON.stringify(results));
    assert.equal(losers.length, 1);
    assert.equal(losers[0].name, 'KeyMismatchError', losers[0].message);
    const winnerKey = keys[results.indexOf(winners[0])];
    const fp = await s.h.db.selectFrom('settings').select('value').where('key', '=', 'master_key_fingerprint').executeTakeFirstOrThrow();
    assert.equal(fp.value, fingerprintOf(winnerKey));
    assert.deepEqual((await s.h.db.selectFrom('encryption_keys').select('id').execute()).map((k) => k.id), ['k1']);
    const ring = await Keyring.open({ db: s.h.db, dataDir: s.store.dataDir, masterKeyB64: winnerKey });
    assert.match(ring.decryptString(winners[0].ct!, 'race'), /^from p[01]$/);
  } finally {
    await s.done();
  }
});
