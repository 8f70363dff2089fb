// `flowgate serve`: load config, build, listen, shut down cleanly on SIGTERM/SIGINT.
import { loadConfig } from './config.ts';
import { createContext, bootstrap } from './context.ts';
import { buildApp } from './app.ts';
import { modules } from './modules/index.ts';

export async function serve(): Promise<void> {
  const config = loadConfig();
  const ctx = await createContext(config);
  const admin = await bootstrap(ctx);
  if (admin) {
    // Printed once, on the very first start; never logged.
    process.stdout.write(
      `\nflowgate: created company "Default" and admin ${admin.email}\n` +
      `flowgate: initial admin password: ${admin.password}\n` +
      `flowgate: (also written to ${admin.file}, mode 0600)\n\n`);
  }
  const app = await buildApp(ctx);
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down: no new connections, finishing in-flight requests');
    try {
      await app.close();
      await ctx.close();
      process.exit(0);
    } catch (err) {
      app.log.error({ err }, 'error during shutdown');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  await app.listen({ port: config.port, host: config.host });
  for (const m of modules) await m.start?.(ctx, app);
}
