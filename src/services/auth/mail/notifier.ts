import type { FastifyBaseLogger } from 'fastify';
import type { Mailer, MailMessage } from '../../../platform/mail.ts';

/**
 * Sends mails in the background: a request never waits for SMTP. Failures are logged; stop() waits
 * for mails still on their way.
 */
export class MailNotifier {
  private readonly mailer: Mailer;
  private readonly log: FastifyBaseLogger;
  private readonly pending = new Set<Promise<void>>();

  constructor(mailer: Mailer, log: FastifyBaseLogger) {
    this.mailer = mailer;
    this.log = log;
  }

  deliver(message: MailMessage): void {
    this.track(this.send(message));
  }

  /**
   * Runs `compose` once the caller's answer has been written (it starts on the next turn of the
   * event loop), then sends the mail it returns, if any. For answers that must not tell whether an
   * address has an account (spec §7): looking the account up and issuing its token happen after the
   * answer, so an unknown address and a known one answer after the same work.
   */
  deliverAfterAnswer(compose: () => Promise<MailMessage | undefined>): void {
    const afterAnswer = new Promise<void>((resolve) => setImmediate(resolve));
    this.track(
      afterAnswer.then(compose).then(
        (message) => message && this.send(message),
        (error: unknown) => this.log.error({ err: error }, 'preparing a mail failed'),
      ),
    );
  }

  /** Resolves once the mail work started so far has finished, for tools and tests that read its effects. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  async stop(): Promise<void> {
    await this.settled();
    this.mailer.close();
  }

  private send(message: MailMessage): Promise<void> {
    return this.mailer.send(message).then(
      () => undefined,
      (error: unknown) => this.log.error({ err: error, subject: message.subject }, 'mail delivery failed'),
    );
  }

  private track(work: Promise<void>): void {
    this.pending.add(work);
    void work.finally(() => this.pending.delete(work));
  }
}
