// Pure helpers of the connector runtime: endpoint parsing, URL redaction, path joining,
// secret scrubbing, content encoding, and the registry's error handling.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseEndpoint, redactUrl, resolveRemotePath } from '../../src/modules/connectors/runtime/endpoint.ts';
import { credentialSecrets, scrubDeep, scrubSecrets } from '../../src/modules/connectors/runtime/scrub.ts';
import { encodeContent, withDeadline } from '../../src/modules/connectors/runtime/common.ts';
import { CONNECTOR_ACTIONS, runAction, testConnection } from '../../src/modules/connectors/runtime/index.ts';
import { ConnectorError } from '../../src/modules/connectors/runtime/types.ts';
import { cred, ctx } from './_helpers.ts';

function badInput(fn: () => unknown, re?: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ConnectorError);
    assert.equal(e.code, 'bad_input');
    if (re) assert.match(e.message, re);
    return true;
  });
}

describe('parseEndpoint', () => {
  const ep = (apiEndpoint: string | null, username: string | null = null, password: string | null = null) =>
    parseEndpoint({ apiEndpoint, username, password });

  it('parses protocol, host, port, base path and user-info', () => {
    assert.deepEqual(ep('sftp://user:p%40ss@127.0.0.1:2222/base/path'), {
      protocol: 'sftp', host: '127.0.0.1', port: 2222, basePath: '/base/path', user: 'user', password: 'p@ss',
    });
    assert.deepEqual(ep('ftp://files.example.com/dir/'), {
      protocol: 'ftp', host: 'files.example.com', port: 21, basePath: '/dir', user: null, password: null,
    });
    assert.equal(ep('sftp://h').port, 22);
    assert.equal(ep('sftp://h').basePath, '/');
    assert.equal(ep('ftps://h/').port, 21);
    assert.equal(ep('ftp://h:2121').port, 2121);
    assert.equal(ep('https://api.example.com/v2').basePath, '/v2');
    assert.equal(ep('https://api.example.com/v2').port, 443);
    assert.equal(ep('sftp://[::1]:2200/x').host, '::1');
    assert.equal(ep('sftp://h/my%20dir/a').basePath, '/my dir/a');
  });

  it('fields win; URL user-info fills only empty fields, each on its own', () => {
    const url = 'sftp://urluser:urlpass@h/';
    assert.deepEqual([ep(url, 'fielduser', 'fieldpass').user, ep(url, 'fielduser', 'fieldpass').password], ['fielduser', 'fieldpass']);
    assert.deepEqual([ep(url, null, null).user, ep(url, null, null).password], ['urluser', 'urlpass']);
    assert.deepEqual([ep(url, '', '').user, ep(url, '', '').password], ['urluser', 'urlpass']);
    assert.deepEqual([ep(url, 'fielduser', null).user, ep(url, 'fielduser', null).password], ['fielduser', 'urlpass']);
    assert.deepEqual([ep(url, null, 'fieldpass').user, ep(url, null, 'fieldpass').password], ['urluser', 'fieldpass']);
    assert.deepEqual([ep('sftp://h/', 'u', null).user, ep('sftp://h/', 'u', null).password], ['u', null]);
  });

  it('refuses missing, unparsable and unexpected endpoints without quoting them', () => {
    badInput(() => ep(null), /no API endpoint/);
    badInput(() => ep(''));
    badInput(() => ep('not a url with s3cret'), /not a valid URL/);
    badInput(() => parseEndpoint({ apiEndpoint: 'https://u:s3cret@h/', username: null, password: null }, ['sftp']), /sftp:\/\//);
    assert.throws(
      () => ep('sftp://u:s3cret@h:99999/'),
      (e: unknown) => e instanceof ConnectorError && e.code === 'bad_input' && !e.message.includes('s3cret'),
    );
  });
});

describe('redactUrl', () => {
  const cases: [string, string][] = [
    ['sftp://alice:s3cret@127.0.0.1:2222/base/path', 'sftp://alice:***@127.0.0.1:2222/base/path'],
    ['https://bob:p%40ss%2Fword@api.example.com/v2?x=1', 'https://bob:***@api.example.com/v2?x=1'],
    ['ftp://user:pa@ss@host/dir', 'ftp://user:***@host/dir'],
    ['https://token-as-user@github.com/repo', 'https://token-as-user@github.com/repo'],
    ['https://api.example.com/users?email=a@b.com', 'https://api.example.com/users?email=a@b.com'],
    ['https://api.example.com/v2', 'https://api.example.com/v2'],
    ['https://:onlypass@host/', 'https://:***@host/'],
    ['no at sign here', 'no at sign here'],
    ['', ''],
    // unparsable input with an '@': best effort
    ['sftp://bob:pa/ss@host:99999', 'sftp://bob:***@host:99999'],
    ['bob:secret@host', 'bob:***@host'],
    ['sftp://secretonly@[bad', 'sftp://***@[bad'],
  ];
  for (const [input, expected] of cases) {
    it(`${JSON.stringify(input)} -> ${JSON.stringify(expected)}`, () => {
      assert.equal(redactUrl(input), expected);
    });
  }
});

describe('resolveRemotePath', () => {
  it('joins below the base path and normalises', () => {
    assert.deepEqual(resolveRemotePath('/base', 'a/b.txt'), { full: '/base/a/b.txt', relative: 'a/b.txt' });
    assert.deepEqual(resolveRemotePath('/base', './a//b/../c.txt'), { full: '/base/a/c.txt', relative: 'a/c.txt' });
    assert.deepEqual(resolveRemotePath('/base', '/abs.txt'), { full: '/base/abs.txt', relative: 'abs.txt' });
    assert.deepEqual(resolveRemotePath('/', 'x'), { full: '/x', relative: 'x' });
    assert.deepEqual(resolveRemotePath('/base', ''), { full: '/base', relative: '' });
    assert.deepEqual(resolveRemotePath('/base', undefined), { full: '/base', relative: '' });
    assert.deepEqual(resolveRemotePath('/base', '..foo/x..'), { full: '/base/..foo/x..', relative: '..foo/x..' });
  });

  it('refuses escapes, backslashes, control characters and non-strings', () => {
    for (const p of ['..', '../x', 'a/../../x', '/..', 'a/./../..']) badInput(() => resolveRemotePath('/base', p), /escapes/);
    badInput(() => resolveRemotePath('/base', '..\\x'), /separator/);
    badInput(() => resolveRemotePath('/base', 'a\nb'), /control/);
    badInput(() => resolveRemotePath('/base', 'a\0b'), /control/);
    badInput(() => resolveRemotePath('/base', 42));
  });
});

describe('scrubSecrets', () => {
  it('replaces each secret and its URL-encoded forms', () => {
    assert.equal(scrubSecrets('login hunter2 failed', ['hunter2']), 'login *** failed');
    assert.equal(scrubSecrets('a p@ss/w rd b p%40ss%2Fw%20rd c', ['p@ss/w rd']), 'a *** b *** c');
    assert.equal(scrubSecrets('form p%40ss+w', ['p@ss w']), 'form ***');
    assert.equal(scrubSecrets('url sftp://u:p%40ss%20x@h', ['p@ss x']), 'url sftp://u:***@h');
    assert.equal(scrubSecrets('x tok tok x', ['tok']), 'x *** *** x');
  });

  it('ignores empty and missing secrets, and removes longer secrets whole', () => {
    assert.equal(scrubSecrets('nothing to hide', ['', null, undefined]), 'nothing to hide');
    assert.equal(scrubSecrets('abcdef', ['abc', 'abcdef']), '***');
    assert.equal(scrubSecrets('', ['x']), '');
    assert.equal(scrubSecrets('regex .* chars (x)', ['.*', '(x)']), 'regex *** chars ***');
  });

  it('scrubDeep walks values and keys', () => {
    assert.deepEqual(scrubDeep({ a: ['tok1', { tok1: 'x tok1' }], n: 1, z: null }, ['tok1']), { a: ['***', { '***': 'x ***' }], n: 1, z: null });
  });

  it('credentialSecrets collects password, token, URL password and authDetails values', () => {
    const s = credentialSecrets(cred({
      apiEndpoint: 'sftp://u:url%2Fpass@h/',
      username: 'u',
      password: 'fieldpass',
      authToken: 'tok-123',
      authDetails: JSON.stringify({ client_secret: 'cs-987654', scopes: ['read'], n: 3 }),
    }));
    for (const x of ['fieldpass', 'tok-123', 'url/pass', 'cs-987654']) assert.ok(s.includes(x), x);
    assert.ok(!s.includes('u'), 'the user name is not a secret');
    assert.ok(!s.includes('read'), 'short authDetails values are not treated as secrets');
    assert.ok(credentialSecrets(cred({ authDetails: 'opaque-secret' })).includes('opaque-secret'));
  });
});

describe('encodeContent', () => {
  it('utf8 for valid UTF-8 text, base64 otherwise, exact both ways', () => {
    assert.deepEqual(encodeContent(Buffer.from('héllo')), { content: 'héllo', content_encoding: 'utf8' });
    assert.deepEqual(encodeContent(Buffer.from([0xff, 0x00])), { content: '/wA=', content_encoding: 'base64' });
    assert.equal(encodeContent(Buffer.from('a\0b')).content_encoding, 'base64');
    assert.equal(encodeContent(Buffer.from([0xc3])).content_encoding, 'base64'); // truncated sequence
    assert.equal(encodeContent(Buffer.alloc(0)).content_encoding, 'utf8');
  });
});

describe('withDeadline', () => {
  it('times out, calls cancel, and passes results and errors through otherwise', async () => {
    let cancelled = 0;
    await assert.rejects(
      withDeadline(ctx(50), 'thing', () => cancelled++, () => new Promise(() => {})),
      (e: unknown) => e instanceof ConnectorError && e.code === 'timeout' && /thing timed out after 50 ms/.test(e.message),
    );
    assert.equal(cancelled, 1);
    assert.equal(await withDeadline(ctx(1000), 'thing', () => cancelled++, async () => 7), 7);
    await assert.rejects(withDeadline(ctx(1000), 'thing', () => cancelled++, async () => { throw new Error('inner'); }), /inner/);
    assert.equal(cancelled, 1);
  });
});

describe('registry', () => {
  it('lists the actions per kind', () => {
    assert.deepEqual([...CONNECTOR_ACTIONS.sftp].sort(), ['delete_file', 'download_file', 'list_files', 'upload_file']);
    assert.deepEqual([...CONNECTOR_ACTIONS.ftp].sort(), ['delete_file', 'download_file', 'list_files', 'upload_file']);
    assert.deepEqual([...CONNECTOR_ACTIONS.http], ['request']);
  });

  it('unknown kinds and actions are bad_input; testConnection never throws', async () => {
    await assert.rejects(runAction('smtp' as 'ftp', 'x', {}, cred({}), ctx()), (e: unknown) => e instanceof ConnectorError && e.code === 'bad_input');
    await assert.rejects(runAction('sftp', 'toString', {}, cred({}), ctx()), (e: unknown) => e instanceof ConnectorError && e.code === 'bad_input');
    const r = await testConnection('smtp' as 'ftp', cred({}), ctx());
    assert.deepEqual(r.ok, false);
    assert.equal(r.error?.code, 'bad_input');
    const r2 = await testConnection('sftp', cred({ apiEndpoint: 'sftp://u:hunter22@h:99999/' }), ctx());
    assert.equal(r2.error?.code, 'bad_input');
    assert.ok(!r2.error!.message.includes('hunter22'));
  });
});
