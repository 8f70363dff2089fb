// A feature module plugs into flowgate through this one shape, so that adding a module is
// one line in modules/index.ts and never an edit of app.ts, context.ts or the CLI.
import type { FastifyInstance } from 'fastify';
import type { Command } from 'commander';
import type { Migration } from 'kysely/migration';
import type { AppContext } from '../context.ts';
import type { Principal } from './access/principal.ts';

export interface FlowgateModule {
  name: string;
  /** Migrations by globally ordered name, e.g. '0002_connectors'. */
  migrations?: Record<string, Migration>;
  /** Creates the module's services and puts them on ctx.services (declaration-merge `Services`). */
  services?(ctx: AppContext): Promise<void> | void;
  /** Resolves a Bearer token that is not a PAT (OAuth access tokens). First non-null wins. */
  bearer?(ctx: AppContext): ((token: string) => Promise<Principal | null>) | null;
  /** Registers the module's routes. */
  routes?(app: FastifyInstance, ctx: AppContext): Promise<void> | void;
  /** Adds the module's CLI commands; `withContext` opens and closes a context around fn. */
  cli?(program: Command, tools: CliTools): void;
  /** Background work started by `serve` only (workers, cleanup timers). */
  start?(ctx: AppContext, app: FastifyInstance): Promise<void> | void;
  /** Stops background work; called before the database closes. */
  stop?(ctx: AppContext): Promise<void> | void;
}

export interface CliTools {
  withContext<T>(fn: (ctx: AppContext) => Promise<T>): Promise<T>;
  /** Prints JSON under --json, else the text. */
  out(json: unknown, text: string): void;
  /** An error shown as one line on stderr with exit code 1. */
  fail(message: string): never;
}
