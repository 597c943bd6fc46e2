import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { after, before, it } from 'node:test';
import type { TestContext } from 'node:test';
import { sha256 } from '../../../src/platform/crypto.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { assertError, signIn } from '../../support/api.ts';
import { cookie, createUser, login, PASSWORD, postJson, totpAt } from './support/auth.ts';
import type { SignedInWithPassword } from '../../support/api.ts';
import { Mailbox } from './support/mailbox.ts';
import type { ReceivedMail } from './support/mailbox.ts';

const COOLDOWN_MS = 30_000;
const SUBJECTS = { signIn: /^Your Fleet sign-in code$/, setup: /^Confirm two-factor authentication by e-mail for Fleet$/, confirm: /^Your Fleet security code$/ };

function codeIn(mail: ReceivedMail): string {
  const match = /Your code: (\d{6})/.exec(mail.text);
  assert.ok(match?.[1], `no code in:\n${mail.text}`);
  return match[1];
}

function otherThan(code: string): string {
  return code === '000000' ? '000001' : '000000';
}

/** Freezes Date only: the SMTP exchange keeps its real timers. */
function freezeClock(t: TestContext): { tick: (ms: number) => void } {
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  return { tick: (ms) => t.mock.timers.tick(ms) };
}

describeEachEngine('auth two-factor authentication by e-mail', (engine) => {
  let server: TestServer;
  let mailbox: Mailbox;
  before(async () => {
    mailbox = await Mailbox.start();
    server = await startTestServer(engine, { RATE_LIMITS: 'off', SMTP_URL: mailbox.url, APP_NAME: 'Fleet' });
  });
  after(async () => {
    await server.dispose();
    await mailbox.close();
  });

  const db = () => server.database!.db;
  const call = (url: string, session: Pick<SignedInWithPassword, 'authorization'>, payload?: unknown) =>
    server.app.inject({ method: 'POST', url, headers: session.authorization, ...(payload === undefined ? {} : { payload: payload as object }) });
  const profile = (session: SignedInWithPassword) => server.app.inject({ url: '/api/auth/profile', headers: session.authorization });
  const twoFactorLogin = (tempToken: string, code: string) => postJson(server, '/api/auth/2fa/login', { temp_token: tempToken, code });
  const resend = (tempToken: unknown) => postJson(server, '/api/auth/2fa/email/resend', { temp_token: tempToken });
  const tokens = (userId: number, purpose: string) =>
    db().selectFrom('one_time_tokens').selectAll().where('user_id', '=', userId).where('purpose', '=', purpose).orderBy('created_at').execute();
  const tempTokenRow = (tempToken: string) => db().selectFrom('one_time_tokens').selectAll().where('token_hash', '=', sha256(tempToken)).executeTakeFirstOrThrow();
  const twoFactorRow = (userId: number) => db().selectFrom('two_factor').selectAll().where('user_id', '=', userId).executeTakeFirst();

  /** Runs `action` and waits for the next mail of that kind to `address` (a sign-in code mailed meanwhile is skipped). */
  async function mailedCode(address: string, subject: RegExp, action: () => Promise<LightMyRequestResponse>) {
    const seen = mailbox.to(address).length;
    const response = await action();
    assert.ok(response.statusCode < 300, response.body);
    for (let count = seen + 1; ; count++) {
      const mail = await mailbox.waitFor(address, count);
      if (subject.test(mail.subject)) return { response, mail, code: codeIn(mail) };
    }
  }

  /** A user with e-mail 2FA on; the session signed in with the password only, before 2FA was on. */
  async function emailUser(email: string) {
    const userId = await createUser(server, { email });
    const session = await signIn(server, email, { password: PASSWORD });
    const { code } = await mailedCode(email, SUBJECTS.setup, () => call('/api/auth/2fa/email/setup', session));
    const verified = await call('/api/auth/2fa/email/verify', session, { code });
    assert.equal(verified.statusCode, 200, verified.body);
    return { userId, session, backupCodes: verified.json().backup_codes as string[] };
  }

  async function totpUser(email: string) {
    const userId = await createUser(server, { email });
    const session = await signIn(server, email, { password: PASSWORD });
    const { secret } = (await call('/api/auth/2fa/setup', session)).json();
    assert.equal((await call('/api/auth/2fa/verify', session, { code: totpAt(secret, Date.now()) })).statusCode, 200);
    return { userId, session };
  }

  it('setup mails a code; verify turns e-mail 2FA on with 10 backup codes; then setup of either method is refused', async () => {
    const address = 'email-setup@example.com';
    const userId = await createUser(server, { email: address, name: 'Eve' });
    const session = await signIn(server, address, { password: PASSWORD });
    const { response, mail, code } = await mailedCode(address, SUBJECTS.setup, () => call('/api/auth/2fa/email/setup', session));
    assert.deepEqual(Object.keys(response.json()), ['message']);
    assert.ok(!mail.subject.includes(code), 'the code is not in the subject');
    assert.ok(mail.html.includes(code));
    assert.ok(mail.text.includes('Hello Eve,'));
    const [pending] = await tokens(userId, 'two_factor_email_setup');
    assert.ok(pending?.code_hash && !pending.code_hash.includes(code), 'stored as a keyed digest');

    assertError(await call('/api/auth/2fa/email/verify', session, { code: otherThan(code) }), 400, 'INVALID_2FA_CODE');
    assert.equal((await profile(session)).json().attributes.twoFactorEnabled, false);
    const verified = await call('/api/auth/2fa/email/verify', session, { code });
    assert.equal(verified.statusCode, 200, verified.body);
    assert.deepEqual(Object.keys(verified.json()).sort(), ['backup_codes', 'message']);
    assert.equal(verified.json().backup_codes.length, 10);
    assert.equal((await profile(session)).json().attributes.twoFactorEnabled, true);
    const row = await twoFactorRow(userId);
    assert.equal(row?.method, 'email');
    assert.equal(row?.secret, null);
    assert.equal((await db().selectFrom('backup_codes').select('id').where('user_id', '=', userId).execute()).length, 10);

    assertError(await call('/api/auth/2fa/email/verify', session, { code }), 400, 'TWO_FACTOR_ALREADY_ENABLED');
    assertError(await call('/api/auth/2fa/email/setup', session), 400, 'TWO_FACTOR_ALREADY_ENABLED');
    assertError(await call('/api/auth/2fa/setup', session), 400, 'TOTP_ALREADY_ENABLED');
    assert.equal((await twoFactorRow(userId))?.pending_secret, null, 'no TOTP setup was held');
  });

  it('one method at a time: no e-mail setup while TOTP is on, and no TOTP confirmation once e-mail 2FA is on', async () => {
    const totp = await totpUser('totp-first@example.com');
    assertError(await call('/api/auth/2fa/email/setup', totp.session), 400, 'TWO_FACTOR_ALREADY_ENABLED');
    assert.deepEqual(await tokens(totp.userId, 'two_factor_email_setup'), [], 'nothing mailed');
    assert.equal((await twoFactorRow(totp.userId))?.method, 'totp');

    const address = 'both-pending@example.com';
    const userId = await createUser(server, { email: address });
    const session = await signIn(server, address, { password: PASSWORD });
    const { secret } = (await call('/api/auth/2fa/setup', session)).json();
    const { code } = await mailedCode(address, SUBJECTS.setup, () => call('/api/auth/2fa/email/setup', session));
    assert.equal((await call('/api/auth/2fa/email/verify', session, { code })).statusCode, 200);
    assertError(await call('/api/auth/2fa/verify', session, { code: totpAt(secret, Date.now()) }), 400, 'TOTP_ALREADY_ENABLED');
    const row = await twoFactorRow(userId);
    assert.deepEqual([row?.method, row?.secret, row?.pending_secret], ['email', null, null]);
  });

  it('a setup code: none pending is 400, a repeat within 30 s mails nothing, 5 wrong codes burn it, and it expires', async (t) => {
    const clock = freezeClock(t);
    const address = 'setup-code@example.com';
    const userId = await createUser(server, { email: address });
    const session = await signIn(server, address, { password: PASSWORD });
    assertError(await call('/api/auth/2fa/email/verify', session, { code: '123456' }), 400, 'TWO_FACTOR_SETUP_REQUIRED');

    const first = await mailedCode(address, SUBJECTS.setup, () => call('/api/auth/2fa/email/setup', session));
    const repeated = await call('/api/auth/2fa/email/setup', session);
    assert.equal(repeated.statusCode, 200);
    assert.deepEqual(repeated.json(), first.response.json(), 'the same answer');
    assert.equal((await tokens(userId, 'two_factor_email_setup')).length, 1, 'no second code within 30 s');
    for (let i = 0; i < 5; i++) assertError(await call('/api/auth/2fa/email/verify', session, { code: otherThan(first.code) }), 400, 'INVALID_2FA_CODE');
    assertError(await call('/api/auth/2fa/email/verify', session, { code: first.code }), 400, 'TWO_FACTOR_SETUP_REQUIRED');

    clock.tick(COOLDOWN_MS);
    const second = await mailedCode(address, SUBJECTS.setup, () => call('/api/auth/2fa/email/setup', session));
    clock.tick(server.config.ttl.totpSetup * 1000 + 1);
    assertError(await call('/api/auth/2fa/email/verify', session, { code: second.code }), 400, 'TWO_FACTOR_SETUP_REQUIRED');
    assert.equal((await profile(session)).json().attributes.twoFactorEnabled, false);
    assert.equal(await twoFactorRow(userId), undefined);
  });

  it('login answers 202 type email and mails a code bound to that temp_token; /2fa/login takes it once, or a backup code', async () => {
    const address = 'email-login@example.com';
    const { backupCodes } = await emailUser(address);
    const first = await mailedCode(address, SUBJECTS.signIn, () => login(server, address));
    assert.equal(first.response.statusCode, 202);
    const body = first.response.json();
    assert.deepEqual(Object.keys(body).sort(), ['message', 'require_2fa', 'temp_token', 'type']);
    assert.equal(body.type, 'email');
    assert.equal(cookie(first.response, 'access_token'), undefined);
    const second = await mailedCode(address, SUBJECTS.signIn, () => login(server, address));
    const secondToken = second.response.json().temp_token as string;
    if (second.code !== first.code) assertError(await twoFactorLogin(body.temp_token, second.code), 401, 'INVALID_2FA_LOGIN_CODE');

    const done = await twoFactorLogin(body.temp_token, first.code);
    assert.equal(done.statusCode, 200, done.body);
    assert.equal(done.json().email, address);
    const accessToken = cookie(done, 'access_token')?.value;
    assert.ok(accessToken);
    assertError(await twoFactorLogin(body.temp_token, first.code), 401, 'TEMP_TOKEN_EXPIRED');
    assert.equal((await twoFactorLogin(secondToken, backupCodes[0] as string)).statusCode, 200, 'a backup code also completes it');
    const regenerated = await call('/api/auth/2fa/regenerate', { authorization: { authorization: `Bearer ${accessToken}` } });
    assert.equal(regenerated.statusCode, 200, 'this session just passed the e-mailed factor');
  });

  it('the sign-in code lives as long as its temp_token, and 5 wrong codes burn both', async (t) => {
    const clock = freezeClock(t);
    const address = 'email-burn@example.com';
    await emailUser(address);
    const burned = await mailedCode(address, SUBJECTS.signIn, () => login(server, address));
    const burnedToken = burned.response.json().temp_token as string;
    for (let i = 0; i < 5; i++) assertError(await twoFactorLogin(burnedToken, otherThan(burned.code)), 401, 'INVALID_2FA_LOGIN_CODE');
    assertError(await twoFactorLogin(burnedToken, burned.code), 401, 'TEMP_TOKEN_EXPIRED');

    const late = await mailedCode(address, SUBJECTS.signIn, () => login(server, address));
    const lateToken = late.response.json().temp_token as string;
    clock.tick(server.config.ttl.twoFactorTempToken * 1000 + 1);
    assertError(await twoFactorLogin(lateToken, late.code), 401, 'TEMP_TOKEN_EXPIRED');
    assertError(await resend(lateToken), 401, 'TEMP_TOKEN_EXPIRED');
  });

  it('resend mails a new code at most every 30 s, answering the same; the new code replaces the old', async (t) => {
    const clock = freezeClock(t);
    const address = 'email-resend@example.com';
    await emailUser(address);
    const first = await mailedCode(address, SUBJECTS.signIn, () => login(server, address));
    const tempToken = first.response.json().temp_token as string;
    const stored = await tempTokenRow(tempToken);
    const throttled = await resend(tempToken);
    assert.equal(throttled.statusCode, 200, throttled.body);
    assert.deepEqual(Object.keys(throttled.json()), ['message']);
    assert.deepEqual(await tempTokenRow(tempToken), stored, 'within 30 s the code stays');

    clock.tick(COOLDOWN_MS);
    const second = await mailedCode(address, SUBJECTS.signIn, () => resend(tempToken));
    assert.deepEqual(second.response.json(), throttled.json(), 'the same answer');
    if (second.code !== first.code) assertError(await twoFactorLogin(tempToken, first.code), 401, 'INVALID_2FA_LOGIN_CODE');
    assert.equal((await twoFactorLogin(tempToken, second.code)).statusCode, 200);
    assertError(await resend(tempToken), 401, 'TEMP_TOKEN_EXPIRED');
    assertError(await resend('never-issued'), 401, 'TEMP_TOKEN_EXPIRED');

    await totpUser('totp-resend@example.com');
    const totpSignIn = await login(server, 'totp-resend@example.com');
    assert.equal(totpSignIn.json().type, 'totp');
    const totpToken = totpSignIn.json().temp_token as string;
    clock.tick(COOLDOWN_MS);
    const nothing = await resend(totpToken);
    assert.deepEqual(nothing.json(), throttled.json(), 'a TOTP sign-in: the same answer');
    assert.equal((await tempTokenRow(totpToken)).code_hash, null, 'and no code');
  });

  it('disable and regenerate take a code from /2fa/email/code: 30 s cooldown, single use, 5 wrong tries burn it', async (t) => {
    const clock = freezeClock(t);
    const address = 'email-change@example.com';
    const { userId, session } = await emailUser(address);
    assertError(await call('/api/auth/2fa/regenerate', session), 403, 'REAUTHENTICATION_REQUIRED');
    const first = await mailedCode(address, SUBJECTS.confirm, () => call('/api/auth/2fa/email/code', session));
    assert.deepEqual(Object.keys(first.response.json()), ['message']);
    const repeated = await call('/api/auth/2fa/email/code', session);
    assert.deepEqual(repeated.json(), first.response.json(), 'the same answer within 30 s');
    assert.equal((await tokens(userId, 'two_factor_email_code')).length, 1, 'and no second code');

    const regenerated = await call('/api/auth/2fa/regenerate', session, { code: first.code });
    assert.equal(regenerated.statusCode, 200, regenerated.body);
    assert.equal(regenerated.json().backup_codes.length, 10);
    assertError(await call('/api/auth/2fa/regenerate', session, { code: first.code }), 400, 'INVALID_2FA_CODE');

    clock.tick(COOLDOWN_MS);
    const second = await mailedCode(address, SUBJECTS.confirm, () => call('/api/auth/2fa/email/code', session));
    for (let i = 0; i < 5; i++) assertError(await call('/api/auth/2fa/disable', session, { code: otherThan(second.code) }), 400, 'INVALID_2FA_CODE');
    assertError(await call('/api/auth/2fa/disable', session, { code: second.code }), 400, 'INVALID_2FA_CODE');
    assert.equal((await twoFactorRow(userId))?.method, 'email', 'still on');

    clock.tick(COOLDOWN_MS);
    const third = await mailedCode(address, SUBJECTS.confirm, () => call('/api/auth/2fa/email/code', session));
    const disabled = await call('/api/auth/2fa/disable', session, { code: third.code });
    assert.equal(disabled.statusCode, 200, disabled.body);
    assert.equal(await twoFactorRow(userId), undefined);
    assert.equal((await login(server, address)).statusCode, 200, 'one step again');
    assertError(await call('/api/auth/2fa/email/code', session), 400, 'TWO_FACTOR_NOT_ENABLED');

    const totp = await totpUser('totp-no-mail@example.com');
    assertError(await call('/api/auth/2fa/email/code', totp.session), 400, 'TWO_FACTOR_NOT_ENABLED');
    assert.deepEqual(await tokens(totp.userId, 'two_factor_email_code'), []);
  });

  it('answers bad input with 400, and no caller with 401, changing nothing', async () => {
    const address = 'email-bad-input@example.com';
    const userId = await createUser(server, { email: address });
    const session = await signIn(server, address, { password: PASSWORD });
    for (const payload of [{}, { code: 123456 }, { code: 'x'.repeat(33) }, { code: '123456', extra: true }]) {
      assertError(await call('/api/auth/2fa/email/verify', session, payload), 400, 'VALIDATION_FAILED');
    }
    for (const payload of [{}, { temp_token: 1 }, { temp_token: 'x'.repeat(513) }, { temp_token: 'a', extra: 1 }]) {
      assertError(await postJson(server, '/api/auth/2fa/email/resend', payload), 400, 'VALIDATION_FAILED');
    }
    for (const url of ['/api/auth/2fa/email/setup', '/api/auth/2fa/email/verify', '/api/auth/2fa/email/code']) {
      assertError(await server.app.inject({ method: 'POST', url, payload: { code: '123456' } }), 401, 'UNAUTHORIZED');
    }
    assert.equal(await twoFactorRow(userId), undefined);
    assert.deepEqual(await tokens(userId, 'two_factor_email_setup'), []);
  });
});
