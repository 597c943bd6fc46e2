import { AppError } from '../errors.ts';
import type { MailMessage } from '../../../platform/mail.ts';
import type { RateLimiter } from '../../../platform/rate-limit.ts';
import type { LegalDocuments } from '../legal/documents.ts';
import type { MailNotifier } from '../mail/notifier.ts';
import { verificationMail } from '../mail/templates.ts';
import { AUTH_RATE_RULES, enforceLimit, withinLimit } from '../rate-limits.ts';
import { invalidLink } from '../tokens/one-time-tokens.ts';
import type { OneTimeTokens } from '../tokens/one-time-tokens.ts';
import { passwordProblem } from '../users/password-policy.ts';
import { isUniqueViolation } from '../users/repository.ts';
import type { UserRepository, UserRow } from '../users/repository.ts';
import type { AccountService } from '../users/service.ts';

/** Resend waits this long after the last verification mail to the same address (spec §8). */
export const RESEND_COOLDOWN_MS = 30_000;

export const RESEND_MESSAGE = 'If the address is registered and not yet verified, a new verification e-mail is on its way';

export interface RegistrationDeps {
  users: UserRepository;
  accounts: AccountService;
  oneTimeTokens: OneTimeTokens;
  mail: MailNotifier;
  legal: LegalDocuments;
  limiter: RateLimiter;
  registrationEnabled: boolean;
  appName: string;
  webUrl: string;
  verificationTtlSeconds: number;
}

export interface Registration {
  email: string;
  password: string;
  name: string;
  termsPrivacyAccepted: boolean;
}

/** Sign-up and e-mail verification: a mailed link and a 6-digit code, both single use and expiring. */
export class RegistrationService {
  private readonly deps: RegistrationDeps;
  constructor(deps: RegistrationDeps) {
    this.deps = deps;
  }

  async register(registration: Registration, clientIp: string): Promise<{ message: string; email: string }> {
    const { users, accounts, legal, limiter } = this.deps;
    await enforceLimit(limiter, AUTH_RATE_RULES.register, clientIp);
    if (!this.deps.registrationEnabled) throw new AppError('REGISTRATION_DISABLED');
    if (registration.termsPrivacyAccepted !== true) throw new AppError('TERMS_NOT_ACCEPTED');
    const problem = passwordProblem(registration.password);
    if (problem) throw new AppError('WEAK_PASSWORD', problem);
    if (await users.findByEmail(registration.email)) throw new AppError('EMAIL_TAKEN');
    let user: UserRow;
    try {
      user = await accounts.create({
        email: registration.email,
        password: registration.password,
        name: registration.name,
        attributes: legal.acceptance(new Date()),
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw new AppError('EMAIL_TAKEN');
      throw error;
    }
    await this.sendVerification(user);
    return { message: 'Registration successful; check your e-mail to verify your address', email: user.email };
  }

  /** POST /verify: the link's token. */
  async verifyLink(token: string): Promise<{ message: string; email: string }> {
    const { oneTimeTokens, users } = this.deps;
    const row = await oneTimeTokens.find('email_verification', token);
    if (!row || !(await oneTimeTokens.consume(row))) throw invalidLink();
    const user = await users.findById(row.user_id);
    if (!user) throw invalidLink();
    return this.markVerified(user);
  }

  /** POST /verify-code: the 6-digit code of the latest mail; 5 wrong codes burn it (the link of that mail still works). */
  async verifyCode(email: string, code: string, clientIp: string): Promise<{ message: string; email: string }> {
    const { oneTimeTokens, users, limiter } = this.deps;
    await enforceLimit(limiter, AUTH_RATE_RULES.verifyCode, clientIp);
    const user = await users.findByEmail(email);
    const row = user && (await oneTimeTokens.latestOfUser('email_verification', user.id));
    if (!user || !row) throw new AppError('INVALID_VERIFICATION_CODE');
    const result = await oneTimeTokens.attemptCode(row, code);
    if (result !== 'accepted' || !(await oneTimeTokens.consume(row))) throw new AppError('INVALID_VERIFICATION_CODE');
    return this.markVerified(user);
  }

  /**
   * Answers at once, the same for every address; finding the account and mailing it happen after the
   * answer (spec §7: the answer must not tell whether the address has an account).
   */
  resend(email: string, clientIp: string): { message: string } {
    this.deps.mail.deliverAfterAnswer(() => this.resentVerificationMail(email, clientIp));
    return { message: RESEND_MESSAGE };
  }

  /** Only an existing, unverified, enabled account gets one, after the cooldown and within the limits. */
  private async resentVerificationMail(email: string, clientIp: string): Promise<MailMessage | undefined> {
    const { users, oneTimeTokens, limiter } = this.deps;
    const user = await users.findByEmail(email);
    if (!user || user.email_verified_at !== null || user.disabled === 1) return undefined;
    const lastSent = await oneTimeTokens.lastIssuedAt('email_verification', user.id);
    const cooledDown = lastSent === undefined || Date.now() - lastSent >= RESEND_COOLDOWN_MS;
    if (
      !cooledDown ||
      !(await withinLimit(limiter, AUTH_RATE_RULES.verificationMail, user.email)) ||
      !(await withinLimit(limiter, AUTH_RATE_RULES.mailPerClient, clientIp))
    ) {
      return undefined;
    }
    return this.verificationMailFor(user);
  }

  private async sendVerification(user: UserRow): Promise<void> {
    this.deps.mail.deliver(await this.verificationMailFor(user));
  }

  /** Issues a new link and code (replacing the previous ones) and writes the mail that carries them. */
  private async verificationMailFor(user: UserRow): Promise<MailMessage> {
    const { oneTimeTokens, verificationTtlSeconds, webUrl, appName } = this.deps;
    const issued = await oneTimeTokens.issue('email_verification', user.id, verificationTtlSeconds, { withCode: true, replace: true });
    return verificationMail({
      appName,
      to: user.email,
      name: user.name,
      link: `${webUrl}/verify-email?token=${encodeURIComponent(issued.token)}`,
      code: issued.code as string,
      ttlSeconds: verificationTtlSeconds,
    });
  }

  private async markVerified(user: UserRow): Promise<{ message: string; email: string }> {
    const { users, oneTimeTokens } = this.deps;
    if (user.email_verified_at === null) {
      const now = Date.now();
      await users.update(user.id, { email_verified_at: now, updated_at: now });
    }
    await oneTimeTokens.consumeAllOfUser('email_verification', user.id);
    return { message: 'E-mail address verified', email: user.email };
  }
}
