// oidc-provider ships no type declarations; this is the small surface flowgate uses.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface KoaContextLike {
    method: string;
    path: string;
    status: number;
    body: unknown;
    set(field: string, value: string): void;
    get(field: string): string;
    type: string;
    oidc: any;
    [key: string]: any;
  }

  export class Provider {
    constructor(issuer: string, configuration?: Record<string, unknown>);
    /** The Koa context of the request being handled (AsyncLocalStorage), if any. */
    static get ctx(): KoaContextLike | undefined;
    readonly issuer: string;
    proxy: boolean;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    use(fn: (ctx: KoaContextLike, next: () => Promise<void>) => Promise<void> | void): this;
    on(event: string, listener: (...args: any[]) => void): this;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<any>;
    interactionResult(req: IncomingMessage, res: ServerResponse, result: Record<string, unknown>, opts?: { mergeWithLastSubmission?: boolean }): Promise<string>;
    readonly Client: any;
    readonly AccessToken: any;
    readonly RefreshToken: any;
    readonly AuthorizationCode: any;
    readonly Grant: any;
    readonly Session: any;
    readonly Interaction: any;
  }

  type ErrorClass = new (description?: string, detail?: string) => Error & { error: string; error_description?: string; statusCode: number };
  export const errors: {
    InvalidGrant: ErrorClass;
    InvalidRequest: ErrorClass;
    SessionNotFound: ErrorClass;
    AccessDenied: ErrorClass;
    [name: string]: ErrorClass;
  };

  export const interactionPolicy: {
    base(): Array<{ name: string; checks: unknown[] }> & { get(name: string): { name: string; checks: unknown[] } | undefined };
    Check: new (reason: string, description: string, error: string, check: (ctx: any) => boolean | Promise<boolean>) => unknown;
  };

  export default Provider;
}
