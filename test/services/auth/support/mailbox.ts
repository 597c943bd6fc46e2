import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
}

/** A real SMTP server on a random local port that keeps every mail it receives, for tests to read. */
export class Mailbox {
  readonly mails: ReceivedMail[] = [];
  private readonly server: SMTPServer;
  private readonly waiters: (() => void)[] = [];
  private port = 0;

  private constructor() {
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          this.mails.push({
            ...parseMail(raw),
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((address) => address.address.toLowerCase()),
          });
          for (const wake of this.waiters.splice(0)) wake();
          callback();
        });
      },
    });
  }

  static async start(): Promise<Mailbox> {
    const mailbox = new Mailbox();
    await new Promise<void>((resolve) => mailbox.server.listen(0, '127.0.0.1', resolve));
    mailbox.port = (mailbox.server.server.address() as AddressInfo).port;
    return mailbox;
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  to(address: string): ReceivedMail[] {
    return this.mails.filter((mail) => mail.to.includes(address.toLowerCase()));
  }

  /** Waits until `address` has received `count` mails and returns the last of them. */
  async waitFor(address: string, count = 1, timeoutMs = 5000): Promise<ReceivedMail> {
    const deadline = Date.now() + timeoutMs;
    while (this.to(address).length < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no mail #${count} for ${address} within ${timeoutMs} ms (got ${this.to(address).length})`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.to(address)[count - 1] as ReceivedMail;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** Enough MIME for nodemailer's output: headers, multipart/alternative, quoted-printable and base64. */
export function parseMail(raw: string): { subject: string; text: string; html: string } {
  const { headers, body } = splitHeaders(raw);
  const subject = decodeHeader(headers.get('subject') ?? '');
  const parts = partsOf(headers, body);
  return {
    subject,
    text: parts.find((part) => part.type.startsWith('text/plain'))?.body ?? '',
    html: parts.find((part) => part.type.startsWith('text/html'))?.body ?? '',
  };
}

function splitHeaders(raw: string): { headers: Map<string, string>; body: string } {
  const normalized = raw.replace(/\r\n/g, '\n');
  const end = normalized.indexOf('\n\n');
  const head = end === -1 ? normalized : normalized.slice(0, end);
  const headers = new Map<string, string>();
  for (const line of head.replace(/\n[ \t]+/g, ' ').split('\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return { headers, body: end === -1 ? '' : normalized.slice(end + 2) };
}

function partsOf(headers: Map<string, string>, body: string): { type: string; body: string }[] {
  const type = headers.get('content-type') ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (!type.toLowerCase().startsWith('multipart/') || !boundary) {
    return [{ type: type.toLowerCase(), body: decodeBody(body, headers.get('content-transfer-encoding')) }];
  }
  return body
    .split(`--${boundary}`)
    .slice(1)
    .filter((chunk) => !chunk.startsWith('--'))
    .flatMap((chunk) => {
      const part = splitHeaders(chunk.replace(/^\n/, ''));
      return partsOf(part.headers, part.body);
    });
}

function decodeBody(body: string, encoding: string | undefined): string {
  switch (encoding?.toLowerCase()) {
    case 'quoted-printable':
      return Buffer.from(
        body.replace(/=\n/g, '').replace(/=([0-9A-F]{2})/gi, (_match, hex: string) => String.fromCharCode(parseInt(hex, 16))),
        'latin1',
      ).toString('utf8');
    case 'base64':
      return Buffer.from(body.replace(/\s/g, ''), 'base64').toString('utf8');
    default:
      return body;
  }
}

function decodeHeader(value: string): string {
  return value.replace(/=\?utf-8\?([QB])\?([^?]*)\?=/gi, (_match, kind: string, text: string) =>
    kind.toUpperCase() === 'B'
      ? Buffer.from(text, 'base64').toString('utf8')
      : Buffer.from(text.replace(/_/g, ' ').replace(/=([0-9A-F]{2})/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1').toString('utf8'),
  );
}
