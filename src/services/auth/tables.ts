import type { Generated } from 'kysely';

/** The tables the auth module owns; no other module reads them. */
export interface AuthTables {
  sessions: SessionsTable;
  users: UsersTable;
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
}
