import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { assertError } from '../../support/api.ts';
import { createUser, login, PASSWORD, postJson, storedUser } from './support/auth.ts';
import { Mailbox } from './support/mailbox.ts';
import type { ReceivedMail } from './support/mailbox.ts';

const WEB_URL = 'https://app.example.com';

function linkToken(mail: ReceivedMail): string {
  const match = /verify-email\?token=([\w-]+)/.exec(mail.text);
  assert.ok(match?.[1], `no link in:\n${mail.text}`);
  return match[1];
}

function code(mail: ReceivedMail): string {
  const match = /code in the app: (\d{6})/.exec(mail.text);
  assert.ok(match?.[1], `no code in:\n${mail.text}`);
  return match[1];
}

describeEachEngine('auth registration and e-mail verification', (engine) => {
  let server: TestServer;
  let mailbox: Mailbox;
  before(async () => {
    mailbox = await Mailbox.start();
    server = await startTestServer(engine, {
      RATE_LIMITS: 'off',
      SMTP_URL: mailbox.url,
      MAIL_FROM: 'Fleet <hello@fleet.example>',
      WEB_URL,
      APP_NAME: 'Fleet',
    });
  });
  after(async () => {
    await server.dispose();
    await mailbox.close();
  });

  const register = (email: string, overrides: Record<string, unknown> = {}) =>
    postJson(server, '/api/auth/register', { email, password: PASSWORD, name: 'New User', termsPrivacyAccepted: true, ...overrides });
  const verificationRows = async (email: string) => {
    const user = await storedUser(server, email);
    if (!user) return [];
    return server.database!.db.selectFrom('one_time_tokens').selectAll().where('user_id', '=', user.id).where('purpose', '=', 'email_verification').execute();
  };

  it('registers with 201, mails a link and a code in text and HTML, and refuses login until verified', async () => {
    const response = await register('New.User@Example.com');
    assert.equal(response.statusCode, 201, response.body);
    assert.deepEqual(Object.keys(response.json()).sort(), ['email', 'message']);
    assert.equal(response.json().email, 'new.user@example.com');

    const mail = await mailbox.waitFor('new.user@example.com');
    assert.equal(mail.from, 'hello@fleet.example');
    assert.match(mail.subject, /Fleet/);
    const token = linkToken(mail);
    assert.ok(mail.text.includes(`${WEB_URL}/verify-email?token=${token}`));
    assert.ok(mail.html.includes(`${WEB_URL}/verify-email?token=${token}`));
    assert.ok(mail.html.includes(code(mail)));

    const stored = await storedUser(server, 'new.user@example.com');
    assert.equal(stored?.name, 'New User');
    const row = await server.database!.db.selectFrom('users').select(['attributes', 'email_verified_at', 'password_hash']).where('id', '=', stored!.id).executeTakeFirstOrThrow();
    assert.equal(row.email_verified_at, null);
    assert.match(row.password_hash ?? '', /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    assert.equal(JSON.parse(row.attributes).termsAcceptedVersion, '2025-01-01');
    const [tokenRow] = await verificationRows('new.user@example.com');
    assert.notEqual(tokenRow?.token_hash, token, 'the token is stored hashed');
    assert.notEqual(tokenRow?.code_hash, code(mail), 'the code is stored as a keyed digest');

    assertError(await login(server, 'new.user@example.com'), 403, 'EMAIL_NOT_VERIFIED');
  });

  it('verifies with the link once; the code of the same mail dies with it', async () => {
    await register('link@example.com');
    const mail = await mailbox.waitFor('link@example.com');
    const response = await postJson(server, '/api/auth/verify', { token: linkToken(mail) });
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(Object.keys(response.json()).sort(), ['email', 'message']);
    assert.equal(response.json().email, 'link@example.com');
    assert.equal((await login(server, 'link@example.com')).statusCode, 200);
    assertError(await postJson(server, '/api/auth/verify', { token: linkToken(mail) }), 400, 'INVALID_TOKEN');
    assertError(await postJson(server, '/api/auth/verify-code', { email: 'link@example.com', code: code(mail) }), 400, 'INVALID_VERIFICATION_CODE');
    assertError(await postJson(server, '/api/auth/verify', { token: 'unknown-token' }), 400, 'INVALID_TOKEN');
  });

  it('verifies with the 6-digit code once; the link of the same mail dies with it', async () => {
    await register('code@example.com');
    const mail = await mailbox.waitFor('code@example.com');
    const response = await postJson(server, '/api/auth/verify-code', { email: 'CODE@example.com', code: code(mail) });
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(Object.keys(response.json()).sort(), ['email', 'message']);
    assert.equal(response.json().email, 'code@example.com');
    assert.ok((await storedUser(server, 'code@example.com'))?.email);
    assert.equal((await login(server, 'code@example.com')).statusCode, 200);
    assertError(await postJson(server, '/api/auth/verify-code', { email: 'code@example.com', code: code(mail) }), 400, 'INVALID_VERIFICATION_CODE');
    assertError(await postJson(server, '/api/auth/verify', { token: linkToken(mail) }), 400, 'INVALID_TOKEN');
  });

  it('4 wrong codes leave the right one working; the 5th wrong code burns the code but not the link', async () => {
    const wrong = (right: string) => (right === '000000' ? '000001' : '000000');
    await register('four-wrong@example.com');
    const four = await mailbox.waitFor('four-wrong@example.com');
    for (let i = 0; i < 4; i++) {
      assertError(await postJson(server, '/api/auth/verify-code', { email: 'four-wrong@example.com', code: wrong(code(four)) }), 400, 'INVALID_VERIFICATION_CODE');
    }
    assert.equal((await postJson(server, '/api/auth/verify-code', { email: 'four-wrong@example.com', code: code(four) })).statusCode, 200);

    await register('five-wrong@example.com');
    const five = await mailbox.waitFor('five-wrong@example.com');
    for (let i = 0; i < 5; i++) {
      assertError(await postJson(server, '/api/auth/verify-code', { email: 'five-wrong@example.com', code: wrong(code(five)) }), 400, 'INVALID_VERIFICATION_CODE');
    }
    assertError(await postJson(server, '/api/auth/verify-code', { email: 'five-wrong@example.com', code: code(five) }), 400, 'INVALID_VERIFICATION_CODE');
    assert.equal((await storedUser(server, 'five-wrong@example.com'))?.email, 'five-wrong@example.com');
    assertError(await login(server, 'five-wrong@example.com'), 403, 'EMAIL_NOT_VERIFIED');
    const byLink = await postJson(server, '/api/auth/verify', { token: linkToken(five) });
    assert.equal(byLink.statusCode, 200, 'guesses at the code must not spend the link in the mailbox');
    assert.equal((await login(server, 'five-wrong@example.com')).statusCode, 200);
  });

  it('the link and the code expire after EMAIL_VERIFICATION_TTL', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
    await register('late@example.com');
    const mail = await mailbox.waitFor('late@example.com');
    t.mock.timers.tick(server.config.ttl.emailVerification * 1000 + 1);
    assertError(await postJson(server, '/api/auth/verify-code', { email: 'late@example.com', code: code(mail) }), 400, 'INVALID_VERIFICATION_CODE');
    assertError(await postJson(server, '/api/auth/verify', { token: linkToken(mail) }), 400, 'INVALID_TOKEN');
    assertError(await login(server, 'late@example.com'), 403, 'EMAIL_NOT_VERIFIED');
  });

  it('resend answers the same for unknown, verified and unverified addresses; 30 s cooldown; the new mail replaces the old', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
    await register('resend@example.com');
    const first = await mailbox.waitFor('resend@example.com');
    await createUser(server, { email: 'already-verified@example.com' });

    const answers = [];
    for (const email of ['resend@example.com', 'nobody-registered@example.com', 'already-verified@example.com']) {
      const response = await postJson(server, '/api/auth/resend-verification', { email });
      assert.equal(response.statusCode, 200);
      answers.push(response.body);
    }
    assert.equal(new Set(answers).size, 1, 'one answer for every address');
    assert.deepEqual(Object.keys(JSON.parse(answers[0] as string)), ['message']);
    await server.auth!.mailSettled();
    assert.equal((await verificationRows('resend@example.com')).length, 1, 'within the cooldown: no new mail');
    assert.equal((await verificationRows('already-verified@example.com')).length, 0);

    t.mock.timers.tick(30_000);
    assert.equal((await postJson(server, '/api/auth/resend-verification', { email: 'resend@example.com' })).body, answers[0]);
    const second = await mailbox.waitFor('resend@example.com', 2);
    assert.notEqual(linkToken(second), linkToken(first));
    assertError(await postJson(server, '/api/auth/verify', { token: linkToken(first) }), 400, 'INVALID_TOKEN');
    assert.equal((await postJson(server, '/api/auth/verify', { token: linkToken(second) })).statusCode, 200);
  });

  it('enforces each password rule with 400 WEAK_PASSWORD naming the rule, creating nobody', async () => {
    const cases: [string, RegExp][] = [
      ['Ab1defg', /at least 8 characters/],
      ['alllower1x', /uppercase/],
      ['ALLUPPER1X', /lowercase/],
      ['NoDigitsHere', /digit/],
      [`Aa1${'x'.repeat(126)}`, /at most 128 characters/],
      ['Password1', /too common/],
      ['Qwerty123', /too common/],
    ];
    for (const [password, rule] of cases) {
      const response = await register('weak@example.com', { password });
      assertError(response, 400, 'WEAK_PASSWORD');
      assert.match(response.json().message, rule, password);
    }
    assert.equal(await storedUser(server, 'weak@example.com'), undefined);
    assert.equal((await register('eight@example.com', { password: 'Ab1defgh' })).statusCode, 201);
    assert.equal((await register('max@example.com', { password: `Aa1${'x'.repeat(125)}` })).statusCode, 201);
  });

  it('requires accepted terms, refuses a taken address with 409 and bad input with 400', async () => {
    assertError(await register('terms@example.com', { termsPrivacyAccepted: false }), 400, 'TERMS_NOT_ACCEPTED');
    await createUser(server, { email: 'taken@example.com', name: 'Original' });
    assertError(await register('TAKEN@example.com'), 409, 'EMAIL_TAKEN');
    assert.equal((await storedUser(server, 'taken@example.com'))?.name, 'Original');

    const bad: Record<string, unknown>[] = [
      { email: 'missing-name@example.com', password: PASSWORD, termsPrivacyAccepted: true },
      { email: 'missing-terms@example.com', password: PASSWORD, name: 'x' },
      { password: PASSWORD, name: 'x', termsPrivacyAccepted: true },
      { email: 'wrong-type@example.com', password: PASSWORD, name: 'x', termsPrivacyAccepted: 'yes' },
      { email: 'wrong-type2@example.com', password: 12345678, name: 'x', termsPrivacyAccepted: true },
      { email: 'long-name@example.com', password: PASSWORD, name: 'x'.repeat(256), termsPrivacyAccepted: true },
      { email: 'empty-name@example.com', password: PASSWORD, name: '', termsPrivacyAccepted: true },
      { email: 'extra@example.com', password: PASSWORD, name: 'x', termsPrivacyAccepted: true, administrator: true },
    ];
    for (const payload of bad) {
      assertError(await postJson(server, '/api/auth/register', payload), 400, 'VALIDATION_FAILED');
      if (typeof payload.email === 'string') assert.equal(await storedUser(server, payload.email), undefined);
    }
    for (const [url, payload] of [
      ['/api/auth/verify', {}],
      ['/api/auth/verify', { token: 5 }],
      ['/api/auth/verify', { token: 'x'.repeat(513) }],
      ['/api/auth/verify-code', { email: 'code@example.com', code: '12345' }],
      ['/api/auth/verify-code', { email: 'code@example.com', code: 123456 }],
      ['/api/auth/verify-code', { email: 'code@example.com' }],
      ['/api/auth/resend-verification', {}],
      ['/api/auth/resend-verification', { email: 'not-an-address' }],
      ['/api/auth/resend-verification', { email: 'a@example.com', extra: 1 }],
    ] as const) {
      assertError(await postJson(server, url, payload), 400, 'VALIDATION_FAILED');
    }
  });
});

describeEachEngine('auth registration switched off', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off', REGISTRATION_ENABLED: 'false' });
  });
  after(() => server.dispose());

  it('answers 403 REGISTRATION_DISABLED and creates nobody', async () => {
    const response = await postJson(server, '/api/auth/register', { email: 'closed@example.com', password: PASSWORD, name: 'x', termsPrivacyAccepted: true });
    assertError(response, 403, 'REGISTRATION_DISABLED');
    assert.equal(await storedUser(server, 'closed@example.com'), undefined);
  });
});
