import type { Mailer } from '../../../platform/mail.ts';
import { renderMessage } from '../templates/index.ts';
import type { ChannelSender, Notification, SendOutcome } from './notification.ts';

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => HTML_ESCAPES[char] as string);
}

/** A mail to the account's address through the platform's mailer (SMTP, or the outbox without SMTP_URL). */
export class MailSender implements ChannelSender {
  readonly #mailer: Mailer;
  readonly #webUrl: string;
  readonly #appName: string;

  constructor(options: { mailer: Mailer; webUrl: string; appName: string }) {
    this.#mailer = options.mailer;
    this.#webUrl = options.webUrl;
    this.#appName = options.appName;
  }

  async send(notification: Notification, signal: AbortSignal): Promise<SendOutcome> {
    const message = renderMessage(notification, this.#webUrl);
    const sending = this.#mailer.send({
      to: notification.user.email,
      subject: `${this.#appName}: ${message.title}`,
      text: `${message.title}\n\n${message.body}\n\n${message.url}\n`,
      html: `<p><strong>${escapeHtml(message.title)}</strong></p><p>${escapeHtml(message.body)}</p><p><a href="${escapeHtml(message.url)}">${escapeHtml(message.url)}</a></p>`,
      links: [message.url],
    });
    try {
      await abortable(sending, signal);
      return { kind: 'sent' };
    } catch (error) {
      const responseCode = (error as { responseCode?: number }).responseCode;
      const text = `mail: ${(error as Error).message}`.slice(0, 300);
      // SMTP 5xx is a permanent refusal (no such mailbox); 4xx and connection trouble pass.
      return responseCode !== undefined && responseCode >= 500 ? { kind: 'final', error: text } : { kind: 'retry', error: text };
    }
  }
}

function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('timed out'));
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
