#!/usr/bin/env node
// The `flowgate` command. Runs under the Node 24 that `npm ci` installs (node@24 is a
// devDependency and npx/npm put it first on PATH); TypeScript is run by type stripping.
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(`flowgate needs Node.js 24 (found ${process.version}); run it with "npx flowgate" or "npm start".\n`);
  process.exit(1);
}
const { runCli } = await import('../src/cli.ts');
await runCli(process.argv.slice(2));
