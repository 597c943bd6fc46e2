import type { Generated } from 'kysely';

/** The tables the auth module owns; no other module reads them. */
export interface AuthTables {
  sessions: SessionsTable;
  users: UsersTable;
  refresh_tokens: RefreshTokensTable;
  one_time_tokens: OneTimeTokensTable;
  two_factor: TwoFactorTable;
  backup_codes: BackupCodesTable;
  openid_identities: OpenIdIdentitiesTable;
  openid_states: OpenIdStatesTable;
}

export interface UsersTable {
  id: Generated<number>;
  /** Stored lower-cased: e-mail addresses are unique regardless of case. */
  email: string;
  password_hash: string | null;
  name: string | null;
  phone: string | null;
  administrator: number;
  disabled: number;
  readonly: number;
  device_readonly: number;
  limit_commands: number;
  expiration_time: number | null;
  /** JSON object. */
  attributes: string;
  email_verified_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface SessionsTable {
  id: string;
  user_id: number;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
  ip: string | null;
  user_agent: string | null;
  /** When this session's sign-in passed the second factor; null when it needed none. */
  two_factor_at: number | null;
}

/** One row per refresh token ever issued; the tokens of one session form its rotation family. */
export interface RefreshTokensTable {
  /** sha256 of the opaque token: the token itself is never stored. */
  token_hash: string;
  session_id: string;
  user_id: number;
  created_at: number;
  expires_at: number;
  /** When it was exchanged for its successor; presenting it again after the grace period is reuse. */
  rotated_at: number | null;
}

/** E-mail verification, password reset and two-factor tokens: opaque, single use, expiring. */
export interface OneTimeTokensTable {
  token_hash: string;
  purpose: string;
  user_id: number;
  /** Keyed digest of the 6-digit code mailed with it (verification, e-mail second factor). */
  code_hash: string | null;
  /** When the current code was mailed; a new one replaces it only after the resend cooldown. */
  code_sent_at: number | null;
  failed_attempts: Generated<number>;
  created_at: number;
  expires_at: number;
  /** Set when used, replaced or burned by too many wrong codes. */
  consumed_at: number | null;
}

export type TwoFactorMethod = 'totp' | 'email';

export interface TwoFactorTable {
  user_id: number;
  /** Which second factor is on: one at a time. */
  method: Generated<TwoFactorMethod>;
  /** The enabled TOTP secret, AES-256-GCM encrypted; null while only a setup is pending, and for e-mail. */
  secret: string | null;
  enabled_at: number | null;
  /** The highest TOTP time step accepted so far: no step is accepted twice. */
  last_used_step: number;
  pending_secret: string | null;
  pending_expires_at: number | null;
  updated_at: number;
}

export interface BackupCodesTable {
  id: Generated<number>;
  user_id: number;
  /** scrypt with a per-code salt: `salt.hash`, both base64url. */
  code_hash: string;
  created_at: number;
  used_at: number | null;
}

/** A provider account (Google, Facebook, Apple) that signs in to one of our accounts. */
export interface OpenIdIdentitiesTable {
  id: Generated<number>;
  provider: string;
  /** The provider's stable user id (`sub`, or Facebook's app-scoped id). */
  subject: string;
  user_id: number;
  /** The address the provider gave when the identity was made. */
  email: string | null;
  /** 1 when the provider asserted that address as verified; Facebook never does. */
  email_verified: number;
  created_at: number;
  last_used_at: number;
}

/** One social sign-in in progress: single use, 10 minutes, bound to the browser that started it. */
export interface OpenIdStatesTable {
  /** sha256 of the `state` parameter: the value itself is never stored. */
  state_hash: string;
  provider: string;
  /** 'web' or 'app': where the callback sends the browser. */
  ret: string;
  nonce: string;
  /** PKCE verifier: useless without the authorization code, which never reaches the database. */
  code_verifier: string;
  /** sha256 of the browser-binding cookie's value. */
  binding_hash: string;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
}
