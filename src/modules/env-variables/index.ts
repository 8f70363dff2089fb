// The env-variables module: company-wide values for flow templates (`env.NAME`), secret ones
// encrypted. Its table comes from the flows module's migration 0004_flows.
import type { FlowgateModule } from '../module.ts';
import { EnvVariablesStore } from './store.ts';
import { EnvVariablesService } from './service.ts';
import { envVariableRoutes } from './routes.ts';

declare module '../../context.ts' {
  interface Services {
    envVariables: EnvVariablesService;
  }
}

export const envVariablesModule: FlowgateModule = {
  name: 'env-variables',
  services(ctx) {
    ctx.services.envVariables = new EnvVariablesService(new EnvVariablesStore(ctx.database.db), ctx.keyring, ctx.services.audit);
  },
  routes(app, ctx) {
    envVariableRoutes(app, ctx.services.envVariables);
  },
};

export { EnvVariablesService, type EnvForRun, type EnvVariable } from './service.ts';
