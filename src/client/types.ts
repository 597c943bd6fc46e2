/** The wire types of the auth API (spec §2), as a client sees them; the server's views are these types. */

export interface User {
  id: number;
  email: string;
  name: string | null;
  phone: string | null;
  administrator: boolean;
  disabled: boolean;
  readonly: boolean;
  deviceReadonly: boolean;
  limitCommands: boolean;
  /** ISO 8601, or null for never. */
  expirationTime: string | null;
  attributes: Record<string, unknown>;
}

export interface LoginResponse {
  accessToken: string;
  refreshToken?: string;
  expiresIn?: number;
  user: User;
}

export interface Login2FARequiredResponse {
  require_2fa: true;
  temp_token: string;
  type: 'totp' | 'email';
  message: string;
}

export type LoginResult =
  | { kind: 'signed-in'; user: User; expiresIn: number }
  | { kind: 'two-factor'; tempToken: string; type: 'totp' | 'email'; message: string };

export interface RegisterRequest {
  email: string;
  password: string;
  name: string;
  termsPrivacyAccepted: boolean;
}

export interface MessageResponse {
  message: string;
}

export interface MessageEmailResponse {
  message: string;
  email: string;
}

export interface ProfileChanges {
  name?: string | null;
  phone?: string | null;
  timezone?: string | null;
  language?: string | null;
  speedUnit?: 'kmh' | 'mph' | 'kn' | null;
  distanceUnit?: 'km' | 'mi' | null;
}

export interface TwoFactorSetupResponse {
  secret: string;
  otpauth_url: string;
}

export interface BackupCodesResponse {
  message: string;
  backup_codes: string[];
}

export interface LegalDocument {
  type: 'terms' | 'privacy';
  version: string;
  content: string;
}

export interface UserPage {
  users: User[];
  total: number;
  page: number;
  limit: number;
}

/** GET /api/admin/dead-letters: durable work that failed past its attempt cap. */
export interface DeadLetter {
  id: number;
  /** `outbox`: facts between modules. */
  queue: string;
  /** For the outbox, the module that failed to handle the fact. */
  consumer: string;
  topic: string;
  /** The payload's JSON text, cut at 1 000 characters (`payloadTruncated`). */
  payload: string;
  payloadTruncated: boolean;
  attempts: number;
  lastError: string | null;
  createdAt: string;
  failedAt: string;
  /** A retry asked for and not yet carried out. */
  retryRequestedAt: string | null;
}

export interface DeadLetterPage {
  deadLetters: DeadLetter[];
  total: number;
  page: number;
  limit: number;
}

/** PUT /api/auth/users/{id}: absent fields stay as they are. */
export interface AccessChanges {
  administrator?: boolean;
  disabled?: boolean;
  readonly?: boolean;
  deviceReadonly?: boolean;
  limitCommands?: boolean;
  /** ISO 8601, or null for never. */
  expirationTime?: string | null;
}

/** The error body every non-2xx answer carries. */
export interface ErrorBody {
  statusCode: number;
  error: string;
  code: string;
  message: string;
  details?: { path: string; message: string }[];
}
