import type { FastifyBaseLogger } from 'fastify';
import type { Mailer, MailMessage } from '../../../platform/mail.ts';

/**
 * Sends mails in the background: a request never waits for SMTP, so answering "sent" and "no such
 * address" takes the same time. Failures are logged; stop() waits for mails still on their way.
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
    const sending = this.mailer.send(message).then(
      () => undefined,
      (error: unknown) => this.log.error({ err: error, subject: message.subject }, 'mail delivery failed'),
    );
    this.pending.add(sending);
    void sending.finally(() => this.pending.delete(sending));
  }

  async stop(): Promise<void> {
    await Promise.allSettled([...this.pending]);
    this.mailer.close();
  }
}
