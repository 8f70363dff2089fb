// The feature modules, in dependency order. Adding a module is one line here.
import type { FlowgateModule } from './module.ts';

export const modules: FlowgateModule[] = [];
