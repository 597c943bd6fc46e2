import { randomInt } from 'node:crypto';
import { randomToken, safeEqual, sha256 } from '../../../platform/crypto.ts';
import { AppError } from '../errors.ts';
import type { AuthKeys } from '../keys.ts';
import type { NewOneTimeToken, OneTimeTokenRepository, OneTimeTokenRow } from './one-time-repository.ts';

/**
 * two_factor_login: the temp_token between password and second factor (with the mailed code when the
 * second factor is e-mail); two_factor_email_setup and two_factor_email_code: a mailed code alone,
 * confirming e-mail 2FA's setup, or a change of 2FA by a signed-in user.
 */
export type OneTimePurpose = 'email_verification' | 'password_reset' | 'two_factor_login' | 'two_factor_email_setup' | 'two_factor_email_code';

/** Wrong codes a verification code or a two-factor sign-in survives; the next wrong one burns it. */
export const MAX_CODE_ATTEMPTS = 5;

export interface IssuedToken {
  token: string;
  /** The 6-digit code to mail with it. */
  code: string | undefined;
}

/**
 * A verification or reset link whose token is unknown, used, replaced or expired: INVALID_TOKEN at
 * 400, the status spec §4.1 gives these routes (401 would send a client to refresh its access token).
 */
export function invalidLink(): AppError {
  return new AppError('INVALID_TOKEN', 'The link is invalid, already used or expired', { statusCode: 400 });
}

export type CodeCheck = 'accepted' | 'rejected' | 'exhausted';

/**
 * Opaque single-use tokens (verification links, reset links, 2FA temp tokens). Only their sha256 is
 * stored, and their type differs from an access token's, so none can ever pass as one.
 */
export class OneTimeTokens {
  private readonly repository: OneTimeTokenRepository;
  private readonly keys: AuthKeys;

  constructor(repository: OneTimeTokenRepository, keys: AuthKeys) {
    this.repository = repository;
    this.keys = keys;
  }

  /** With `replace`, the user's earlier live tokens of this purpose stop working. */
  async issue(purpose: OneTimePurpose, userId: number, ttlSeconds: number, options: { withCode?: boolean; replace?: boolean } = {}): Promise<IssuedToken> {
    const now = Date.now();
    if (options.replace) await this.repository.consumeAllOfUser(purpose, userId, now);
    const { issued, row } = this.newToken(purpose, userId, ttlSeconds, options.withCode === true, now);
    await this.repository.insert(row);
    return issued;
  }

  /**
   * As `issue` with `replace`, unless the user's latest token of this purpose was issued less than `cooldownMs`
   * ago: then undefined and nothing changes. Parallel calls issue one (the repository looks and inserts under a
   * lock on the user's tokens).
   */
  async issueAfterCooldown(purpose: OneTimePurpose, userId: number, ttlSeconds: number, cooldownMs: number, options: { withCode?: boolean } = {}): Promise<IssuedToken | undefined> {
    const now = Date.now();
    const { issued, row } = this.newToken(purpose, userId, ttlSeconds, options.withCode === true, now);
    return (await this.repository.replaceUnlessIssuedAfter(row, now - cooldownMs)) ? issued : undefined;
  }

  private newToken(purpose: OneTimePurpose, userId: number, ttlSeconds: number, withCode: boolean, now: number): { issued: IssuedToken; row: NewOneTimeToken } {
    const token = randomToken(32);
    const tokenHash = sha256(token);
    const code = withCode ? newCode() : undefined;
    const codeHash = code === undefined ? null : this.keys.codeDigest(tokenHash, code);
    return { issued: { token, code }, row: { tokenHash, purpose, userId, codeHash, createdAt: now, expiresAt: now + ttlSeconds * 1000 } };
  }

  find(purpose: OneTimePurpose, token: string): Promise<OneTimeTokenRow | undefined> {
    return this.repository.findLive(purpose, sha256(token), Date.now());
  }

  latestOfUser(purpose: OneTimePurpose, userId: number): Promise<OneTimeTokenRow | undefined> {
    return this.repository.latestLiveOfUser(purpose, userId, Date.now());
  }

  /** When the user's latest token of this purpose was issued (live or not). */
  lastIssuedAt(purpose: OneTimePurpose, userId: number): Promise<number | undefined> {
    return this.repository.latestCreatedAt(purpose, userId);
  }

  /**
   * A new code for a live token, replacing its code, unless the current one was sent less than
   * `cooldownMs` ago (or the token is used or expired): then undefined and nothing changes.
   */
  async replaceCode(row: OneTimeTokenRow, cooldownMs: number): Promise<string | undefined> {
    const now = Date.now();
    const code = newCode();
    const replaced = await this.repository.replaceCode(row.token_hash, this.keys.codeDigest(row.token_hash, code), now, now - cooldownMs);
    return replaced ? code : undefined;
  }

  consume(row: OneTimeTokenRow): Promise<boolean> {
    return this.repository.consume(row.token_hash, Date.now());
  }

  consumeAllOfUser(purpose: OneTimePurpose, userId: number): Promise<void> {
    return this.repository.consumeAllOfUser(purpose, userId, Date.now());
  }

  /**
   * Spends one of the token's attempts on `check`. A wrong answer on the last attempt burns the token.
   * 'exhausted' means no attempt was left (or the token is gone): the caller must start over.
   */
  async attempt(row: OneTimeTokenRow, check: () => Promise<boolean>): Promise<CodeCheck> {
    const { outcome, wasLast } = await this.spendAttempt(row, check);
    if (outcome === 'rejected' && wasLast) await this.repository.burn(row.token_hash, Date.now());
    return outcome;
  }

  /**
   * Checks the 6-digit code mailed beside a verification link, spending one of the code's attempts.
   * After the last wrong code the code is dead (no attempt is left) but the link lives on: whoever
   * guesses at someone's code must not also spend the link in their mailbox.
   */
  async attemptCode(row: OneTimeTokenRow, code: string): Promise<CodeCheck> {
    return (await this.spendAttempt(row, async () => this.codeMatches(row, code))).outcome;
  }

  private async spendAttempt(row: OneTimeTokenRow, check: () => Promise<boolean>): Promise<{ outcome: CodeCheck; wasLast: boolean }> {
    const attempts = await this.repository.reserveAttempt(row.token_hash, MAX_CODE_ATTEMPTS, Date.now());
    if (attempts === undefined) return { outcome: 'exhausted', wasLast: false };
    return { outcome: (await check()) ? 'accepted' : 'rejected', wasLast: attempts >= MAX_CODE_ATTEMPTS };
  }

  /** Compares a mailed code with the row's keyed digest in constant time. */
  codeMatches(row: OneTimeTokenRow, code: string): boolean {
    return row.code_hash !== null && safeEqual(row.code_hash, this.keys.codeDigest(row.token_hash, code));
  }

  /** Expired rows are useless a day later; reset tokens of deleted accounts go with them. */
  purgeExpired(): Promise<void> {
    return this.repository.purgeExpiredBefore(Date.now() - 86_400_000);
  }
}

function newCode(): string {
  return String(randomInt(0, 1_000_000)).padStart(6, '0');
}
