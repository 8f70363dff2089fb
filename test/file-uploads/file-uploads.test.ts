// File uploads: multipart in, bytes out unchanged, stored under <dataDir>/uploads/<company>/<id>
// whatever the client calls the file, a size limit (413, nothing left behind), a download that
// is always an attachment with a safe Content-Disposition.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { startTestApp, problem, type TestApp } from '../support/app.ts';
import { countRows, filesUnder, multipart } from '../flows/_helpers.ts';

const MAX = 4096;
let t: TestApp;
before(async () => { t = await startTestApp({ FLOWGATE_UPLOAD_MAX_BYTES: String(MAX) }); });
after(async () => { await t.close(); });

function upload(filename: string, content: Buffer, token = t.tenant.token, type?: string) {
  const mp = multipart('file', filename, content, type);
  return t.app.inject({ method: 'POST', url: '/v1/file-uploads', payload: mp.payload, headers: { ...mp.headers, authorization: `Bearer ${token}` } });
}

test('upload, metadata, list, download the same bytes, delete', async () => {
  const bytes = crypto.randomBytes(3000);
  const res = await upload('report.bin', bytes, undefined, 'application/pdf');
  assert.equal(res.statusCode, 201, res.body);
  const meta = res.json();
  assert.equal(meta.filename, 'report.bin');
  assert.equal(meta.size, 3000);
  assert.equal(meta.content_type, 'application/pdf');
  assert.equal(meta.sha256, crypto.createHash('sha256').update(bytes).digest('hex'));
  assert.equal(meta.uploaded_by_user_id, t.tenant.admin.id);
  assert.equal(res.headers.location, `/v1/file-uploads/${meta.id}`);
  assert.deepEqual((await t.call('GET', `/v1/file-uploads/${meta.id}`)).json(), meta);
  assert.ok((await t.call('GET', '/v1/file-uploads?filter=filename,eq,"report.bin"')).json().data.some((f: { id: string }) => f.id === meta.id));

  const dl = await t.call('GET', `/v1/file-uploads/${meta.id}/content`);
  assert.equal(dl.statusCode, 200);
  assert.ok(dl.rawPayload.equals(bytes));
  assert.equal(dl.headers['content-type'], 'application/octet-stream');
  assert.equal(dl.headers['x-content-type-options'], 'nosniff');
  assert.match(String(dl.headers['content-disposition']), /^attachment; filename="report\.bin"; filename\*=UTF-8''report\.bin$/);

  const onDisk = path.join(t.config.dataDir, 'uploads', t.tenant.companyId, meta.id);
  assert.ok(fs.readFileSync(onDisk).equals(bytes));
  assert.equal((await t.call('DELETE', `/v1/file-uploads/${meta.id}`)).statusCode, 204);
  assert.equal(fs.existsSync(onDisk), false);
  problem(await t.call('GET', `/v1/file-uploads/${meta.id}/content`), 404, 'not_found');
});

test('the path on disk never comes from the client; hostile names are only display names', async () => {
  const names = ['../../../../tmp/flowgate-pwned.txt', '/etc/passwd', '..\\..\\win.ini', 'a"; filename="evil.html', 'rés umé;%22.txt', '..', ''];
  for (const name of names) {
    const res = await upload(name, Buffer.from('x'));
    assert.equal(res.statusCode, 201, `${name}: ${res.body}`);
    const meta = res.json();
    assert.ok(!meta.filename.includes('/') && !meta.filename.includes('\\'), meta.filename);
    const dl = await t.call('GET', `/v1/file-uploads/${meta.id}/content`);
    const cd = String(dl.headers['content-disposition']);
    // One quoted ASCII name without quotes or separators of its own, plus the encoded form.
    assert.match(cd, /^attachment; filename="[^"\\;%]*"; filename\*=UTF-8''[A-Za-z0-9%._~!$&+=:@-]*$/, cd);
  }
  assert.equal(fs.existsSync('/tmp/flowgate-pwned.txt'), false);
  // Everything written lies in uploads/<company uuid>/<file uuid>.
  const uploads = path.join(t.config.dataDir, 'uploads');
  for (const f of filesUnder(uploads)) assert.match(f, /^[0-9a-f-]{36}\/[0-9a-f-]{36}$/, f);
});

test('a file over the limit is refused with 413 and leaves nothing behind', async () => {
  const rows = await countRows(t, 'file_uploads');
  const filesBefore = filesUnder(path.join(t.config.dataDir, 'uploads'));
  const res = await upload('big.bin', crypto.randomBytes(MAX + 1));
  const body = problem(res, 413, 'file_too_large');
  assert.equal(body.max_bytes, MAX);
  assert.equal(await countRows(t, 'file_uploads'), rows);
  assert.deepEqual(filesUnder(path.join(t.config.dataDir, 'uploads')), filesBefore, 'no partial file left');
  // Exactly at the limit is fine.
  assert.equal((await upload('edge.bin', crypto.randomBytes(MAX))).statusCode, 201);
});

test('not multipart, or no part named "file"', async () => {
  problem(await t.call('POST', '/v1/file-uploads', { body: { file: 'x' } }), 415, 'unsupported_media_type');
  const mp = multipart('other', 'a.txt', Buffer.from('x'));
  const res = await t.app.inject({ method: 'POST', url: '/v1/file-uploads', payload: mp.payload, headers: { ...mp.headers, authorization: `Bearer ${t.tenant.token}` } });
  assert.equal(problem(res, 400, 'validation_failed').errors[0].field, 'file');
});

test('uploader or admin deletes; automation may read but not upload', async () => {
  const a = await t.newUser(t.tenant.companyId, { scopes: ['company'] });
  const b = await t.newUser(t.tenant.companyId, { scopes: ['company'] });
  const meta = (await upload('mine.txt', Buffer.from('mine'), a.token)).json();
  problem(await t.call('DELETE', `/v1/file-uploads/${meta.id}`, { token: b.token }), 403, 'forbidden');
  assert.equal((await t.call('GET', `/v1/file-uploads/${meta.id}/content`, { token: b.token })).body, 'mine');
  const auto = await t.newUser(t.tenant.companyId, { scopes: ['automation'] });
  assert.equal((await t.call('GET', `/v1/file-uploads/${meta.id}`, { token: auto.token })).statusCode, 200);
  problem(await upload('x.txt', Buffer.from('x'), auto.token), 403, 'insufficient_scope');
  problem(await t.call('DELETE', `/v1/file-uploads/${meta.id}`, { token: auto.token }), 403, 'insufficient_scope');
  assert.equal((await t.call('DELETE', `/v1/file-uploads/${meta.id}`, { token: a.token })).statusCode, 204);
});
