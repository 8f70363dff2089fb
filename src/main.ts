// Process entry for `npm start`: the same as `flowgate serve`.
import { runCli } from './cli.ts';

await runCli(['serve']);
