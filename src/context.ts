// Builds everything a running flowgate needs from a Config: database, key ring, services.
// Both the server and the CLI start here, so they can never disagree about the wiring.
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import type { Config } from './config.ts';
import { openDatabase, migrateToLatest, type DatabaseHandle } from './db/index.ts';
import { Keyring } from './crypto/keyring.ts';
import { AuditService } from './modules/audit/service.ts';
import { IdentityStore } from './modules/identity/store.ts';
import { UsersService } from './modules/identity/users.ts';
import { TeamsService } from './modules/identity/teams.ts';
import { CompaniesService } from './modules/identity/companies.ts';
import { TokenStore } from './modules/tokens/store.ts';
import { TokensService } from './modules/tokens/service.ts';
import { randomPassword } from './modules/identity/password.ts';
import { modules } from './modules/index.ts';

export interface Services {
  audit: AuditService;
  identity: IdentityStore;
  companies: CompaniesService;
  users: UsersService;
  teams: TeamsService;
  tokens: TokensService;
}

export interface AppContext {
  config: Config;
  database: DatabaseHandle;
  keyring: Keyring;
  services: Services;
  close(): Promise<void>;
}

export interface ContextOptions {
  /** PostgreSQL schema (tests isolate themselves in one schema each). */
  pgSchema?: string;
  migrate?: boolean;
}

export async function createContext(config: Config, opts: ContextOptions = {}): Promise<AppContext> {
  const database = await openDatabase({ dataDir: config.dataDir, databaseUrl: config.databaseUrl, pgSchema: opts.pgSchema ?? config.pgSchema ?? undefined });
  try {
    if (opts.migrate !== false) await migrateToLatest(database);
    const keyring = await Keyring.open({ db: database.db, dataDir: config.dataDir, masterKeyB64: config.encryptionKey });
    const db = database.db;
    const audit = new AuditService(db);
    const identity = new IdentityStore(db);
    const users = new UsersService(identity, audit);
    // Feature modules add their services (declared by merging into Services) in their services() hook.
    const services = {
      audit,
      identity,
      companies: new CompaniesService(identity, audit),
      users,
      teams: new TeamsService(identity, audit),
      tokens: new TokensService(new TokenStore(db), audit, await keyring.namedSecret('pat_digest'), config.patMaxDays),
    } as Services;
    const ctx: AppContext = {
      config, database, keyring, services,
      async close() {
        for (const m of [...modules].reverse()) await m.stop?.(ctx);
        await database.close();
      },
    };
    for (const m of modules) await m.services?.(ctx);
    return ctx;
  } catch (err) {
    await database.close();
    throw err;
  }
}

/**
 * On an empty store: company "Default" and an admin with a random password, returned once
 * (the caller prints it) and written to <dataDir>/initial-admin-password (0600).
 * On any later start: nothing happens and null is returned.
 */
export async function bootstrap(ctx: AppContext): Promise<{ email: string; password: string; file: string } | null> {
  const { identity, companies, users } = ctx.services;
  if ((await identity.countCompanies()) > 0) return null;
  const password = randomPassword();
  let company;
  try {
    company = await companies.create(null, 'Default');
  } catch {
    return null; // another instance bootstrapped at the same moment
  }
  await users.create(null, company.id, { email: ctx.config.adminEmail, name: 'Administrator', role: 'admin', password });
  fs.mkdirSync(ctx.config.dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(ctx.config.dataDir, 'initial-admin-password');
  fs.writeFileSync(file, password + '\n', { mode: 0o600 });
  fs.chmodSync(file, 0o600);
  return { email: ctx.config.adminEmail, password, file };
}

export const newId = () => crypto.randomUUID();
