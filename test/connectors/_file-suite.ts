// The file-connector tests shared by SFTP and FTP (both expose the same actions), run against
// a real server from test/support/servers.ts. Imported by sftp.test.ts and ftp.test.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { runAction, testConnection } from '../../src/modules/connectors/runtime/index.ts';
import { ConnectorError, type ResolvedCredential } from '../../src/modules/connectors/runtime/types.ts';
import type { TestServer, UserPassServerOptions } from '../support/servers.ts';
import { closedPort, cred, ctx, startSilentServer, tempDir, TRICKY_PASSWORD } from './_helpers.ts';

type Kind = 'sftp' | 'ftp';

/** Every form of `secret` that must not appear in a message. */
function assertNoSecret(text: string, secret: string): void {
  for (const form of [secret, encodeURIComponent(secret), encodeURI(secret)]) {
    assert.ok(!text.includes(form), `message leaks a secret form: ${JSON.stringify(text)}`);
  }
}

async function rejectsWith(p: Promise<unknown>, code: string): Promise<ConnectorError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ConnectorError, `expected a ConnectorError, got ${String(err)}`);
    assert.equal(err.code, code, `code (message: ${err.message})`);
    return err;
  }
  assert.fail(`expected a ConnectorError ${code}, but the call succeeded`);
}

export function fileConnectorSuite(kind: Kind, start: (o: UserPassServerOptions) => Promise<TestServer>): void {
  describe(`${kind} connector against a real server`, { timeout: 20_000 }, () => {
    let server: TestServer;
    let tmp: { dir: string; remove(): void };
    let base: string;

    before(async () => {
      tmp = tempDir(`flowgate-${kind}-`);
      base = path.join(tmp.dir, 'base');
      fs.mkdirSync(path.join(base, 'sub'), { recursive: true });
      server = await start({ username: 'alice', password: TRICKY_PASSWORD, root: tmp.dir });
    });
    after(async () => {
      await server?.close();
      tmp?.remove();
    });

    const endpoint = (userinfo = '', port = server.port) => `${kind}://${userinfo}127.0.0.1:${port}/base`;
    const good = (over: Partial<ResolvedCredential> = {}) =>
      cred({ apiEndpoint: endpoint(), username: 'alice', password: TRICKY_PASSWORD, ...over });
    const run = (action: string, input: unknown, c: ResolvedCredential = good(), timeoutMs = 5_000) =>
      runAction(kind, action, input, c, ctx(timeoutMs));

    it('testConnection succeeds with the right login', async () => {
      assert.deepEqual(await testConnection(kind, good(), ctx()), { ok: true, error: null });
    });

    it('uploads, lists, downloads and deletes a text file', async () => {
      const text = 'hello, wörld ✓\nline 2\n';
      const up = await run('upload_file', { path: 'sub/hello.txt', content: text, content_encoding: 'utf8' });
      assert.deepEqual(up, { path: 'sub/hello.txt', size: Buffer.byteLength(text) });
      assert.equal(fs.readFileSync(path.join(base, 'sub', 'hello.txt'), 'utf8'), text);

      const top = (await run('list_files', {})) as { files: { name: string; type: string }[] };
      assert.equal(top.files.find((f) => f.name === 'sub')?.type, 'directory');
      const sub = (await run('list_files', { path: 'sub' })) as { files: Record<string, unknown>[] };
      const entry = sub.files.find((f) => f.name === 'hello.txt');
      assert.ok(entry, 'uploaded file is listed');
      assert.equal(entry.type, 'file');
      assert.equal(entry.size, Buffer.byteLength(text));
      assert.ok(entry.modified_at === null || !Number.isNaN(Date.parse(entry.modified_at as string)));

      const down = await run('download_file', { path: 'sub/hello.txt' });
      assert.deepEqual(down, { path: 'sub/hello.txt', content: text, content_encoding: 'utf8', size: Buffer.byteLength(text) });

      assert.deepEqual(await run('delete_file', { path: 'sub/hello.txt' }), { path: 'sub/hello.txt', deleted: true });
      assert.equal(fs.existsSync(path.join(base, 'sub', 'hello.txt')), false);
      await rejectsWith(run('download_file', { path: 'sub/hello.txt' }), 'not_found');
    });

    it('round-trips binary content as base64', async () => {
      const bytes = Buffer.concat([Buffer.from([0x00, 0xff, 0xfe, 0x80, 0xc3, 0x28]), crypto.randomBytes(70_000)]);
      const up = await run('upload_file', { path: 'blob.bin', content: bytes.toString('base64'), content_encoding: 'base64' });
      assert.deepEqual(up, { path: 'blob.bin', size: bytes.length });
      assert.ok(fs.readFileSync(path.join(base, 'blob.bin')).equals(bytes), 'bytes on disk');

      const down = (await run('download_file', { path: 'blob.bin' })) as { content: string; content_encoding: string; size: number };
      assert.equal(down.content_encoding, 'base64');
      assert.equal(down.size, bytes.length);
      assert.ok(Buffer.from(down.content, 'base64').equals(bytes), 'downloaded bytes');
      await run('delete_file', { path: 'blob.bin' });
    });

    it('keeps a UTF-8 byte order mark and reports text as utf8', async () => {
      const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('a,b\n1,2\n')]);
      await run('upload_file', { path: 'bom.csv', content: bytes.toString('base64'), content_encoding: 'base64' });
      const down = (await run('download_file', { path: 'bom.csv' })) as { content: string; content_encoding: string };
      assert.equal(down.content_encoding, 'utf8');
      assert.ok(Buffer.from(down.content, 'utf8').equals(bytes));
      await run('delete_file', { path: 'bom.csv' });
    });

    it('reports missing files and directories as not_found', async () => {
      await rejectsWith(run('download_file', { path: 'missing.txt' }), 'not_found');
      await rejectsWith(run('delete_file', { path: 'missing.txt' }), 'not_found');
      await rejectsWith(run('list_files', { path: 'no-such-dir' }), 'not_found');
    });

    it('refuses paths that escape the base path, before connecting', async () => {
      const offline = good({ apiEndpoint: endpoint('', await closedPort()) });
      for (const p of ['../outside.txt', 'sub/../../outside.txt', '/../outside.txt', 'a/b/../../../outside.txt']) {
        const err = await rejectsWith(run('upload_file', { path: p, content: 'x' }, offline), 'bad_input');
        assert.match(err.message, /escapes the base path/);
      }
      await rejectsWith(run('list_files', { path: '..' }, offline), 'bad_input');
      await rejectsWith(run('download_file', { path: 'sub/../..' }, offline), 'bad_input');
      await rejectsWith(run('delete_file', { path: '..\\outside.txt' }, offline), 'bad_input');
      assert.equal(fs.existsSync(path.join(tmp.dir, 'outside.txt')), false);
    });

    it('allows ".." that stays inside the base path, and a leading "/" is relative to it', async () => {
      assert.deepEqual(await run('upload_file', { path: 'sub/../inside.txt', content: 'in' }), { path: 'inside.txt', size: 2 });
      assert.equal(fs.readFileSync(path.join(base, 'inside.txt'), 'utf8'), 'in');
      assert.deepEqual(await run('delete_file', { path: '/inside.txt' }), { path: 'inside.txt', deleted: true });
      assert.equal(fs.existsSync(path.join(base, 'inside.txt')), false);
    });

    it('rejects malformed input with bad_input', async () => {
      await rejectsWith(run('upload_file', { path: 'x.txt', content: 'x', content_encoding: 'hex' }), 'bad_input');
      await rejectsWith(run('upload_file', { path: 'x.txt', content: 'not base64!', content_encoding: 'base64' }), 'bad_input');
      await rejectsWith(run('upload_file', { path: 'x.txt' }), 'bad_input');
      await rejectsWith(run('download_file', {}), 'bad_input');
      await rejectsWith(run('download_file', { path: '.' }), 'bad_input');
      await rejectsWith(run('list_files', 'sub'), 'bad_input');
      await rejectsWith(run('rename_file', { path: 'x' }), 'bad_input');
      await rejectsWith(run('upload_file', { path: 'x\r\nDELE y', content: 'x' }), 'bad_input');
    });

    it('wrong password: authentication_failed, and the password is not in the message', async () => {
      const wrong = 'Wrong-Pässword/+ 42';
      const r = await testConnection(kind, good({ password: wrong }), ctx());
      assert.equal(r.ok, false);
      assert.equal(r.error?.code, 'authentication_failed');
      assert.match(r.error!.message, /authentication failed for user alice at 127\.0\.0\.1:\d+/);
      assertNoSecret(r.error!.message, wrong);

      const err = await rejectsWith(run('list_files', {}, good({ password: wrong })), 'authentication_failed');
      assertNoSecret(err.message, wrong);

      // The same with the password in the URL's user-info only.
      const viaUrl = cred({ apiEndpoint: endpoint(`alice:${encodeURIComponent(wrong)}@`) });
      const r2 = await testConnection(kind, viaUrl, ctx());
      assert.equal(r2.error?.code, 'authentication_failed');
      assertNoSecret(r2.error!.message, wrong);
    });

    it('wrong user name: authentication_failed', async () => {
      const r = await testConnection(kind, good({ username: 'mallory' }), ctx());
      assert.equal(r.error?.code, 'authentication_failed');
      assert.match(r.error!.message, /mallory/);
    });

    it('a closed port: refused', async () => {
      const r = await testConnection(kind, good({ apiEndpoint: endpoint('', await closedPort()) }), ctx());
      assert.equal(r.ok, false);
      assert.equal(r.error?.code, 'refused');
      assert.match(r.error!.message, /127\.0\.0\.1:\d+/);
      assertNoSecret(r.error!.message, TRICKY_PASSWORD);
    });

    it('a server that never answers: timeout within ctx.timeoutMs', async () => {
      const silent = await startSilentServer();
      try {
        const t0 = Date.now();
        const r = await testConnection(kind, good({ apiEndpoint: endpoint('', silent.port) }), ctx(300));
        assert.equal(r.error?.code, 'timeout');
        assert.ok(Date.now() - t0 < 3_000, `took ${Date.now() - t0} ms`);
      } finally {
        await silent.close();
      }
    });

    it('ctx.signal aborts a hanging call (timeout), and an aborted signal fails at once', async () => {
      const silent = await startSilentServer();
      try {
        const ac = new AbortController();
        setTimeout(() => ac.abort(), 100);
        const t0 = Date.now();
        const r = await testConnection(kind, good({ apiEndpoint: endpoint('', silent.port) }), ctx(20_000, ac.signal));
        assert.equal(r.error?.code, 'timeout');
        assert.ok(Date.now() - t0 < 3_000, `took ${Date.now() - t0} ms`);
        const r2 = await testConnection(kind, good(), ctx(5_000, AbortSignal.abort()));
        assert.equal(r2.error?.code, 'timeout');
      } finally {
        await silent.close();
      }
    });

    describe('username/password fields versus URL user-info', () => {
      it('the fields win over the URL user-info', async () => {
        const c = good({ apiEndpoint: endpoint('mallory:nope@') });
        assert.deepEqual(await testConnection(kind, c, ctx()), { ok: true, error: null });
        // and really win: a right URL login does not rescue wrong fields
        const c2 = cred({
          apiEndpoint: endpoint(`alice:${encodeURIComponent(TRICKY_PASSWORD)}@`),
          username: 'alice',
          password: 'not-the-password',
        });
        assert.equal((await testConnection(kind, c2, ctx())).error?.code, 'authentication_failed');
      });

      it('the URL user-info is used when the fields are empty (null or "")', async () => {
        const userinfo = `alice:${encodeURIComponent(TRICKY_PASSWORD)}@`;
        for (const empty of [null, '']) {
          const c = cred({ apiEndpoint: endpoint(userinfo), username: empty, password: empty });
          assert.deepEqual(await testConnection(kind, c, ctx()), { ok: true, error: null }, `fields = ${JSON.stringify(empty)}`);
        }
      });

      it('each field is taken on its own', async () => {
        // user from the field, password from the URL
        const c = cred({ apiEndpoint: endpoint(`bob:${encodeURIComponent(TRICKY_PASSWORD)}@`), username: 'alice', password: null });
        assert.deepEqual(await testConnection(kind, c, ctx()), { ok: true, error: null });
        // password from the field, user from the URL
        const c2 = cred({ apiEndpoint: endpoint('alice:wrong@'), username: '', password: TRICKY_PASSWORD });
        assert.deepEqual(await testConnection(kind, c2, ctx()), { ok: true, error: null });
      });
    });
  });
}
