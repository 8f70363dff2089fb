// The connector-auths module: stored credentials, encrypted at rest, with object permissions.
// Its tables come from the connectors module's migration 0002_connectors.
import type { FlowgateModule } from '../module.ts';
import { ConnectorAuthsStore } from './store.ts';
import { ConnectorAuthsService } from './service.ts';
import { connectorAuthRoutes } from './routes.ts';

declare module '../../context.ts' {
  interface Services {
    connectorAuths: ConnectorAuthsService;
  }
}

export const connectorAuthsModule: FlowgateModule = {
  name: 'connector-auths',
  services(ctx) {
    const s = ctx.services;
    ctx.services.connectorAuths = new ConnectorAuthsService(
      { store: new ConnectorAuthsStore(ctx.database.db), connectors: s.connectors, identity: s.identity, keyring: ctx.keyring, audit: s.audit },
      { baseUrl: ctx.config.baseUrl },
    );
  },
  routes(app, ctx) {
    connectorAuthRoutes(app, ctx.services.connectorAuths);
  },
};

export { ConnectorAuthsService, ConnectorAuthResolveError, type ResolvedForRun, type ResolveArgs } from './service.ts';
