// Connector auths: stored credentials for connectors. Secrets (password, auth_token,
// auth_details, the password inside api_endpoint) are write-only: encrypted with the key ring
// on the way in, decrypted only at the moment of use (a credential test, a flow step through
// resolveForRun), and never put into a response, log line, error or audit event.
import crypto from 'node:crypto';
import type { Keyring } from '../../crypto/keyring.ts';
import { DecryptError } from '../../crypto/keyring.ts';
import type { ConnectorAuthsStore, SecretField } from './store.ts';
import { secretAad, SECRET_FIELDS } from './store.ts';
import type { ConnectorAuthGrantRow, ConnectorAuthRow } from './tables.ts';
import { grantFlags, grantRights, rightsOf, type Right, type Subject, type Visibility } from './permissions.ts';
import type { ConnectorsService, Connector } from '../connectors/service.ts';
import { AUTH_TYPES, FLOWGATE_CONNECTOR_ID } from '../connectors/catalogue.ts';
import type { IdentityStore } from '../identity/store.ts';
import type { Actor, Principal } from '../access/principal.ts';
import { AppError, conflict, notFound, validationFailed, type FieldError } from '../../http/errors.ts';
import { nowIso } from '../../db/time.ts';
import type { AuditService } from '../audit/service.ts';
import type { FilterSpec } from '../../http/filter.ts';
import { type ListQuery, type Page, listPage } from '../../http/pagination.ts';
import { redactUrl, testConnection as runtimeTestConnection } from '../connectors/runtime/index.ts';
import { credentialSecrets, scrubSecrets } from '../connectors/runtime/scrub.ts';
import type { ConnectorKind, ResolvedCredential } from '../connectors/runtime/types.ts';

// ---------------------------------------------------------------------------------------------
// Public shapes

/** A connector auth as every response shows it: no secret, only whether each one is set. */
export interface ConnectorAuthView {
  id: string;
  connector_id: string;
  name: string;
  auth_type: string;
  /** The password of the URL's user-info replaced by `***`. */
  api_endpoint: string;
  username: string;
  user_input: Record<string, unknown>;
  tags: string[];
  password_set: boolean;
  auth_token_set: boolean;
  auth_details_set: boolean;
  visibility: Visibility;
  owner_user_id: string;
  last_checked_at: string | null;
  last_check_ok: boolean | null;
  created_at: string;
  updated_at: string;
}

export interface NewConnectorAuth {
  connector_id: string;
  name: string;
  auth_type: string;
  auth_token?: string;
  auth_details?: string;
  api_endpoint?: string;
  user_input?: Record<string, unknown>;
  username?: string;
  password?: string;
  tags?: string[];
  visibility?: Visibility;
}

/** The seed's update column: connector_id, name, auth_type, api_endpoint, username, password. */
export interface ConnectorAuthPatch {
  connector_id?: string;
  name?: string;
  auth_type?: string;
  api_endpoint?: string;
  username?: string;
  password?: string;
}

export interface GrantInput { grantee_type: 'user' | 'team'; grantee_id: string; rights: Right[] }
export interface PermissionsView {
  visibility: Visibility;
  owner_user_id: string;
  grants: Array<{ grantee_type: 'user' | 'team'; grantee_id: string; rights: Right[] }>;
}
export interface PermissionsInput { visibility?: Visibility; owner_user_id?: string; grants?: GrantInput[] }

export interface TestResult {
  ok: boolean;
  checked_at: string;
  error: { code: string; message: string } | null;
}

export type ConnectorAuthResolveErrorCode = 'connector_auth_not_found' | 'connector_mismatch' | 'connector_auth_unreadable';

/**
 * resolveForRun could not hand out the credential. The message names ids at most, never a secret.
 *   connector_auth_not_found   not a uuid, not in the company, not visible to the user, or deleted
 *   connector_mismatch         the auth belongs to another connector than the step's
 *   connector_auth_unreadable  its ciphertext does not decrypt here (moved, tampered, or key lost)
 */
export class ConnectorAuthResolveError extends Error {
  readonly code: ConnectorAuthResolveErrorCode;
  constructor(code: ConnectorAuthResolveErrorCode, message: string) {
    super(message);
    this.name = 'ConnectorAuthResolveError';
    this.code = code;
  }
}

export interface ResolveArgs {
  companyId: string;
  /** The user whose rights decide (the flow's owner). */
  userId: string;
  authId: string;
  /** The connector of the step that wants the credential. */
  connectorId: string;
  /** Why it is decrypted, for the audit log, e.g. 'flow_run:<run id>'. */
  purpose: string;
  actor?: Actor | null;
}

export type ResolvedForRun = ResolvedCredential & { id: string; secrets: string[] };

export const CONNECTOR_AUTH_FILTERS: FilterSpec = {
  name: { column: 'name', type: 'string' },
  connector_id: { column: 'connector_id', type: 'string' },
  auth_type: { column: 'auth_type', type: 'string' },
  tags: { column: 'tags', type: 'json_array' },
  visibility: { column: 'visibility', type: 'string' },
  owner_user_id: { column: 'owner_user_id', type: 'string' },
  created_at: { column: 'created_at', type: 'timestamp' },
};

/** Limits beyond what the route schemas check (sizes of JSON values). */
export const LIMITS = { userInputJson: 16_384 } as const;

/** What a credential test may take, connection set-up included. */
const DEFAULT_TEST_TIMEOUT_MS = 15_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/**
 * Fields each auth_type needs (the README has this table). username/password may come from the
 * fields or from the api_endpoint user-info (the fields win, the URL fills an empty field).
 */
export const REQUIRED_BY_TYPE: Record<string, readonly ('username' | 'password' | 'auth_token' | 'auth_details')[]> = {
  username_password: ['username', 'password'],
  basic_auth: ['username', 'password'],
  api_key: ['auth_token'],
  oauth2: ['auth_token'],
  refreshable_token: ['auth_details'],
  none: [],
};

const ENDPOINT_SCHEMES: Record<string, readonly string[]> = {
  sftp: ['sftp:'],
  ftp: ['ftp:', 'ftps:'],
  http: ['http:', 'https:'],
};
const ANY_SCHEMES = ['sftp:', 'ftp:', 'ftps:', 'http:', 'https:'];

const forbiddenRight = (right: Right) =>
  new AppError(403, 'forbidden', `You may see this connector auth but not ${right === 'read' ? 'read' : right} it; ask its owner or an admin.`, {
    extra: { required_right: right },
  });

// ---------------------------------------------------------------------------------------------

function toView(r: ConnectorAuthRow): ConnectorAuthView {
  return {
    id: r.id, connector_id: r.connector_id, name: r.name, auth_type: r.auth_type, api_endpoint: r.api_endpoint,
    username: r.username, user_input: JSON.parse(r.user_input), tags: JSON.parse(r.tags),
    password_set: !!r.password_enc, auth_token_set: !!r.auth_token_enc, auth_details_set: !!r.auth_details_enc,
    visibility: r.visibility, owner_user_id: r.owner_user_id, last_checked_at: r.last_checked_at,
    last_check_ok: r.last_check_ok === null ? null : r.last_check_ok === 1, created_at: r.created_at, updated_at: r.updated_at,
  };
}

/** An api_endpoint as given, parsed into what is stored. Never quotes the value in errors. */
interface EndpointParts {
  /** Stored in clear: the URL with its password replaced by `***`, or '' for none. */
  redacted: string;
  /** The full URL when it carries a password (to be encrypted), else null. */
  full: string | null;
  urlUser: string;
  urlHasPassword: boolean;
}

function parseEndpointInput(value: string, connector: Connector, errors: FieldError[]): EndpointParts | null {
  const v = value.trim();
  if (v === '') return { redacted: '', full: null, urlUser: '', urlHasPassword: false };
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    errors.push({ field: 'api_endpoint', message: 'must be a valid absolute URL' });
    return null;
  }
  const allowed = connector.runtime ? ENDPOINT_SCHEMES[connector.runtime] ?? ANY_SCHEMES : ANY_SCHEMES;
  if (!allowed.includes(url.protocol)) {
    errors.push({ field: 'api_endpoint', message: `must be a ${allowed.map((p) => p + '//').join(' or ')} URL for connector ${connector.name}` });
    return null;
  }
  if (url.hostname === '') {
    errors.push({ field: 'api_endpoint', message: 'must name a host' });
    return null;
  }
  let urlUser = url.username;
  try { urlUser = decodeURIComponent(url.username); } catch { /* keep raw */ }
  if (url.password === '') return { redacted: v, full: null, urlUser, urlHasPassword: false };
  const redacted = redactUrl(v);
  return { redacted, full: v, urlUser, urlHasPassword: true };
}

function endpointRequired(c: Connector): boolean {
  if (c.runtime === 'sftp' || c.runtime === 'ftp') return true;
  return c.runtime === 'http' && !c.base_domain && c.id !== FLOWGATE_CONNECTOR_ID;
}

function nonEmpty(s: string | null | undefined): s is string {
  return typeof s === 'string' && s !== '';
}

export interface ConnectorAuthsOptions {
  /** Base URL of this installation: the endpoint of the built-in flowgate connector when none is stored. */
  baseUrl: string;
  testTimeoutMs?: number;
}

export class ConnectorAuthsService {
  readonly #store: ConnectorAuthsStore;
  readonly #connectors: ConnectorsService;
  readonly #identity: IdentityStore;
  readonly #keyring: Keyring;
  readonly #audit: AuditService;
  readonly #opts: ConnectorAuthsOptions;

  constructor(deps: {
    store: ConnectorAuthsStore; connectors: ConnectorsService; identity: IdentityStore; keyring: Keyring; audit: AuditService;
  }, opts: ConnectorAuthsOptions) {
    this.#store = deps.store;
    this.#connectors = deps.connectors;
    this.#identity = deps.identity;
    this.#keyring = deps.keyring;
    this.#audit = deps.audit;
    this.#opts = opts;
  }

  // ---- access ----

  async #subjectOf(p: Pick<Principal, 'userId' | 'companyId' | 'role'>): Promise<Subject> {
    // Admins see everything: no need for their teams.
    const teamIds = p.role === 'admin' ? [] : await this.#identity.teamIdsOfUser(p.companyId, p.userId);
    return { userId: p.userId, role: p.role, teamIds };
  }

  /** The row, if the principal has `right` on it: invisible -> 404 like missing; visible without the right -> 403. */
  async #authorize(actor: Actor, id: string, right: Right): Promise<{ row: ConnectorAuthRow; rights: Set<Right> }> {
    const p = actor.principal;
    const row = await this.#store.authById(p.companyId, id);
    if (!row) throw notFound('connector auth');
    const subject = await this.#subjectOf(p);
    const grants = subject.role === 'admin' || row.owner_user_id === subject.userId ? [] : await this.#store.subjectGrants(p.companyId, id, subject);
    const rights = rightsOf(subject, row, grants);
    if (!rights.has('read')) throw notFound('connector auth');
    if (!rights.has(right)) throw forbiddenRight(right);
    return { row, rights };
  }

  // ---- secrets ----

  #encrypt(companyId: string, id: string, field: SecretField, value: string | null | undefined): string | null {
    return nonEmpty(value) ? this.#keyring.encrypt(value, secretAad(companyId, id, field)) : null;
  }

  async #decrypt(row: ConnectorAuthRow, field: SecretField): Promise<string | null> {
    const ct = row[SECRET_FIELDS[field]];
    if (!nonEmpty(ct)) return null;
    return this.#keyring.decryptStringAsync(ct, secretAad(row.company_id, row.id, field));
  }

  /** Decrypts every secret of the row into a credential. Throws DecryptError. */
  async #credential(row: ConnectorAuthRow, connector: Connector | null): Promise<ResolvedForRun> {
    const [password, authToken, authDetails, fullEndpoint] = await Promise.all([
      this.#decrypt(row, 'password'), this.#decrypt(row, 'auth_token'), this.#decrypt(row, 'auth_details'), this.#decrypt(row, 'api_endpoint'),
    ]);
    let apiEndpoint: string | null = fullEndpoint ?? (row.api_endpoint === '' ? null : row.api_endpoint);
    if (apiEndpoint === null && connector) {
      if (connector.id === FLOWGATE_CONNECTOR_ID) apiEndpoint = this.#opts.baseUrl;
      else if (connector.base_domain) apiEndpoint = `https://${connector.base_domain}`;
    }
    const cred: ResolvedCredential = {
      authType: row.auth_type,
      apiEndpoint,
      username: row.username === '' ? null : row.username,
      password,
      authToken,
      authDetails,
    };
    const secrets = new Set(credentialSecrets(cred));
    for (const s of [password, authToken, authDetails]) if (nonEmpty(s)) secrets.add(s);
    return { ...cred, id: row.id, secrets: [...secrets] };
  }

  // ---- validation shared by create and update ----

  /**
   * Checks the combination of connector, auth_type, endpoint and the fields each type needs.
   * `state` is the record as it would be after the write (secrets only as "is set").
   */
  #checkCombination(connector: Connector, state: {
    auth_type: string; username: string; passwordSet: boolean; tokenSet: boolean; detailsSet: boolean;
    endpoint: EndpointParts | null;
  }, errors: FieldError[]): void {
    if (!(AUTH_TYPES as readonly string[]).includes(state.auth_type)) {
      errors.push({ field: 'auth_type', message: `must be one of ${AUTH_TYPES.join(', ')}` });
      return;
    }
    if (!connector.auth_types.includes(state.auth_type)) {
      errors.push({
        field: 'auth_type',
        message: connector.auth_types.length
          ? `connector ${connector.name} accepts only ${connector.auth_types.join(', ')}`
          : `connector ${connector.name} takes no credentials`,
      });
      return;
    }
    const ep = state.endpoint;
    if (ep && ep.redacted === '' && endpointRequired(connector)) {
      errors.push({ field: 'api_endpoint', message: `is required for connector ${connector.name}` });
    }
    for (const f of REQUIRED_BY_TYPE[state.auth_type] ?? []) {
      const ok = f === 'username' ? state.username !== '' || (ep?.urlUser ?? '') !== ''
        : f === 'password' ? state.passwordSet || (ep?.urlHasPassword ?? false)
          : f === 'auth_token' ? state.tokenSet : state.detailsSet;
      if (!ok) {
        const where = f === 'username' || f === 'password' ? ' (in the field, or in the api_endpoint user-info)' : '';
        errors.push({ field: f, message: `is required for auth_type ${state.auth_type}${where}` });
      }
    }
  }

  async #connectorFor(companyId: string, id: string, errors: FieldError[]): Promise<Connector | null> {
    const c = UUID.test(id) ? await this.#connectors.get(companyId, id) : null;
    if (!c) errors.push({ field: 'connector_id', message: 'no connector with this id is visible to your company' });
    return c;
  }

  // ---- API operations ----

  async create(actor: Actor, input: NewConnectorAuth): Promise<ConnectorAuthView> {
    const p = actor.principal;
    const companyId = p.companyId;
    const errors: FieldError[] = [];
    const connector = await this.#connectorFor(companyId, input.connector_id, errors);
    const userInput = input.user_input ?? {};
    if (JSON.stringify(userInput).length > LIMITS.userInputJson) {
      errors.push({ field: 'user_input', message: `must be at most ${LIMITS.userInputJson} characters as JSON` });
    }
    let endpoint: EndpointParts | null = null;
    if (connector) {
      endpoint = parseEndpointInput(input.api_endpoint ?? '', connector, errors);
      if (endpoint) {
        this.#checkCombination(connector, {
          auth_type: input.auth_type, username: input.username ?? '', passwordSet: nonEmpty(input.password),
          tokenSet: nonEmpty(input.auth_token), detailsSet: nonEmpty(input.auth_details), endpoint,
        }, errors);
      }
    }
    if (errors.length || !connector || !endpoint) throw validationFailed(errors);

    const id = crypto.randomUUID();
    const now = nowIso();
    const row: ConnectorAuthRow = {
      id, company_id: companyId, connector_id: connector.id, owner_user_id: p.userId, name: input.name, auth_type: input.auth_type,
      api_endpoint: endpoint.redacted, api_endpoint_enc: this.#encrypt(companyId, id, 'api_endpoint', endpoint.full),
      username: input.username ?? '',
      password_enc: this.#encrypt(companyId, id, 'password', input.password),
      auth_token_enc: this.#encrypt(companyId, id, 'auth_token', input.auth_token),
      auth_details_enc: this.#encrypt(companyId, id, 'auth_details', input.auth_details),
      user_input: JSON.stringify(userInput), tags: JSON.stringify([...new Set(input.tags ?? [])]),
      visibility: input.visibility ?? 'company', last_checked_at: null, last_check_ok: null, created_at: now, updated_at: now,
    };
    await this.#store.db.transaction().execute(async (trx) => {
      await this.#store.insertAuth(row, trx);
      await this.#audit.record(actor, companyId, 'connector_auth.created', { type: 'connector_auth', id }, {
        connector_id: row.connector_id, auth_type: row.auth_type, visibility: row.visibility,
        fields: Object.keys(input).filter((k) => (input as unknown as Record<string, unknown>)[k] !== '').sort(),
      }, trx);
    });
    return toView(row);
  }

  async list(actor: Actor, q: ListQuery): Promise<Page<ConnectorAuthView>> {
    const subject = await this.#subjectOf(actor.principal);
    return listPage(q, CONNECTOR_AUTH_FILTERS, (p) => this.#store.listAuths(actor.principal.companyId, subject, p.conds, p.cursor, p.limit), toView);
  }

  async read(actor: Actor, id: string): Promise<ConnectorAuthView> {
    return toView((await this.#authorize(actor, id, 'read')).row);
  }

  async update(actor: Actor, id: string, patch: ConnectorAuthPatch): Promise<ConnectorAuthView> {
    const companyId = actor.principal.companyId;
    const { row: before } = await this.#authorize(actor, id, 'update');
    const keys = Object.keys(patch) as (keyof ConnectorAuthPatch)[];
    if (keys.length === 0) throw validationFailed([{ field: '(body)', message: 'name at least one field to change' }]);
    const errors: FieldError[] = [];
    const connectorId = patch.connector_id ?? before.connector_id;
    const connector = await this.#connectorFor(companyId, connectorId, errors);

    // The endpoint: sending back the redacted value unchanged keeps the stored one (and its password).
    let endpoint: EndpointParts | null = null;
    const keepEndpoint = patch.api_endpoint === undefined || patch.api_endpoint.trim() === before.api_endpoint;
    if (connector) {
      if (keepEndpoint) {
        endpoint = parseEndpointInput(before.api_endpoint, connector, errors);
        if (endpoint && before.api_endpoint_enc) { endpoint.urlHasPassword = true; endpoint.full = null; }
        // A stored endpoint that no longer suits a newly chosen connector was reported above.
      } else {
        const given = patch.api_endpoint!;
        endpoint = parseEndpointInput(given, connector, errors);
        if (endpoint?.full !== null && endpoint && safeUrlPassword(endpoint.full) === '***') {
          errors.push({ field: 'api_endpoint', message: 'carries the redaction placeholder *** as password; send the real password, or the stored value unchanged' });
        }
      }
      if (endpoint) {
        this.#checkCombination(connector, {
          auth_type: patch.auth_type ?? before.auth_type,
          username: patch.username ?? before.username,
          passwordSet: patch.password !== undefined ? nonEmpty(patch.password) : !!before.password_enc,
          tokenSet: !!before.auth_token_enc, detailsSet: !!before.auth_details_enc, endpoint,
        }, errors);
      }
    }
    if (errors.length || !connector || !endpoint) throw validationFailed(errors);

    const set: Partial<ConnectorAuthRow> = { updated_at: nowIso() };
    if (patch.connector_id !== undefined) set.connector_id = connector.id;
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.auth_type !== undefined) set.auth_type = patch.auth_type;
    if (patch.username !== undefined) set.username = patch.username;
    if (patch.password !== undefined) set.password_enc = this.#encrypt(companyId, id, 'password', patch.password);
    if (!keepEndpoint) {
      set.api_endpoint = endpoint.redacted;
      set.api_endpoint_enc = this.#encrypt(companyId, id, 'api_endpoint', endpoint.full);
    }
    await this.#store.db.transaction().execute(async (trx) => {
      if ((await this.#store.updateAuth(companyId, id, set, trx)) === 0) throw notFound('connector auth');
      await this.#audit.record(actor, companyId, 'connector_auth.updated', { type: 'connector_auth', id }, { fields: [...keys].sort() }, trx);
    });
    return toView({ ...before, ...set });
  }

  async delete(actor: Actor, id: string): Promise<void> {
    const companyId = actor.principal.companyId;
    const { row } = await this.#authorize(actor, id, 'delete');
    await this.#store.db.transaction().execute(async (trx) => {
      if ((await this.#store.deleteAuth(companyId, id, trx)) === 0) throw notFound('connector auth');
      await this.#audit.record(actor, companyId, 'connector_auth.deleted', { type: 'connector_auth', id },
        { connector_id: row.connector_id, name: row.name }, trx);
    });
  }

  // ---- permissions ----

  #permissionsView(row: Pick<ConnectorAuthRow, 'visibility' | 'owner_user_id'>, grants: ConnectorAuthGrantRow[]): PermissionsView {
    return {
      visibility: row.visibility,
      owner_user_id: row.owner_user_id,
      grants: grants.map((g) => ({
        grantee_type: g.user_id !== null ? 'user' as const : 'team' as const,
        grantee_id: (g.user_id ?? g.team_id)!,
        rights: grantRights(g),
      })),
    };
  }

  async getPermissions(actor: Actor, id: string): Promise<PermissionsView> {
    const { row } = await this.#authorize(actor, id, 'manage');
    return this.#permissionsView(row, await this.#store.grantsOf(actor.principal.companyId, id));
  }

  async setPermissions(actor: Actor, id: string, input: PermissionsInput): Promise<PermissionsView> {
    const p = actor.principal;
    const companyId = p.companyId;
    const { row } = await this.#authorize(actor, id, 'manage');
    if (Object.keys(input).length === 0) throw validationFailed([{ field: '(body)', message: 'name at least one field to change' }]);
    const errors: FieldError[] = [];
    const visibility = input.visibility ?? row.visibility;

    if (input.owner_user_id !== undefined && input.owner_user_id !== row.owner_user_id) {
      if (p.role !== 'admin' && p.userId !== row.owner_user_id) {
        throw new AppError(403, 'forbidden', 'Only the owner or an admin may hand a connector auth to another owner.', { extra: { required_right: 'owner' } });
      }
      const u = await this.#identity.userById(companyId, input.owner_user_id);
      if (!u || u.disabled) errors.push({ field: 'owner_user_id', message: 'no active user with this id in your company' });
    }

    let grants: ConnectorAuthGrantRow[] | null = null;
    if (input.grants !== undefined) {
      if (visibility === 'private' && input.grants.length > 0) {
        errors.push({ field: 'grants', message: 'a private connector auth has no grants; use visibility restricted' });
      }
      const seen = new Set<string>();
      const userIds = input.grants.filter((g) => g.grantee_type === 'user').map((g) => g.grantee_id);
      const users = await this.#identity.existingUserIds(companyId, userIds);
      const now = nowIso();
      grants = [];
      for (const [i, g] of input.grants.entries()) {
        const key = `${g.grantee_type}:${g.grantee_id}`;
        if (seen.has(key)) { errors.push({ field: `grants.${i}.grantee_id`, message: 'is granted twice' }); continue; }
        seen.add(key);
        const exists = g.grantee_type === 'user' ? users.has(g.grantee_id) : (await this.#identity.teamById(companyId, g.grantee_id)) !== undefined;
        if (!exists) { errors.push({ field: `grants.${i}.grantee_id`, message: `no ${g.grantee_type} with this id in your company` }); continue; }
        grants.push({
          id: crypto.randomUUID(), auth_id: id, company_id: companyId,
          user_id: g.grantee_type === 'user' ? g.grantee_id : null, team_id: g.grantee_type === 'team' ? g.grantee_id : null,
          ...grantFlags(g.rights), created_at: now,
        });
      }
    } else if (visibility === 'private') {
      grants = []; // a private auth has no grants: making it private drops them
    }
    if (errors.length) throw validationFailed(errors);

    const set: Partial<ConnectorAuthRow> = { updated_at: nowIso() };
    if (input.visibility !== undefined) set.visibility = input.visibility;
    if (input.owner_user_id !== undefined) set.owner_user_id = input.owner_user_id;
    await this.#store.db.transaction().execute(async (trx) => {
      if ((await this.#store.updateAuth(companyId, id, set, trx)) === 0) throw notFound('connector auth');
      if (grants !== null) await this.#store.replaceGrants(companyId, id, grants, trx);
      await this.#audit.record(actor, companyId, 'connector_auth.permissions_changed', { type: 'connector_auth', id }, {
        visibility, owner_user_id: set.owner_user_id ?? row.owner_user_id,
        grants: grants === null ? 'unchanged' : grants.map((g) => ({ user_id: g.user_id, team_id: g.team_id, rights: grantRights(g) })),
      }, trx);
    });
    return this.#permissionsView({ visibility, owner_user_id: set.owner_user_id ?? row.owner_user_id }, await this.#store.grantsOf(companyId, id));
  }

  // ---- credential test ----

  async test(actor: Actor, id: string): Promise<TestResult> {
    const companyId = actor.principal.companyId;
    const { row } = await this.#authorize(actor, id, 'update');
    const connector = await this.#connectors.get(companyId, row.connector_id);
    if (!connector?.runtime) {
      throw conflict('not_testable', `Connector ${connector?.name ?? row.connector_id} has no runtime that can test a credential.`);
    }
    let result: { ok: boolean; error: { code: string; message: string } | null };
    let secrets: string[] = [];
    try {
      const cred = await this.#credential(row, connector);
      secrets = cred.secrets;
      await this.#audit.record(actor, companyId, 'connector_auth.decrypted', { type: 'connector_auth', id }, { purpose: 'credential_test' });
      const { id: _id, secrets: _s, ...plain } = cred;
      const controller = new AbortController();
      result = await runtimeTestConnection(connector.runtime as ConnectorKind, plain, {
        signal: controller.signal, timeoutMs: this.#opts.testTimeoutMs ?? DEFAULT_TEST_TIMEOUT_MS,
      });
    } catch (err) {
      if (!(err instanceof DecryptError)) throw err;
      result = { ok: false, error: { code: 'credential_unreadable', message: 'the stored secrets cannot be decrypted with the keys of this installation' } };
    }
    const error = result.error ? { code: result.error.code, message: scrubSecrets(result.error.message, secrets) } : null;
    const checkedAt = nowIso();
    await this.#store.db.transaction().execute(async (trx) => {
      await this.#store.updateAuth(companyId, id, { last_checked_at: checkedAt, last_check_ok: result.ok ? 1 : 0 }, trx);
      await this.#audit.record(actor, companyId, 'connector_auth.tested', { type: 'connector_auth', id },
        { ok: result.ok, error_code: error?.code ?? null }, trx);
    });
    return { ok: result.ok, checked_at: checkedAt, error };
  }

  // ---- the contract used by the flow engine ----

  /**
   * The decrypted credential of `authId` for a step of connector `connectorId`, run with the
   * rights of `userId` (the flow's owner; it needs the read right). Audits the decryption.
   */
  async resolveForRun(args: ResolveArgs): Promise<ResolvedForRun> {
    const { companyId, userId, authId, connectorId } = args;
    const missing = () => new ConnectorAuthResolveError('connector_auth_not_found', `Connector auth ${UUID.test(authId) ? authId : '(not a uuid)'} does not exist or is not visible to the flow's owner.`);
    if (typeof authId !== 'string' || !UUID.test(authId)) throw missing();
    const row = await this.#store.authById(companyId, authId);
    if (!row) throw missing();
    const user = await this.#identity.userById(companyId, userId);
    if (!user || user.disabled) throw missing();
    const subject = await this.#subjectOf({ userId, companyId, role: user.role });
    const grants = subject.role === 'admin' || row.owner_user_id === userId ? [] : await this.#store.subjectGrants(companyId, authId, subject);
    if (!rightsOf(subject, row, grants).has('read')) throw missing();
    if (row.connector_id !== connectorId) {
      throw new ConnectorAuthResolveError('connector_mismatch', `Connector auth ${authId} belongs to connector ${row.connector_id}, not ${connectorId}.`);
    }
    const connector = await this.#connectors.get(companyId, row.connector_id);
    let cred: ResolvedForRun;
    try {
      cred = await this.#credential(row, connector);
    } catch (err) {
      if (!(err instanceof DecryptError)) throw err;
      throw new ConnectorAuthResolveError('connector_auth_unreadable', `Connector auth ${authId} cannot be decrypted with the keys of this installation.`);
    }
    await this.#audit.record(args.actor ?? null, companyId, 'connector_auth.decrypted', { type: 'connector_auth', id: authId },
      { purpose: String(args.purpose).slice(0, 200), for_user_id: userId });
    return cred;
  }
}

function safeUrlPassword(full: string | null): string | null {
  if (full === null) return null;
  try { return decodeURIComponent(new URL(full).password); } catch { return null; }
}
