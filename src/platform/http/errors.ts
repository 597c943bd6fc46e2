/**
 * Every error code the API can answer, with its HTTP status and default message: the one place
 * clients (and docs/errors.md) learn them from. Modules add their codes here.
 */
export const ERROR_CODES = {
  // platform
  VALIDATION_FAILED: [400, 'The request is invalid'],
  MALFORMED_JSON: [400, 'The request body is not valid JSON'],
  BAD_REQUEST: [400, 'Bad request'],
  UNAUTHORIZED: [401, 'Authentication required'],
  INVALID_TOKEN: [401, 'The token is invalid or expired'],
  FORBIDDEN: [403, 'Access denied'],
  NOT_FOUND: [404, 'Not found'],
  PAYLOAD_TOO_LARGE: [413, 'The request body is too large'],
  URI_TOO_LONG: [414, 'A path parameter is too long'],
  UNSUPPORTED_MEDIA_TYPE: [415, 'Unsupported content type'],
  RATE_LIMITED: [429, 'Too many requests, try again later'],
  INTERNAL_ERROR: [500, 'Internal server error'],
  UPSTREAM_UNAVAILABLE: [502, 'The service behind the gateway is unavailable'],
  // auth
  INVALID_CREDENTIALS: [401, 'Invalid e-mail or password'],
  EMAIL_NOT_VERIFIED: [403, 'The e-mail address is not verified'],
  ACCOUNT_DISABLED: [403, 'The account is disabled'],
  ACCOUNT_EXPIRED: [403, 'The account has expired'],
  WEAK_PASSWORD: [400, 'The password is too weak'],
  TERMS_NOT_ACCEPTED: [400, 'The terms and privacy policy must be accepted'],
  EMAIL_TAKEN: [409, 'The e-mail address is already registered'],
  REGISTRATION_DISABLED: [403, 'Registration is disabled'],
  INVALID_2FA_CODE: [400, 'The code is invalid'],
  TOTP_ALREADY_ENABLED: [400, 'Two-factor authentication is already enabled'],
  TWO_FACTOR_NOT_ENABLED: [400, 'Two-factor authentication is not enabled'],
  TWO_FACTOR_SETUP_REQUIRED: [400, 'No two-factor setup is pending; call POST /api/auth/2fa/setup first (a setup lasts 10 minutes)'],
  INVALID_2FA_LOGIN_CODE: [401, 'The two-factor code is invalid'],
  TEMP_TOKEN_EXPIRED: [401, 'The sign-in attempt has expired or ended after too many wrong codes; sign in again'],
  INVALID_OR_EXPIRED_TOKEN: [400, 'The link is invalid, already used or expired'],
  INVALID_VERIFICATION_CODE: [400, 'The code is invalid or expired'],
  INVALID_CURRENT_PASSWORD: [400, 'The current password is wrong'],
  REFRESH_TOKEN_REUSED: [401, 'The refresh token was already used; that sign-in has been ended everywhere'],
  USER_NOT_FOUND: [404, 'The user does not exist'],
  ACCOUNT_READONLY: [403, 'The account is read-only'],
  TERMS_VERSION_OUTDATED: [400, 'The accepted version is not the current version of the terms'],
  CANNOT_CHANGE_OWN_ACCESS: [400, 'Administrators cannot disable, expire or demote their own account'],
  // auth: social login
  OPENID_PROVIDER_NOT_CONFIGURED: [400, 'This sign-in provider is not configured'],
  OPENID_PROVIDER_UNSUPPORTED: [400, 'Only the provider "google" can exchange an id_token here'],
  ID_TOKEN_INVALID: [401, 'The id_token is malformed or its signature does not verify'],
  ID_TOKEN_EXPIRED: [401, 'The id_token has expired'],
  ID_TOKEN_WRONG_ISSUER: [401, 'The id_token comes from an unexpected issuer'],
  ID_TOKEN_WRONG_AUDIENCE: [401, 'The id_token was issued for another client'],
  ID_TOKEN_EMAIL_UNVERIFIED: [401, 'The id_token carries no verified e-mail address'],
  OPENID_ACCOUNT_EXISTS: [409, 'An account with this e-mail address exists and cannot be linked; sign in to it another way'],
  // devices
  DEVICE_EXISTS: [409, 'A device with this uniqueId already exists'],
  DEVICE_NOT_CONFIGURED: [400, 'The claim token is not configured for a device yet'],
  CLAIM_TOKEN_REQUIRED: [400, 'A claim token is required'],
  CLAIM_TOKEN_NOT_FOUND: [404, 'The claim token does not exist'],
  CLAIM_TOKEN_ALREADY_CLAIMED: [409, 'The claim token was claimed by another user'],
  CLAIM_TOKEN_MISMATCH: [400, 'The claim token belongs to a device with another uniqueId'],
  CLAIM_TOKEN_REVOKED: [409, 'The claim token is revoked'],
  CLAIM_TOKEN_EXISTS: [409, 'Another claim token already names this uniqueId'],
  SHARE_EXISTS: [409, 'The device is already shared with this user'],
  CANNOT_SHARE_WITH_OWNER: [400, 'The owner already has every permission'],
  // tracking
  INVALID_AREA: [400, 'The geofence area is invalid'],
  RANGE_TOO_LARGE: [400, 'The range holds too many positions; narrow it'],
  WEBSOCKET_REQUIRED: [426, 'This endpoint speaks WebSocket only: send an Upgrade: websocket request'],
  // billing
  INVALID_SIGNATURE: [400, 'The webhook signature is invalid'],
  INVALID_PAYLOAD: [400, 'The webhook payload is invalid'],
  PROVIDER_NOT_CONFIGURED: [400, 'This billing provider is not configured'],
  PURCHASE_TOKEN_TAKEN: [409, 'The purchase token is registered to another user'],
} as const satisfies Record<string, readonly [number, string]>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorDetail {
  path: string;
  message: string;
}

/** An error meant for the client: the single error handler turns it into the JSON error body. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly details: ErrorDetail[] | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, message?: string, options?: { details?: ErrorDetail[]; headers?: Record<string, string> }) {
    const [statusCode, fallback] = ERROR_CODES[code];
    super(message ?? fallback);
    this.code = code;
    this.statusCode = statusCode;
    this.details = options?.details;
    this.headers = options?.headers;
  }
}
