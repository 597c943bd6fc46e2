import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { createTransport } from 'nodemailer';
import { randomToken } from './crypto.ts';
import { keepPrivate } from './private-files.ts';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** The links the mail carries; logged at debug level when mails go to the outbox, so a local user can follow them. */
  links: string[];
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
  close(): void;
}

export interface MailerOptions {
  smtpUrl: string | undefined;
  from: string;
  /** Where mails go as .eml files when no SMTP server is configured. */
  outboxDir: string;
  log: FastifyBaseLogger;
}

/**
 * SMTP when SMTP_URL is set; otherwise each mail becomes an .eml file in the outbox, logged at info
 * without its links (they carry single-use tokens, and info logs travel far) and with them at debug.
 */
export function createMailer(options: MailerOptions): Mailer {
  return options.smtpUrl ? smtpMailer(options.smtpUrl, options.from) : outboxMailer(options);
}

function smtpMailer(smtpUrl: string, from: string): Mailer {
  const transport = createTransport({ url: smtpUrl, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000 });
  return {
    async send(message) {
      await transport.sendMail({ from, to: message.to, subject: message.subject, text: message.text, html: message.html });
    },
    close: () => transport.close(),
  };
}

function outboxMailer(options: MailerOptions): Mailer {
  keepPrivate(options.outboxDir);
  const compose = createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  return {
    async send(message) {
      const info = await compose.sendMail({
        from: options.from,
        to: message.to,
        subject: message.subject,
        text: message.text,
        html: message.html,
      });
      await mkdir(options.outboxDir, { recursive: true, mode: 0o700 });
      const file = path.join(options.outboxDir, `${Date.now()}-${randomToken(6)}.eml`);
      // The mail holds single-use tokens: readable by the server's user only. Written under another
      // name and renamed, so whoever watches the outbox never reads half a mail.
      await writeFile(`${file}.partial`, info.message as Buffer, { mode: 0o600 });
      await rename(`${file}.partial`, file);
      options.log.info({ to: message.to, subject: message.subject, file }, 'mail written to the outbox (no SMTP_URL)');
      options.log.debug({ file, links: message.links }, 'links of the mail written to the outbox');
    },
    close: () => compose.close(),
  };
}
