import type { RateLimiter, RateRule } from '../../platform/rate-limit.ts';

export { enforceRateLimit as enforceLimit } from '../../platform/rate-limit.ts';

/** DESIGN.md §5.2, plus per-user limits on guessing second factors and current passwords (docs/auth.md). */
export const AUTH_RATE_RULES = {
  /** Per client IP and e-mail address. */
  login: { name: 'login', limit: 10, windowSeconds: 60 },
  /** Per client IP, across addresses: one client trying a common password on many accounts. */
  loginPerClient: { name: 'login-per-client', limit: 100, windowSeconds: 60 },
  /** Per client IP. */
  register: { name: 'register', limit: 5, windowSeconds: 60 },
  /** Per address; over it no mail is sent, the answer stays the same. */
  passwordResetMail: { name: 'password-reset-mail', limit: 5, windowSeconds: 3600 },
  /** Per address; over it no mail is sent, the answer stays the same. */
  verificationMail: { name: 'verification-mail', limit: 5, windowSeconds: 3600 },
  /** Per client IP, across addresses: stops one client mailing many people; silent like the others. */
  mailPerClient: { name: 'mail-per-client', limit: 30, windowSeconds: 3600 },
  /** Per client IP; each code also burns after 5 wrong tries. */
  verifyCode: { name: 'verify-code', limit: 30, windowSeconds: 60 },
  /** Per user: second-factor codes at sign-in, setup confirmation and disable. */
  twoFactorCode: { name: 'two-factor-code', limit: 10, windowSeconds: 300 },
  /** Per user: stolen access tokens cannot be used to guess the current password. */
  changePassword: { name: 'change-password', limit: 10, windowSeconds: 600 },
  /** Per client IP: social sign-ins started (each stores a state) and id_tokens exchanged. */
  socialSignIn: { name: 'social-sign-in', limit: 30, windowSeconds: 60 },
} as const satisfies Record<string, RateRule>;

/** Counts a hit and tells whether it was within the limit, for limits that act silently. */
export async function withinLimit(limiter: RateLimiter, rule: RateRule, key: string): Promise<boolean> {
  return (await limiter.hit(rule, key)).allowed;
}
