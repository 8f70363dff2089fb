// The feature modules, in dependency order. Adding a module is one line here.
import type { FlowgateModule } from './module.ts';
import { connectorsModule } from './connectors/index.ts';
import { connectorAuthsModule } from './connector-auths/index.ts';

export const modules: FlowgateModule[] = [connectorsModule, connectorAuthsModule];
