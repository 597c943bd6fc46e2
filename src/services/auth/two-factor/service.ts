import { AppError } from '../errors.ts';
import type { RateLimiter } from '../../../platform/rate-limit.ts';
import type { AuthKeys } from '../keys.ts';
import { AUTH_RATE_RULES, enforceLimit } from '../rate-limits.ts';
import type { SessionService } from '../sessions/service.ts';
import type { TwoFactorMethod } from '../tables.ts';
import type { OneTimeTokenRow } from '../tokens/one-time-repository.ts';
import { backupCodeMatches, hashBackupCode, newBackupCodes, normalizeBackupCode } from './backup-codes.ts';
import type { CodeRecipient, EmailCodes } from './email-codes.ts';
import type { TwoFactorRepository, TwoFactorRow } from './repository.ts';
import { base32, matchingStep, newTotpSecret, otpauthUrl } from './totp.ts';

export interface TwoFactorSetup {
  secret: string;
  otpauth_url: string;
}

/** A sign-in that passed the second factor this recently stands in for a code when the backup codes are replaced. */
export const REAUTHENTICATION_WINDOW_MS = 10 * 60_000;

export interface TwoFactorDeps {
  repository: TwoFactorRepository;
  keys: AuthKeys;
  emailCodes: EmailCodes;
  sessions: SessionService;
  limiter: RateLimiter;
  /** APP_NAME, shown in authenticator apps. */
  issuer: string;
  setupTtlSeconds: number;
}

/**
 * Two-factor authentication, by TOTP (spec §3.1) or by e-mailed codes (DESIGN §5.2), one method at a
 * time. Setup is pending until confirmed with a first code (TOTP_SETUP_TTL); confirming turns it on
 * with 10 single-use backup codes. A TOTP time step is never accepted twice.
 */
export class TwoFactorService {
  private readonly repository: TwoFactorRepository;
  private readonly keys: AuthKeys;
  private readonly emailCodes: EmailCodes;
  private readonly sessions: SessionService;
  private readonly limiter: RateLimiter;
  private readonly issuer: string;
  private readonly setupTtlMs: number;

  constructor(deps: TwoFactorDeps) {
    this.repository = deps.repository;
    this.keys = deps.keys;
    this.emailCodes = deps.emailCodes;
    this.sessions = deps.sessions;
    this.limiter = deps.limiter;
    this.issuer = deps.issuer;
    this.setupTtlMs = deps.setupTtlSeconds * 1000;
  }

  async isEnabled(userId: number): Promise<boolean> {
    return isOn(await this.repository.find(userId));
  }

  /** The method that is on; undefined when 2FA is off. */
  async methodOf(userId: number): Promise<TwoFactorMethod | undefined> {
    const row = await this.repository.find(userId);
    return row && isOn(row) ? row.method : undefined;
  }

  enabledAmong(userIds: number[]): Promise<Set<number>> {
    return this.repository.enabledAmong(userIds);
  }

  async setup(user: { id: number; email: string }): Promise<TwoFactorSetup> {
    const secret = newTotpSecret();
    const now = Date.now();
    const saved = await this.repository.savePending(user.id, this.keys.seal(secret, context(user.id)), now + this.setupTtlMs, now);
    if (!saved) throw new AppError('TOTP_ALREADY_ENABLED');
    return { secret: base32(secret), otpauth_url: otpauthUrl(secret, this.issuer, user.email) };
  }

  /** Confirms the pending setup with a code from the app; returns the backup codes, shown this once. */
  async verify(userId: number, code: string): Promise<string[]> {
    await enforceLimit(this.limiter, AUTH_RATE_RULES.twoFactorCode, String(userId));
    const row = await this.repository.find(userId);
    if (isOn(row)) throw new AppError('TOTP_ALREADY_ENABLED');
    const now = Date.now();
    if (!row?.pending_secret || (row.pending_expires_at ?? 0) <= now) throw new AppError('TWO_FACTOR_SETUP_REQUIRED');
    const step = matchingStep(this.keys.open(row.pending_secret, context(userId)), code.trim(), now);
    if (step === undefined) throw new AppError('INVALID_2FA_CODE');
    const codes = newBackupCodes();
    const hashes = await Promise.all(codes.map(hashBackupCode));
    if (!(await this.repository.enable(userId, row.pending_secret, step, hashes, now))) throw new AppError('TOTP_ALREADY_ENABLED');
    return codes;
  }

  /** POST /2fa/email/setup: mails a code that turns e-mail 2FA on (at most one mail per 30 s). */
  async startEmailSetup(user: CodeRecipient): Promise<void> {
    if (await this.isEnabled(user.id)) throw new AppError('TWO_FACTOR_ALREADY_ENABLED');
    await this.emailCodes.send('two_factor_email_setup', user);
  }

  /** POST /2fa/email/verify: the mailed code turns e-mail 2FA on; returns the backup codes, shown this once. */
  async verifyEmailSetup(userId: number, code: string): Promise<string[]> {
    await enforceLimit(this.limiter, AUTH_RATE_RULES.twoFactorCode, String(userId));
    if (await this.isEnabled(userId)) throw new AppError('TWO_FACTOR_ALREADY_ENABLED');
    const taken = await this.emailCodes.take('two_factor_email_setup', userId, code.replace(/\s/g, ''));
    if (taken === 'missing') {
      throw new AppError('TWO_FACTOR_SETUP_REQUIRED', 'No e-mail setup is pending; call POST /api/auth/2fa/email/setup first (its code lasts 10 minutes)');
    }
    if (taken === 'rejected') throw new AppError('INVALID_2FA_CODE');
    const codes = newBackupCodes();
    const hashes = await Promise.all(codes.map(hashBackupCode));
    if (!(await this.repository.enableEmail(userId, hashes, Date.now()))) throw new AppError('TWO_FACTOR_ALREADY_ENABLED');
    return codes;
  }

  /** POST /2fa/email/code: a code for /2fa/disable or /2fa/regenerate, for a user with e-mail 2FA (at most one mail per 30 s). */
  async sendConfirmationCode(user: CodeRecipient): Promise<void> {
    if ((await this.methodOf(user.id)) !== 'email') throw new AppError('TWO_FACTOR_NOT_ENABLED', 'E-mail two-factor authentication is not enabled');
    await this.emailCodes.send('two_factor_email_code', user);
  }

  /** Mails the code of an e-mail 2FA sign-in, issued with its temp_token. */
  mailSignInCode(user: CodeRecipient, code: string): void {
    this.emailCodes.mailSignInCode(user, code);
  }

  /**
   * New backup codes, only against a second factor (a stolen access token alone must not yield codes
   * that then disable 2FA): a valid code, or else this session's sign-in having passed 2FA within
   * the last 10 minutes.
   */
  async regenerate(identity: { userId: number; sessionId: string }, code: string | undefined): Promise<string[]> {
    const { userId } = identity;
    if (!(await this.isEnabled(userId))) throw new AppError('TWO_FACTOR_NOT_ENABLED');
    if (code !== undefined) {
      await this.requireCode(userId, code);
    } else {
      const passedAt = await this.sessions.twoFactorPassedAt(identity.sessionId, userId);
      if (passedAt === null || Date.now() - passedAt >= REAUTHENTICATION_WINDOW_MS) throw new AppError('REAUTHENTICATION_REQUIRED');
    }
    const codes = newBackupCodes();
    await this.repository.replaceBackupCodes(userId, await Promise.all(codes.map(hashBackupCode)), Date.now());
    return codes;
  }

  async disable(userId: number, code: string): Promise<void> {
    if (!(await this.isEnabled(userId))) throw new AppError('TWO_FACTOR_NOT_ENABLED');
    await this.requireCode(userId, code);
    await this.repository.disable(userId);
  }

  /** A code of the enabled second factor, within the per-user limit; else 400 INVALID_2FA_CODE (never 401: clients refresh on 401). */
  private async requireCode(userId: number, code: string): Promise<void> {
    await enforceLimit(this.limiter, AUTH_RATE_RULES.twoFactorCode, String(userId));
    if (!(await this.acceptCode(userId, code))) throw new AppError('INVALID_2FA_CODE');
  }

  /**
   * A code of the method that is on (its TOTP step then spent; a mailed code then spent, or during a
   * sign-in the one bound to its temp_token), or an unused backup code (then spent). False for
   * anything else, including a replayed step and a backup code used before.
   */
  async acceptCode(userId: number, input: string, signIn?: OneTimeTokenRow): Promise<boolean> {
    const row = await this.repository.find(userId);
    if (!row || !isOn(row)) return false;
    const code = input.replace(/\s/g, '');
    if (/^\d{6}$/.test(code)) {
      if (row.method === 'email') {
        return signIn ? this.emailCodes.matchesSignInCode(signIn, code) : (await this.emailCodes.take('two_factor_email_code', userId, code)) === 'accepted';
      }
      if (row.secret === null) return false;
      const step = matchingStep(this.keys.open(row.secret, context(userId)), code);
      return step !== undefined && (await this.repository.claimStep(userId, step));
    }
    const normalized = normalizeBackupCode(code);
    if (normalized === undefined) return false;
    const stored = await this.repository.unusedBackupCodes(userId);
    const matches = await Promise.all(stored.map((candidate) => backupCodeMatches(candidate.code_hash, normalized)));
    const match = stored[matches.indexOf(true)];
    return match !== undefined && (await this.repository.useBackupCode(match.id, Date.now()));
  }
}

function isOn(row: TwoFactorRow | undefined): boolean {
  return row !== undefined && row.enabled_at !== null;
}

/** Authenticated with each sealed secret, so a secret copied to another user's row does not open. */
function context(userId: number): string {
  return `two-factor:${userId}`;
}
