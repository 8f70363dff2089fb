// Connector runtime registry: run a flow step's action, or test a stored credential, against
// an external system. Callers pass already-decrypted credentials; nothing returned or thrown
// from here contains a secret of that credential.
import * as ftp from './ftp.ts';
import * as http from './http.ts';
import { scrubSecrets, credentialSecrets } from './scrub.ts';
import * as sftp from './sftp.ts';
import {
  ConnectorError,
  type ActionContext,
  type ConnectorKind,
  type ResolvedCredential,
  type TestConnectionResult,
} from './types.ts';

export { ConnectorError } from './types.ts';
export type * from './types.ts';
export { scrubSecrets } from './scrub.ts';
export { redactUrl, parseEndpoint } from './endpoint.ts';

type ActionFn = (input: unknown, cred: ResolvedCredential, ctx: ActionContext) => Promise<unknown>;

interface Connector {
  actions: Readonly<Record<string, ActionFn>>;
  testConnection(cred: ResolvedCredential, ctx: ActionContext): Promise<void>;
}

const CONNECTORS: Readonly<Record<ConnectorKind, Connector>> = { sftp, ftp, http };

/** Action names per connector kind. */
export const CONNECTOR_ACTIONS: Readonly<Record<ConnectorKind, readonly string[]>> = {
  sftp: Object.keys(sftp.actions),
  ftp: Object.keys(ftp.actions),
  http: Object.keys(http.actions),
};

export function isConnectorKind(kind: unknown): kind is ConnectorKind {
  return typeof kind === 'string' && Object.hasOwn(CONNECTORS, kind);
}

/** Any failure as a ConnectorError with a scrubbed message; unexpected errors lose their text. */
function normalise(err: unknown, cred: ResolvedCredential): ConnectorError {
  const secrets = credentialSecrets(cred);
  if (err instanceof ConnectorError) {
    return new ConnectorError(err.code, scrubSecrets(err.message, secrets), err.status);
  }
  return new ConnectorError('protocol_error', 'unexpected connector failure');
}

/**
 * Runs `action` of connector `kind`. Resolves with the action's output; rejects only with a
 * ConnectorError (unknown kind/action and invalid input are 'bad_input').
 */
export async function runAction(
  kind: ConnectorKind,
  action: string,
  input: unknown,
  cred: ResolvedCredential,
  ctx: ActionContext,
): Promise<unknown> {
  try {
    if (!isConnectorKind(kind)) throw new ConnectorError('bad_input', `unknown connector kind: ${String(kind)}`);
    const actions = CONNECTORS[kind].actions;
    if (typeof action !== 'string' || !Object.hasOwn(actions, action)) {
      throw new ConnectorError('bad_input', `unknown ${kind} action: ${String(action).slice(0, 64)}`);
    }
    return await actions[action]!(input, cred, ctx);
  } catch (err) {
    throw normalise(err, cred);
  }
}

/**
 * Checks that the credential works (logs in; for file protocols lists the base path, for HTTP
 * GETs the endpoint). Never throws: failures come back as { ok: false, error }.
 */
export async function testConnection(
  kind: ConnectorKind,
  cred: ResolvedCredential,
  ctx: ActionContext,
): Promise<TestConnectionResult> {
  try {
    if (!isConnectorKind(kind)) throw new ConnectorError('bad_input', `unknown connector kind: ${String(kind)}`);
    await CONNECTORS[kind].testConnection(cred, ctx);
    return { ok: true, error: null };
  } catch (err) {
    const ce = normalise(err, cred);
    return { ok: false, error: { code: ce.code, message: ce.message } };
  }
}
