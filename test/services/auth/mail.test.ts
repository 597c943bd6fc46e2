import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { createMailer } from '../../../src/platform/mail.ts';
import { verificationMail } from '../../../src/services/auth/mail/templates.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { outboxMails } from '../../support/outbox.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { PASSWORD, postJson } from './support/auth.ts';
import { parseMail } from './support/mailbox.ts';

function capturingLogger(level: 'info' | 'debug') {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  return { log: pino({ level }, stream), lines };
}

async function waitForFiles(dir: string, count: number): Promise<string[]> {
  for (let i = 0; i < 100; i++) {
    const files = outboxMails(dir);
    if (files.length >= count) return files;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no ${count} .eml files in ${dir}`);
}

describe('mail without SMTP_URL', () => {
  it('writes each mail as an .eml file (text and HTML) readable by the server user only, and logs its links at debug level', async () => {
    const outboxDir = mkdtempSync(path.join(tmpdir(), 'trackstack-outbox-'));
    try {
      const { log, lines } = capturingLogger('debug');
      const mailer = createMailer({ smtpUrl: undefined, from: 'Fleet <hello@fleet.example>', outboxDir, log });
      const message = verificationMail({ appName: 'Fleet', to: 'local@example.com', name: 'Lo <Cal>', link: 'http://localhost:8080/verify-email?token=abc', code: '123456', ttlSeconds: 86_400 });
      await mailer.send(message);
      mailer.close();
      const [file] = await waitForFiles(outboxDir, 1);
      assert.equal(statSync(file as string).mode & 0o777, 0o600);
      const raw = readFileSync(file as string, 'utf8');
      assert.match(raw, /^From: Fleet <hello@fleet\.example>/m);
      assert.match(raw, /^To: local@example\.com/m);
      const mail = parseMail(raw);
      assert.equal(mail.subject, 'Confirm your e-mail address for Fleet');
      assert.ok(mail.text.includes('http://localhost:8080/verify-email?token=abc'));
      assert.ok(mail.text.includes('123456'));
      assert.ok(mail.text.includes('1 day'));
      assert.ok(mail.html.includes('href="http://localhost:8080/verify-email?token=abc"'));
      assert.ok(mail.html.includes('Lo &#60;Cal&#62;'), 'names are escaped in HTML');
      const logged = lines.find((line) => line.msg === 'mail written to the outbox (no SMTP_URL)');
      assert.equal(logged?.file, file);
      const links = lines.find((line) => line.msg === 'links of the mail written to the outbox');
      assert.equal(links?.level, 20, 'debug');
      assert.deepEqual(links?.links, ['http://localhost:8080/verify-email?token=abc']);
    } finally {
      rmSync(outboxDir, { recursive: true, force: true });
    }
  });

  it('logs no link, token or code at info level', async () => {
    const outboxDir = mkdtempSync(path.join(tmpdir(), 'trackstack-outbox-'));
    try {
      const { log, lines } = capturingLogger('info');
      const mailer = createMailer({ smtpUrl: undefined, from: 'Fleet <hello@fleet.example>', outboxDir, log });
      await mailer.send(verificationMail({ appName: 'Fleet', to: 'quiet@example.com', name: null, link: 'http://localhost:8080/verify-email?token=secret-token-1', code: '654321', ttlSeconds: 60 }));
      mailer.close();
      assert.equal(lines.length, 1);
      assert.equal(lines[0]?.msg, 'mail written to the outbox (no SMTP_URL)');
      assert.equal(lines[0]?.to, 'quiet@example.com');
      const logged = JSON.stringify(lines);
      for (const secret of ['secret-token-1', 'token=', '654321']) assert.ok(!logged.includes(secret), secret);
    } finally {
      rmSync(outboxDir, { recursive: true, force: true });
    }
  });
});

describeEachEngine('auth sign-up with the outbox', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off' });
  });
  after(() => server.dispose());

  it('a new user can finish sign-up from the mail in DATA_DIR/outbox', async () => {
    const registered = await postJson(server, '/api/auth/register', { email: 'outbox@example.com', password: PASSWORD, name: 'Out Box', termsPrivacyAccepted: true });
    assert.equal(registered.statusCode, 201);
    const [file] = await waitForFiles(path.join(server.dataDir, 'outbox'), 1);
    const mail = parseMail(readFileSync(file as string, 'utf8'));
    const token = /verify-email\?token=([\w-]+)/.exec(mail.text)?.[1];
    assert.ok(token);
    assert.ok(mail.text.startsWith('Hello Out Box,'));
    assert.equal((await postJson(server, '/api/auth/verify', { token })).statusCode, 200);
  });
});
