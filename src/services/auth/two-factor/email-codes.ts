import type { MailNotifier } from '../mail/notifier.ts';
import { twoFactorCodeMail } from '../mail/templates.ts';
import type { TwoFactorCodeReason } from '../mail/templates.ts';
import { RESEND_COOLDOWN_MS } from '../registration/service.ts';
import type { OneTimeTokenRow } from '../tokens/one-time-repository.ts';
import type { OneTimeTokens } from '../tokens/one-time-tokens.ts';

export interface CodeRecipient {
  id: number;
  email: string;
  name: string | null;
}

/** A signed-in user's mailed codes: confirming e-mail 2FA's setup, or a change of 2FA (disable, regenerate). */
export type MailedCodePurpose = 'two_factor_email_setup' | 'two_factor_email_code';

export interface EmailCodeDeps {
  oneTimeTokens: OneTimeTokens;
  mail: MailNotifier;
  appName: string;
  /** TOTP_SETUP_TTL: a pending setup of either method. */
  setupTtlSeconds: number;
  /** TWO_FACTOR_TEMP_TOKEN_TTL: sign-in codes live as long as their temp_token, confirmation codes as long too. */
  codeTtlSeconds: number;
}

/**
 * The 6-digit codes of e-mail as the second factor. Each is stored only as a keyed digest bound to its
 * token, compared in constant time, works once and burns after 5 wrong tries; a new one is mailed at
 * most every 30 s per user and purpose (the same cooldown as the verification resend).
 */
export class EmailCodes {
  private readonly deps: EmailCodeDeps;
  constructor(deps: EmailCodeDeps) {
    this.deps = deps;
  }

  /** Mails the code bound to an e-mail 2FA sign-in's temp_token. */
  mailSignInCode(user: CodeRecipient, code: string): void {
    this.deliver(user, code, 'sign-in', this.deps.codeTtlSeconds);
  }

  /** Whether `code` is the one bound to this sign-in's temp_token (the caller counts the attempt and spends the token). */
  matchesSignInCode(tempToken: OneTimeTokenRow, code: string): boolean {
    return this.deps.oneTimeTokens.codeMatches(tempToken, code);
  }

  /** Mails a new code replacing the previous one, unless one went out within the cooldown: then nothing happens. */
  async send(purpose: MailedCodePurpose, user: CodeRecipient): Promise<void> {
    const ttlSeconds = purpose === 'two_factor_email_setup' ? this.deps.setupTtlSeconds : this.deps.codeTtlSeconds;
    const issued = await this.deps.oneTimeTokens.issueAfterCooldown(purpose, user.id, ttlSeconds, RESEND_COOLDOWN_MS, { withCode: true });
    if (issued) this.deliver(user, issued.code as string, purpose === 'two_factor_email_setup' ? 'setup' : 'confirm', ttlSeconds);
  }

  /** Spends the user's live code of `purpose` when `code` is it; 'missing' when none is live (never sent, used, expired or burned). */
  async take(purpose: MailedCodePurpose, userId: number, code: string): Promise<'accepted' | 'rejected' | 'missing'> {
    const { oneTimeTokens } = this.deps;
    const row = await oneTimeTokens.latestOfUser(purpose, userId);
    if (!row) return 'missing';
    const result = await oneTimeTokens.attempt(row, async () => oneTimeTokens.codeMatches(row, code));
    return result === 'accepted' && (await oneTimeTokens.consume(row)) ? 'accepted' : 'rejected';
  }

  private deliver(user: CodeRecipient, code: string, reason: TwoFactorCodeReason, ttlSeconds: number): void {
    this.deps.mail.deliver(twoFactorCodeMail({ appName: this.deps.appName, to: user.email, name: user.name, code, reason, ttlSeconds }));
  }
}
