/**
 * The temp_token of a password sign-in waiting for its second factor, kept in memory only (social
 * sign-in brings its own in the /login/2fa address).
 */
let pending: { token: string; type: 'totp' | 'email' } | undefined;

export function rememberTwoFactor(token: string, type: 'totp' | 'email'): void {
  pending = { token, type };
}

export function pendingTwoFactor(): { token: string; type: 'totp' | 'email' } | undefined {
  return pending;
}

export function forgetTwoFactor(): void {
  pending = undefined;
}
