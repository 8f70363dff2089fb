// The feature modules, in dependency order. Adding a module is one line here.
import type { FlowgateModule } from './module.ts';
import { connectorsModule } from './connectors/index.ts';
import { connectorAuthsModule } from './connector-auths/index.ts';
import { oauthModule } from './oauth/module.ts';
import { envVariablesModule } from './env-variables/index.ts';
import { fileUploadsModule } from './file-uploads/index.ts';
import { flowsModule } from './flows/index.ts';

export const modules: FlowgateModule[] = [connectorsModule, connectorAuthsModule, oauthModule, envVariablesModule, fileUploadsModule, flowsModule];
