// Jinja-style templates (Nunjucks), sandboxed. Nunjucks has no sandbox of its own: its runtime
// follows any property a template names, so `{{ range.constructor("return process")() }}`
// reaches Function and runs code. flowgate therefore
//   1. parses every template and accepts only a small set of node types: output, data lookups,
//      literals, operators, `if` / `for`, and whitelisted filters and tests. No function calls,
//      no macros, no `set`, no include/import/extends (and no loader to read files with), no
//      regular-expression literals; names such as `constructor`, `prototype` and `__proto__`
//      are refused outright;
//   2. renders with its own runtime lookups: a template can read only own data properties of
//      the context (plain JSON) and never obtains a function value;
//   3. bounds the work of a render: loop iterations and output size, and the filters whose
//      output could explode (join, replace) check sizes before they allocate.
// Autoescape is off: flowgate renders JSON and text, not HTML.
import nunjucks from 'nunjucks';

export const MAX_TEMPLATE_LENGTH = 65_536;
/** Total loop iterations one render may perform. */
export const MAX_ITERATIONS = 100_000;
/** Characters one render may output (and the largest string a filter may produce). */
export const MAX_OUTPUT = 8 * 1024 * 1024;

/** A template that cannot be saved: syntax error or a construct the sandbox refuses. */
export class TemplateSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TemplateSyntaxError';
  }
}

/** A template failed while rendering (bad filter argument, budget exceeded). */
export class TemplateRenderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TemplateRenderError';
  }
}

const ALLOWED_NODES = new Set([
  'Root', 'Output', 'TemplateData', 'Literal', 'Symbol', 'LookupVal', 'Group', 'Array', 'Dict', 'Pair',
  'InlineIf', 'If', 'For', 'Filter', 'KeywordArgs', 'NodeList', 'Compare', 'CompareOperand', 'In', 'Is',
  'Or', 'And', 'Not', 'Add', 'Concat', 'Sub', 'Mul', 'Div', 'FloorDiv', 'Mod', 'Pow', 'Neg', 'Pos',
  'Switch', 'Case',
]);

const FILTERS = [
  'abs', 'capitalize', 'default', 'd', 'dictsort', 'dump', 'escape', 'e', 'first', 'float', 'groupby', 'int',
  'join', 'last', 'length', 'list', 'lower', 'nl2br', 'random', 'rejectattr', 'reject', 'replace', 'reverse',
  'round', 'select', 'selectattr', 'sort', 'string', 'striptags', 'sum', 'title', 'trim', 'truncate', 'upper',
  'urlencode', 'wordcount', 'tojson', 'b64encode', 'b64decode',
] as const;

const TESTS = [
  'defined', 'undefined', 'divisibleby', 'escaped', 'equalto', 'eq', 'sameas', 'even', 'odd', 'falsy', 'truthy',
  'ge', 'gt', 'greaterthan', 'le', 'lt', 'lessthan', 'ne', 'lower', 'upper', 'null', 'number', 'string',
  'iterable', 'mapping',
] as const;

const FORBIDDEN = new Set(['constructor', 'prototype', '__proto__']);
const isForbiddenName = (n: unknown) => typeof n === 'string' && (FORBIDDEN.has(n) || n.startsWith('__'));

// ---- the environment: no loaders, no globals, only whitelisted filters and tests ----

function toText(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'object') {
    try {
      return JSON.stringify(v) ?? '';
    } catch {
      return '';
    }
  }
  return String(v);
}

function checkSize(n: number): void {
  if (n > MAX_OUTPUT) throw new TemplateRenderError(`a value would exceed ${MAX_OUTPUT} characters`);
}

const ownFilters: Record<string, (...args: any[]) => unknown> = {
  tojson: (v: unknown, indent?: unknown) => JSON.stringify(v, null, typeof indent === 'number' ? Math.min(Math.max(0, indent), 10) : undefined) ?? 'null',
  b64encode: (v: unknown) => Buffer.from(toText(v), 'utf8').toString('base64'),
  b64decode: (v: unknown) => Buffer.from(toText(v), 'base64').toString('utf8'),
  join(list: unknown, sep: unknown = '', attr?: unknown) {
    if (!Array.isArray(list)) return list;
    const s = toText(sep);
    const items = list.map((x) => toText(typeof attr === 'string' && x && typeof x === 'object' && Object.hasOwn(x, attr) ? (x as Record<string, unknown>)[attr] : x));
    checkSize(items.reduce((n, x) => n + x.length, 0) + Math.max(0, items.length - 1) * s.length);
    return items.join(s);
  },
  replace(str: unknown, old: unknown, repl: unknown, max?: unknown) {
    if (typeof str === 'number') str = String(str);
    if (typeof str !== 'string') return str;
    const o = typeof old === 'number' ? String(old) : old;
    if (typeof o !== 'string' || o === '') return str;
    const r = toText(repl);
    const parts = str.split(o);
    const limit = typeof max === 'number' && max >= 0 ? Math.floor(max) : Infinity;
    const count = Math.min(parts.length - 1, limit);
    checkSize(str.length + count * (r.length - o.length));
    if (count === parts.length - 1) return parts.join(r);
    return parts.slice(0, count + 1).join(r) + o + parts.slice(count + 1).join(o);
  },
};

function makeEnvironment(): nunjucks.Environment {
  const env = new nunjucks.Environment([], { autoescape: false, throwOnUndefined: false });
  const e = env as unknown as { filters: Record<string, unknown>; tests: Record<string, unknown>; globals: Record<string, unknown> };
  const builtinFilters = e.filters;
  const builtinTests = e.tests;
  const filters: Record<string, unknown> = Object.create(null);
  for (const name of FILTERS) {
    const fn = (ownFilters[name] ?? builtinFilters[name]) as ((...a: unknown[]) => unknown) | undefined;
    if (typeof fn !== 'function') throw new Error(`nunjucks has no filter ${name}`);
    filters[name] = function (this: unknown, ...args: unknown[]) {
      const out = fn.apply(this, args);
      if (typeof out === 'string') checkSize(out.length);
      return out;
    };
  }
  const tests: Record<string, unknown> = Object.create(null);
  for (const name of TESTS) if (typeof builtinTests[name] === 'function') tests[name] = builtinTests[name];
  e.filters = filters;
  e.tests = tests;
  e.globals = Object.create(null);
  return env;
}

const env = makeEnvironment();
const baseRuntime = nunjucks.runtime as unknown as Record<string, any>;

// ---- static checks ----

interface AstNode {
  typename: string;
  fields?: string[];
  children?: AstNode[];
  value?: unknown;
  lineno?: number;
  colno?: number;
  [k: string]: unknown;
}

function where(n: AstNode): string {
  return typeof n.lineno === 'number' ? ` (line ${n.lineno + 1}, column ${(n.colno ?? 0) + 1})` : '';
}

function refuse(n: AstNode, what: string): never {
  throw new TemplateSyntaxError(`${what} is not allowed in templates${where(n)}`);
}

function describeNode(t: string): string {
  switch (t) {
    case 'FunCall': return 'calling a function';
    case 'Set': return '{% set %}';
    case 'Macro': case 'Caller': return 'a macro';
    case 'Include': return '{% include %}';
    case 'Import': case 'FromImport': return '{% import %}';
    case 'Extends': return '{% extends %}';
    case 'Block': case 'Super': return 'a block';
    case 'Capture': return 'a filter block';
    default: return `"${t}"`;
  }
}

function check(node: unknown, forDepth: number): void {
  if (node === null || node === undefined || typeof node !== 'object') return;
  const n = node as AstNode;
  if (typeof n.typename !== 'string') return;
  const t = n.typename;
  if (!ALLOWED_NODES.has(t)) refuse(n, describeNode(t));
  switch (t) {
    case 'Literal':
      if (n.value instanceof RegExp) refuse(n, 'a regular expression');
      return;
    case 'Symbol':
      if (isForbiddenName(n.value)) refuse(n, `the name "${String(n.value)}"`);
      return;
    case 'Filter': {
      const name = (n.name as AstNode | undefined)?.value;
      if (typeof name !== 'string' || !(FILTERS as readonly string[]).includes(name)) {
        refuse(n, `the filter "${String(name)}" (allowed: ${FILTERS.join(', ')})`);
      }
      check(n.args, forDepth);
      return;
    }
    case 'Is': {
      check(n.left, forDepth);
      const right = n.right as AstNode | null;
      let name: unknown;
      if (right?.typename === 'Symbol') name = right.value;
      else if (right?.typename === 'FunCall') {
        name = (right.name as AstNode | undefined)?.typename === 'Symbol' ? (right.name as AstNode).value : undefined;
        check(right.args, forDepth);
      }
      if (typeof name !== 'string' || !(TESTS as readonly string[]).includes(name)) refuse(n, `the test "${String(name)}"`);
      return;
    }
    case 'LookupVal': {
      const key = n.val as AstNode | null;
      if (key?.typename === 'Literal' && isForbiddenName(key.value)) refuse(key, `the name "${String(key.value)}"`);
      break;
    }
    case 'For':
      if (forDepth >= 3) refuse(n, 'nesting loops more than 3 deep');
      for (const f of n.fields ?? []) check(n[f], f === 'body' || f === 'else_' ? forDepth + 1 : forDepth);
      return;
  }
  if (Array.isArray(n.children)) for (const c of n.children) check(c, forDepth);
  for (const f of n.fields ?? []) {
    const v = n[f];
    if (Array.isArray(v)) v.forEach((x) => check(x, forDepth));
    else check(v, forDepth);
  }
}

// ---- compiled templates ----

type RootFn = (env: unknown, context: unknown, frame: unknown, runtime: unknown, cb: (err: unknown, res: unknown) => void) => void;

export interface CompiledTemplate {
  source: string;
  /** The whole template is one `{{ expression }}`: rendering keeps the value's JSON type. */
  singleExpression: boolean;
  /** When the template is `{{ request.query.<name> }}` (optionally through filters): that name. */
  queryParam: string | null;
  render(data: Record<string, unknown>): unknown;
}

/** Does the string contain template syntax at all? Plain strings are used as they are. */
export function isTemplate(s: string): boolean {
  return s.includes('{{') || s.includes('{%') || s.includes('{#');
}

function queryParamOf(expr: AstNode): string | null {
  let e: AstNode | undefined = expr;
  while (e?.typename === 'Filter') e = ((e.args as AstNode | undefined)?.children ?? [])[0];
  if (e?.typename !== 'LookupVal') return null;
  const target = e.target as AstNode;
  const val = e.val as AstNode;
  if (target?.typename !== 'LookupVal' || val?.typename !== 'Literal' || typeof val.value !== 'string') return null;
  const root = target.target as AstNode;
  const q = target.val as AstNode;
  if (root?.typename === 'Symbol' && root.value === 'request' && q?.typename === 'Literal' && q.value === 'query') return val.value;
  return null;
}

const cache = new Map<string, CompiledTemplate>();
const CACHE_MAX = 2000;

/** Parses, checks and compiles; throws TemplateSyntaxError. Results are cached by source. */
export function compileTemplate(source: string): CompiledTemplate {
  const hit = cache.get(source);
  if (hit) return hit;
  if (source.length > MAX_TEMPLATE_LENGTH) throw new TemplateSyntaxError(`a template may have at most ${MAX_TEMPLATE_LENGTH} characters`);
  let ast: AstNode;
  try {
    ast = (nunjucks as unknown as { parser: { parse(src: string): AstNode } }).parser.parse(source);
  } catch (err) {
    throw new TemplateSyntaxError(`syntax error: ${cleanMessage(err)}`);
  }
  check(ast, 0);
  let root: RootFn;
  try {
    const code = (nunjucks as unknown as { compiler: { compile(src: string, a: unknown[], e: unknown[], name: string, opts: object): string } })
      .compiler.compile(source, [], [], 'template', {});
    root = (new Function(code)() as { root: RootFn }).root; // eslint-disable-line no-new-func
  } catch (err) {
    throw new TemplateSyntaxError(cleanMessage(err));
  }
  const top = ast.children ?? [];
  const single = top.length === 1 && top[0].typename === 'Output' && (top[0].children ?? []).length === 1 &&
    top[0].children![0].typename !== 'TemplateData';
  const compiled: CompiledTemplate = {
    source,
    singleExpression: single,
    queryParam: single ? queryParamOf(top[0].children![0]) : null,
    render: (data) => renderWith(root, data, single),
  };
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
  cache.set(source, compiled);
  return compiled;
}

function cleanMessage(err: unknown): string {
  const raw = err instanceof Error ? err.message : String(err);
  // Nunjucks prefixes "(unknown path) [Line 1, Column 4]\n  "; keep the position, drop the noise.
  return raw.replace(/^\(unknown path\)\s*/, '').replace(/\s*\n\s*/g, ' ').replace(/^Template render error:\s*/, '').slice(0, 500);
}

function renderWith(root: RootFn, data: Record<string, unknown>, single: boolean): unknown {
  let iterations = 0;
  let output = 0;
  const captured: unknown[] = [];
  const ctx: Record<string, unknown> = Object.create(null);
  for (const [k, v] of Object.entries(data)) ctx[k] = v;
  const noFunctions = (v: unknown) => (typeof v === 'function' ? undefined : v);
  const runtime = Object.assign(Object.create(null), baseRuntime, {
    memberLookup(obj: unknown, key: unknown) {
      if (obj === null || obj === undefined) return undefined;
      if (typeof key !== 'string' && typeof key !== 'number') return undefined;
      if (typeof key === 'string' && isForbiddenName(key)) return undefined;
      const o = typeof obj === 'string' ? Object(obj) : obj;
      if ((typeof o !== 'object' && typeof o !== 'function') || !Object.hasOwn(o as object, key)) return undefined;
      return noFunctions((o as Record<string | number, unknown>)[key]);
    },
    contextOrFrameLookup(_context: unknown, frame: { lookup(n: string): unknown }, name: string) {
      if (isForbiddenName(name)) return undefined;
      const v = frame.lookup(name);
      if (v !== undefined) return noFunctions(v);
      return Object.hasOwn(ctx, name) ? noFunctions(ctx[name]) : undefined;
    },
    fromIterator(v: unknown) {
      if (v && typeof v === 'object') iterations += Array.isArray(v) ? v.length : Object.keys(v).length;
      else if (typeof v === 'string') iterations += v.length;
      if (iterations > MAX_ITERATIONS) throw new TemplateRenderError(`loops may run at most ${MAX_ITERATIONS} times in one template`);
      return baseRuntime.fromIterator(v);
    },
    suppressValue(v: unknown) {
      if (single) captured.push(v);
      const s = toText(v);
      output += s.length;
      if (output > MAX_OUTPUT) throw new TemplateRenderError(`the output would exceed ${MAX_OUTPUT} characters`);
      return s;
    },
    callWrap() {
      throw new TemplateRenderError('calling functions is not allowed in templates');
    },
  });
  const context = {
    ctx,
    env,
    lookup: (name: string) => (Object.hasOwn(ctx, name) ? noFunctions(ctx[name]) : undefined),
    setVariable() { throw new TemplateRenderError('{% set %} is not allowed in templates'); },
    addExport() {},
    getVariables: () => ctx,
  };
  const frame = new baseRuntime.Frame();
  frame.topLevel = true;
  let error: unknown = null;
  let result: unknown;
  let done = false;
  try {
    root(env, context, frame, runtime, (err, res) => {
      done = true;
      error = err;
      result = res;
    });
  } catch (err) {
    error = err;
  }
  if (error) {
    const cause = (error as { cause?: unknown }).cause;
    throw new TemplateRenderError(cleanMessage(cause instanceof TemplateRenderError ? cause : error).replace(/^Error: /, ''));
  }
  if (!done) throw new TemplateRenderError('the template did not finish synchronously');
  if (single) return captured.length ? (captured[0] === undefined ? null : captured[0]) : null;
  return result;
}

/**
 * Renders every string of a JSON value that contains template syntax; `path` names the field
 * in errors (e.g. `input.path`). A string that is one `{{ expression }}` keeps the JSON type
 * of the value (an object stays an object).
 */
export function renderDeep(value: unknown, data: Record<string, unknown>, path: string): unknown {
  if (typeof value === 'string') {
    if (!isTemplate(value)) return value;
    let tpl: CompiledTemplate;
    try {
      tpl = compileTemplate(value);
    } catch (err) {
      throw new TemplateRenderError(`${path}: ${(err as Error).message}`);
    }
    try {
      return tpl.render(data);
    } catch (err) {
      throw new TemplateRenderError(`${path}: ${(err as Error).message}`);
    }
  }
  if (Array.isArray(value)) return value.map((v, i) => renderDeep(v, data, `${path}.${i}`));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = renderDeep(v, data, `${path}.${k}`);
    return out;
  }
  return value;
}

/** Checks every template string of a JSON value; returns the errors by dotted path. */
export function checkDeep(value: unknown, path: string, errors: { field: string; message: string }[]): void {
  if (typeof value === 'string') {
    if (!isTemplate(value)) return;
    try {
      compileTemplate(value);
    } catch (err) {
      errors.push({ field: path, message: `bad template: ${(err as Error).message}` });
    }
    return;
  }
  if (Array.isArray(value)) value.forEach((v, i) => checkDeep(v, `${path}.${i}`, errors));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) checkDeep(v, `${path}.${k}`, errors);
}
