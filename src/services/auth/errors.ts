import { declareErrorCodes } from '../../platform/http/errors.ts';
import type { ErrorTable } from '../../platform/http/errors.ts';

/** The codes the auth module answers with (docs/errors.md, Auth). The gateway raises INVALID_TOKEN and ACCOUNT_EXPIRED for auth's tokens and accounts. */
export const AUTH_ERRORS = {
  INVALID_TOKEN: [401, 'The token is invalid or expired'],
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
  TWO_FACTOR_ALREADY_ENABLED: [400, 'Two-factor authentication is already enabled; disable it first to switch methods'],
  TWO_FACTOR_NOT_ENABLED: [400, 'Two-factor authentication is not enabled'],
  TWO_FACTOR_SETUP_REQUIRED: [400, 'No two-factor setup is pending; call POST /api/auth/2fa/setup first (a setup lasts 10 minutes)'],
  INVALID_2FA_LOGIN_CODE: [401, 'The two-factor code is invalid'],
  TEMP_TOKEN_EXPIRED: [401, 'The sign-in attempt has expired or ended after too many wrong codes; sign in again'],
  INVALID_VERIFICATION_CODE: [400, 'The code is invalid or expired'],
  INVALID_CURRENT_PASSWORD: [400, 'The current password is wrong'],
  REFRESH_TOKEN_REUSED: [401, 'The refresh token was already used; that sign-in has been ended everywhere'],
  USER_NOT_FOUND: [404, 'The user does not exist'],
  LAST_ADMINISTRATOR: [409, 'The last administrator cannot delete their account; make another administrator first'],
  ACCOUNT_READONLY: [403, 'The account is read-only'],
  TERMS_VERSION_OUTDATED: [400, 'The accepted version is not the current version of the terms'],
  CANNOT_CHANGE_OWN_ACCESS: [400, 'Administrators cannot disable, expire or demote their own account'],
  REAUTHENTICATION_REQUIRED: [403, 'Confirm with a two-factor code (from the app, the e-mail or a backup code)'],
  // social login
  OPENID_PROVIDER_NOT_CONFIGURED: [400, 'This sign-in provider is not configured'],
  OPENID_PROVIDER_UNSUPPORTED: [400, 'Only the provider "google" can exchange an id_token here'],
  ID_TOKEN_INVALID: [401, 'The id_token is malformed or its signature does not verify'],
  ID_TOKEN_EXPIRED: [401, 'The id_token has expired'],
  ID_TOKEN_WRONG_ISSUER: [401, 'The id_token comes from an unexpected issuer'],
  ID_TOKEN_WRONG_AUDIENCE: [401, 'The id_token was issued for another client'],
  ID_TOKEN_EMAIL_UNVERIFIED: [401, 'The id_token carries no verified e-mail address'],
  OPENID_ACCOUNT_EXISTS: [409, 'An account with this e-mail address exists and cannot be linked; sign in to it another way'],
} as const satisfies ErrorTable;

declare module '../../platform/http/errors.ts' {
  interface ErrorTables {
    auth: typeof AUTH_ERRORS;
  }
}

declareErrorCodes('auth', AUTH_ERRORS);

/** The module's files raise errors through this import, so the codes above are declared before any is raised. */
export { AppError } from '../../platform/http/errors.ts';
