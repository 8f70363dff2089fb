// The `flowgate` command: serve, migrate, and the staff operations that have no API
// (companies, first users, tokens for automation, keys). Errors: one line on stderr, exit 1.
import { Command, CommanderError, Option } from 'commander';
import { loadConfig, ConfigError } from './config.ts';
import { createContext, type AppContext } from './context.ts';
import { openDatabase, migrateToLatest } from './db/index.ts';
import { AppError } from './http/errors.ts';
import { KeyMismatchError } from './crypto/keyring.ts';
import { modules } from './modules/index.ts';

class CliError extends Error {}

type Out = (json: unknown, text: string) => void;

function output(json: boolean): Out {
  return (obj, text) => process.stdout.write((json ? JSON.stringify(obj, null, 2) : text) + '\n');
}

async function withContext<T>(fn: (ctx: AppContext) => Promise<T>): Promise<T> {
  const ctx = await createContext(loadConfig());
  try {
    return await fn(ctx);
  } finally {
    await ctx.close();
  }
}

async function userByEmail(ctx: AppContext, email: string) {
  const user = await ctx.services.identity.userByEmail(email);
  if (!user) throw new CliError(`no user with e-mail ${email}`);
  return user;
}

export function buildCli(): Command {
  const program = new Command('flowgate')
    .description('flowgate: self-hostable Automation Platform API')
    .option('--json', 'print machine-readable JSON')
    .showHelpAfterError()
    .exitOverride();
  const out = () => output(Boolean(program.opts().json));

  program.command('serve').description('run the API server (what npm start runs)').action(async () => {
    const { serve } = await import('./server.ts');
    await serve();
  });

  program.command('migrate').description('apply database migrations and exit').action(async () => {
    const config = loadConfig();
    const h = await openDatabase({ dataDir: config.dataDir, databaseUrl: config.databaseUrl, pgSchema: config.pgSchema ?? undefined });
    try {
      const applied = await migrateToLatest(h);
      out()({ applied }, applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
    } finally {
      await h.close();
    }
  });

  const companies = program.command('companies').description('manage companies (tenants)');
  companies.command('create').description('create a company')
    .requiredOption('--name <name>', 'company name')
    .action(async (o: { name: string }) => withContext(async (ctx) => {
      const c = await ctx.services.companies.create(null, o.name);
      out()(c, `created company ${c.name} (${c.id})`);
    }));

  const users = program.command('users').description('manage users');
  users.command('create').description('create a user')
    .requiredOption('--email <email>', 'e-mail address (the login)')
    .requiredOption('--name <name>', 'display name')
    .option('--password <password>', 'login password (for the OAuth login page); none: cannot log in')
    .addOption(new Option('--role <role>', 'role').choices(['admin', 'member']).default('member'))
    .option('--company <name>', 'company name', 'Default')
    .action(async (o: { email: string; name: string; password?: string; role: 'admin' | 'member'; company: string }) => withContext(async (ctx) => {
      const company = await ctx.services.companies.byName(o.company);
      if (!company) throw new CliError(`no company named "${o.company}"`);
      if (!/^[^@\s]+@[^@\s]+$/.test(o.email)) throw new CliError('--email must be an e-mail address');
      if (o.password !== undefined && o.password.length < 8) throw new CliError('--password must be at least 8 characters');
      const u = await ctx.services.users.create(null, company.id, { email: o.email, name: o.name, role: o.role, password: o.password });
      out()(u, `created ${u.role} ${u.email} (${u.id}) in ${company.name}`);
    }));

  const tokens = program.command('tokens').description('manage personal access tokens');
  tokens.command('create').description('create a token for a user; prints the value once')
    .requiredOption('--email <email>', 'owner e-mail')
    .requiredOption('--scopes <list>', 'comma-separated scopes, e.g. connector_auth,automation:view')
    .requiredOption('--expiration <days|never>', 'lifetime in days, or never')
    .option('--note <text>', 'what the token is for', '')
    .action(async (o: { email: string; scopes: string; expiration: string; note: string }) => withContext(async (ctx) => {
      const user = await userByEmail(ctx, o.email);
      let expiration: number | null;
      if (o.expiration === 'never') expiration = null;
      else if (/^\d+$/.test(o.expiration) && Number(o.expiration) >= 1) expiration = Number(o.expiration);
      else throw new CliError('--expiration must be a number of days (>= 1) or "never"');
      if (o.note.length > 255) throw new CliError('--note must be at most 255 characters');
      const t = await ctx.services.tokens.create(null, { companyId: user.company_id, userId: user.id },
        { expiration, scopes: o.scopes.split(',').map((s) => s.trim()).filter(Boolean), note: o.note });
      out()(t, `${t.token}\n(id ${t.id}; scopes ${t.scopes.join(',')}; expires ${t.expiration ?? 'never'}; this value is shown only now)`);
    }));
  tokens.command('list').description('list a user\'s tokens (never their values)')
    .requiredOption('--email <email>', 'owner e-mail')
    .action(async (o: { email: string }) => withContext(async (ctx) => {
      const user = await userByEmail(ctx, o.email);
      const list = await ctx.services.tokens.listForUser(user.company_id, user.id);
      out()(list, list.length ? list.map((t) => `${t.id}  ${t.token_hint}  ${t.state.padEnd(7)}  ${t.scopes.join(',')}  ${t.note}`).join('\n') : '(no tokens)');
    }));
  tokens.command('revoke').description('revoke a token')
    .requiredOption('--id <id>', 'token id')
    .action(async (o: { id: string }) => withContext(async (ctx) => {
      const companyId = /^[0-9a-f-]{36}$/i.test(o.id) ? await ctx.services.tokens.findCompanyOfToken(o.id) : null;
      if (!companyId) throw new CliError(`no token with id ${o.id}`);
      await ctx.services.tokens.revoke(null, companyId, o.id);
      out()({ id: o.id, revoked: true }, `revoked ${o.id}`);
    }));

  const keys = program.command('keys').description('encryption keys of stored secrets');
  keys.command('status').description('key ids and how many records use each')
    .action(async () => withContext(async (ctx) => {
      const s = await ctx.keyring.status();
      out()(s, [`fingerprint ${s.fingerprint}`, ...s.keys.map((k) => `${k.id}  ${k.status.padEnd(8)}  ${k.records} records  created ${k.created_at}${k.id === s.activeKeyId ? '  (active)' : ''}`)].join('\n'));
    }));
  keys.command('rotate').description('add a new data key and re-encrypt every stored secret with it (safe while serving)')
    .action(async () => withContext(async (ctx) => {
      const r = await ctx.keyring.rotate();
      out()(r, `new active key ${r.newKeyId}; re-encrypted ${r.reencrypted} values`);
    }));

  for (const m of modules) {
    m.cli?.(program, {
      withContext,
      out: (json, text) => out()(json, text),
      fail: (message) => { throw new CliError(message); },
    });
  }
  return program;
}

export async function runCli(argv: string[]): Promise<void> {
  const program = buildCli();
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = err.exitCode;
      return; // commander already printed help or the usage error
    }
    let msg: string;
    if (err instanceof ConfigError || err instanceof CliError || err instanceof KeyMismatchError) msg = err.message;
    else if (err instanceof AppError) msg = `${err.message}${err.errors ? ' (' + err.errors.map((e) => `${e.field}: ${e.message}`).join('; ') + ')' : ''}`;
    else if ((err as NodeJS.ErrnoException)?.code === 'ECONNREFUSED') msg = 'cannot reach the database (connection refused)';
    else msg = `unexpected error: ${(err as Error)?.message ?? String(err)}`;
    process.stderr.write(`flowgate: ${msg}\n`);
    process.exitCode = 1;
  }
}
