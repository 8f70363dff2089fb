// The file-uploads module: multipart uploads stored under <dataDir>/uploads. Its table comes
// from the flows module's migration 0004_flows.
import type { FlowgateModule } from '../module.ts';
import { FileUploadsStore } from './store.ts';
import { FileUploadsService } from './service.ts';
import { fileUploadRoutes } from './routes.ts';

declare module '../../context.ts' {
  interface Services {
    fileUploads: FileUploadsService;
  }
}

export const fileUploadsModule: FlowgateModule = {
  name: 'file-uploads',
  services(ctx) {
    ctx.services.fileUploads = new FileUploadsService(new FileUploadsStore(ctx.database.db), ctx.services.audit, ctx.config.dataDir, ctx.config.uploadMaxBytes);
  },
  async routes(app, ctx) {
    await fileUploadRoutes(app, ctx.services.fileUploads);
  },
};

export { FileUploadsService, type FileUpload } from './service.ts';
