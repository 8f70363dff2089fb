// Every failure leaves as application/problem+json (RFC 9457) with a stable `code`.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export interface FieldError { field: string; message: string }

export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  readonly title: string;
  readonly errors: FieldError[] | undefined;
  readonly headers: Record<string, string>;
  readonly extra: Record<string, unknown>;
  constructor(status: number, code: string, detail: string, opts: {
    title?: string; errors?: FieldError[]; headers?: Record<string, string>; extra?: Record<string, unknown>;
  } = {}) {
    super(detail);
    this.status = status;
    this.code = code;
    this.title = opts.title ?? TITLES[status] ?? 'Error';
    this.errors = opts.errors;
    this.headers = opts.headers ?? {};
    this.extra = opts.extra ?? {};
  }
}

const TITLES: Record<number, string> = {
  400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed',
  406: 'Not Acceptable', 409: 'Conflict', 413: 'Content Too Large', 415: 'Unsupported Media Type',
  422: 'Unprocessable Content', 429: 'Too Many Requests', 500: 'Internal Server Error', 503: 'Service Unavailable',
};

export const notFound = (what = 'resource') => new AppError(404, 'not_found', `The ${what} does not exist or is not visible to you.`);
export const badRequest = (code: string, detail: string, errors?: FieldError[]) => new AppError(400, code, detail, { errors });
export const validationFailed = (errors: FieldError[]) =>
  new AppError(400, 'validation_failed', errors.map((e) => `${e.field}: ${e.message}`).join('; '), { errors });
export const conflict = (code: string, detail: string) => new AppError(409, code, detail);
export const forbidden = (code: string, detail: string) => new AppError(403, code, detail);

export function problemType(code: string): string {
  return `urn:flowgate:problem:${code}`;
}

export function sendProblem(reply: FastifyReply, err: AppError): FastifyReply {
  const body: Record<string, unknown> = {
    type: problemType(err.code),
    title: err.title,
    status: err.status,
    detail: err.message,
    code: err.code,
    ...err.extra,
  };
  if (err.errors) body.errors = err.errors;
  if (reply.request?.id) body.request_id = reply.request.id;
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
  return reply.code(err.status).type('application/problem+json').send(body);
}

// AJV's instancePath is a JSON pointer; we name fields with dots (tags.0, user_input.x).
function fieldOf(e: { instancePath?: string; params?: Record<string, unknown>; keyword?: string }, part: string): string {
  let p = (e.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
  if (e.keyword === 'additionalProperties' && e.params?.additionalProperty) {
    p = p ? `${p}.${e.params.additionalProperty}` : String(e.params.additionalProperty);
  }
  if (e.keyword === 'required' && e.params?.missingProperty) {
    p = p ? `${p}.${e.params.missingProperty}` : String(e.params.missingProperty);
  }
  if (!p) return part === 'body' ? '(body)' : part;
  return p;
}

function messageOf(e: { keyword?: string; message?: string; params?: Record<string, unknown> }): string {
  switch (e.keyword) {
    case 'additionalProperties': return 'is not an allowed field here';
    case 'required': return 'is required';
    case 'maxLength': return `must be at most ${e.params?.limit} characters`;
    case 'minLength': return e.params?.limit === 1 ? 'must not be empty' : `must be at least ${e.params?.limit} characters`;
    case 'format': return `must be a valid ${e.params?.format}`;
    default: return e.message ?? 'is invalid';
  }
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof AppError) return sendProblem(reply, error);
    const fe = error as FastifyError & { validation?: any[]; validationContext?: string };
    if (fe.validation) {
      const part = fe.validationContext ?? 'body';
      const seen = new Set<string>();
      const errors: FieldError[] = [];
      for (const v of fe.validation) {
        const fieldErr = { field: fieldOf(v, part), message: messageOf(v) };
        const key = fieldErr.field + fieldErr.message;
        if (!seen.has(key)) { seen.add(key); errors.push(fieldErr); }
      }
      // Query-string and path problems are named by their part so clients can tell them apart.
      if (part !== 'body') for (const e of errors) if (!e.field.startsWith(part)) e.field = `${part}.${e.field}`.replace(/^(\w+)\.\1$/, '$1');
      return sendProblem(reply, validationFailed(errors));
    }
    switch (fe.code) {
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return sendProblem(reply, badRequest('malformed_json', 'The request body is not valid JSON.'));
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return sendProblem(reply, new AppError(415, 'unsupported_media_type', 'Send the body as application/json.'));
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return sendProblem(reply, new AppError(413, 'body_too_large', 'The request body is too large.'));
      case 'FST_ERR_RATE_LIMIT_EXCEEDED':
        break;
    }
    if (fe.statusCode === 429) {
      return sendProblem(reply, new AppError(429, 'rate_limited', 'Too many requests; retry later.'));
    }
    if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
      return sendProblem(reply, new AppError(fe.statusCode, 'bad_request', 'The request could not be processed.'));
    }
    request.log.error({ err: error }, 'unhandled error');
    return sendProblem(reply, new AppError(500, 'internal_error', 'An unexpected error occurred; it has been logged.'));
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, new AppError(404, 'route_not_found', `No route ${request.method} ${request.url.split('?')[0]}.`)));
}
