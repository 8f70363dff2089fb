// The connectors module: the built-in catalogue (migration 0002_connectors, which also creates
// the connector-auths tables), company connectors and connector actions.
import type { FlowgateModule } from '../module.ts';
import * as migration0002 from './migration.ts';
import { ConnectorsStore } from './store.ts';
import { ConnectorsService } from './service.ts';
import { connectorRoutes } from './routes.ts';

declare module '../../context.ts' {
  interface Services {
    connectors: ConnectorsService;
  }
}

export const connectorsModule: FlowgateModule = {
  name: 'connectors',
  migrations: { '0002_connectors': migration0002 },
  services(ctx) {
    ctx.services.connectors = new ConnectorsService(new ConnectorsStore(ctx.database.db), ctx.services.audit);
  },
  routes(app, ctx) {
    connectorRoutes(app, ctx.services.connectors);
  },
};

export { ConnectorsService, type Connector, type ConnectorAction } from './service.ts';
export * from './catalogue.ts';
