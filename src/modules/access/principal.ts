import type { ScopeGrant } from './scopes.ts';

export type CredentialKind = 'pat' | 'oauth' | 'webhook_token' | 'cli' | 'system' | 'anonymous';

/** Who is acting, after authentication. Nothing downstream parses headers. */
export interface Principal {
  kind: CredentialKind;
  userId: string;
  companyId: string;
  email: string;
  role: 'admin' | 'member';
  /** null: not limited by scopes (CLI, OAuth without API scopes). */
  scopes: ScopeGrant[] | null;
  /** The PAT id or OAuth grant id that authenticated the request. */
  credentialId: string | null;
  /** When the credential itself expires (PATs), for the no-escalation rule. */
  credentialExpiresAt: string | null;
}

/** A principal plus where the request came from: what services and the audit log need. */
export interface Actor {
  principal: Principal;
  ip: string | null;
  requestId: string | null;
}
