// Tables of the OAuth 2.0 / OIDC provider. Timestamps are ISO text, booleans 0/1, JSON as text,
// like the rest of flowgate.

/**
 * Everything oidc-provider persists through its adapter (grants, codes, tokens, sessions,
 * interactions...). For bearer-token models the `id` is the SHA-256 (base64url) of the token
 * value and the payload is stored without its `jti`, so the table never holds a usable token.
 */
export interface OAuthModelRow {
  model: string;
  id: string;
  /** The model's payload, JSON. */
  payload: string;
  grant_id: string | null;
  client_id: string | null;
  user_code: string | null;
  uid: string | null;
  /** When the row may be deleted; null: never expires on its own. */
  expires_at: string | null;
  /** Set once, by a compare-and-set, when a code or refresh token is used. */
  consumed_at: string | null;
}

/** Clients "issued by the provider's staff" (CLI). The secret is keyring ciphertext. */
export interface OAuthClientRow {
  client_id: string;
  name: string;
  /** JSON array of exact redirect URIs. */
  redirect_uris: string;
  /** fg1:… ciphertext, AAD `oauth_client:<client_id>`; null for public clients. */
  client_secret: string | null;
  is_public: number;
  /** id_token_signed_response_alg: 'ES256' (default) or 'RS256'. */
  id_token_alg: string;
  created_at: string;
  updated_at: string;
}

/** ID-token signing keys; the private JWK is keyring ciphertext (AAD `oauth_signing_key:<kid>`). */
export interface OAuthSigningKeyRow {
  kid: string;
  alg: string;
  private_jwk: string;
  /** The public JWK, JSON (not secret; for listing). */
  public_jwk: string;
  created_at: string;
  /** From this moment the key signs (until a newer key of the same alg activates). */
  activates_at: string;
}

export interface OAuthTables {
  oauth_models: OAuthModelRow;
  oauth_clients: OAuthClientRow;
  oauth_signing_keys: OAuthSigningKeyRow;
}
