import { AppError } from '../errors.ts';
import type { MailMessage } from '../../../platform/mail.ts';
import type { RateLimiter } from '../../../platform/rate-limit.ts';
import type { MailNotifier } from '../mail/notifier.ts';
import { passwordResetMail } from '../mail/templates.ts';
import { AUTH_RATE_RULES, withinLimit } from '../rate-limits.ts';
import type { SessionService } from '../sessions/service.ts';
import { invalidLink } from '../tokens/one-time-tokens.ts';
import type { OneTimeTokens } from '../tokens/one-time-tokens.ts';
import { passwordProblem } from '../users/password-policy.ts';
import { hashPassword } from '../users/passwords.ts';
import type { UserRepository } from '../users/repository.ts';

/** Spec §4.1: the same words whether or not the address exists. */
export const RESET_MESSAGE = 'If email exists, reset link sent';

export interface PasswordResetDeps {
  users: UserRepository;
  sessions: SessionService;
  oneTimeTokens: OneTimeTokens;
  mail: MailNotifier;
  limiter: RateLimiter;
  appName: string;
  webUrl: string;
  resetTtlSeconds: number;
}

export class PasswordResetService {
  private readonly deps: PasswordResetDeps;
  constructor(deps: PasswordResetDeps) {
    this.deps = deps;
  }

  /**
   * Answers at once, the same for every address; finding the account, issuing its link and mailing
   * it happen after the answer (spec §7: the answer must not tell whether the address has an account).
   */
  request(email: string, clientIp: string): { message: string } {
    this.deps.mail.deliverAfterAnswer(() => this.resetMail(email, clientIp));
    return { message: RESET_MESSAGE };
  }

  /** A new link replaces the previous one; unknown addresses, disabled accounts and throttled addresses get no mail. */
  private async resetMail(email: string, clientIp: string): Promise<MailMessage | undefined> {
    const { users, oneTimeTokens, limiter, resetTtlSeconds } = this.deps;
    const user = await users.findByEmail(email);
    if (
      !user ||
      user.disabled === 1 ||
      !(await withinLimit(limiter, AUTH_RATE_RULES.passwordResetMail, user.email)) ||
      !(await withinLimit(limiter, AUTH_RATE_RULES.mailPerClient, clientIp))
    ) {
      return undefined;
    }
    const { token } = await oneTimeTokens.issue('password_reset', user.id, resetTtlSeconds, { replace: true });
    return passwordResetMail({
      appName: this.deps.appName,
      to: user.email,
      name: user.name,
      link: `${this.deps.webUrl}/reset-password?token=${encodeURIComponent(token)}`,
      ttlSeconds: resetTtlSeconds,
    });
  }

  /**
   * POST /password/update. A weak password leaves the link usable for another try. The new password
   * ends every session; it also proves the mailbox, so an unverified address becomes verified.
   */
  async update(token: string, password: string): Promise<{ message: string }> {
    const { oneTimeTokens, users, sessions } = this.deps;
    const row = await oneTimeTokens.find('password_reset', token);
    if (!row) throw invalidLink();
    const user = await users.findById(row.user_id);
    if (!user) throw new AppError('USER_NOT_FOUND');
    const problem = passwordProblem(password);
    if (problem) throw new AppError('WEAK_PASSWORD', problem);
    if (!(await oneTimeTokens.consume(row))) throw invalidLink();
    const now = Date.now();
    await users.update(user.id, {
      password_hash: await hashPassword(password),
      email_verified_at: user.email_verified_at ?? now,
      updated_at: now,
    });
    await sessions.revokeAllOfUser(user.id);
    return { message: 'Password updated successfully' };
  }
}
