/**
 * Why a redirect sign-in failed: the `error` of `{WEB_URL}/login?error=<reason>` and of the app's
 * `openid=error` redirect. The list is documented in docs/social-login.md; clients show a message per reason.
 */
export const FAILURE_REASONS = [
  'invalid_state',
  'state_expired',
  'cancelled',
  'provider_error',
  'provider_unavailable',
  'exchange_failed',
  'invalid_id_token',
  'email_missing',
  'email_unverified',
  'account_exists',
  'registration_disabled',
  'account_disabled',
  'account_expired',
  'server_error',
] as const;

export type FailureReason = (typeof FAILURE_REASONS)[number];

/** Ends a social sign-in with a reason the client is told; the message is for the log only. */
export class SocialLoginFailure extends Error {
  readonly reason: FailureReason;

  constructor(reason: FailureReason, message?: string, options?: { cause?: unknown }) {
    super(message ?? reason, options);
    this.reason = reason;
  }
}
