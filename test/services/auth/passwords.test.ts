import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { assertError, signIn } from '../../support/api.ts';
import { createUser, login, PASSWORD, postJson, storedUser } from './support/auth.ts';
import { Mailbox } from './support/mailbox.ts';
import type { ReceivedMail } from './support/mailbox.ts';

const NEW_PASSWORD = 'Brand-New-Secret-7';

function resetToken(mail: ReceivedMail): string {
  const match = /reset-password\?token=([\w-]+)/.exec(mail.text);
  assert.ok(match?.[1], `no reset link in:\n${mail.text}`);
  assert.ok(mail.html.includes(`reset-password?token=${match[1]}`));
  return match[1];
}

describeEachEngine('auth password reset and change', (engine) => {
  let server: TestServer;
  let mailbox: Mailbox;
  before(async () => {
    mailbox = await Mailbox.start();
    server = await startTestServer(engine, { RATE_LIMITS: 'off', SMTP_URL: mailbox.url, WEB_URL: 'https://app.example.com' });
  });
  after(async () => {
    await server.dispose();
    await mailbox.close();
  });

  const resetRows = async (email: string) => {
    const user = await storedUser(server, email);
    return server.database!.db.selectFrom('one_time_tokens').select('token_hash').where('user_id', '=', user!.id).where('purpose', '=', 'password_reset').execute();
  };
  const profile = (bearer: { authorization: string }) => server.app.inject({ url: '/api/auth/profile', headers: bearer });

  it('reset answers the same 200 for known and unknown addresses and mails only the known one', async () => {
    await createUser(server, { email: 'reset-known@example.com' });
    const known = await postJson(server, '/api/auth/password/reset', { email: 'Reset-Known@example.com' });
    const unknown = await postJson(server, '/api/auth/password/reset', { email: 'reset-unknown@example.com' });
    assert.equal(known.statusCode, 200);
    assert.equal(unknown.statusCode, 200);
    assert.equal(known.body, unknown.body);
    assert.deepEqual(known.json(), { message: 'If email exists, reset link sent' });
    const mail = await mailbox.waitFor('reset-known@example.com');
    assert.ok(mail.text.includes('https://app.example.com/reset-password?token='));
    await server.auth!.mailSettled();
    assert.equal(mailbox.to('reset-unknown@example.com').length, 0);
    const [row] = await resetRows('reset-known@example.com');
    assert.notEqual(row?.token_hash, resetToken(mail), 'stored hashed');
  });

  it('update sets the password once, signs out every session, and the old password stops working', async () => {
    await createUser(server, { email: 'reset-update@example.com' });
    const before1 = await signIn(server, 'reset-update@example.com', { password: PASSWORD });
    const before2 = await signIn(server, 'reset-update@example.com', { password: PASSWORD });
    await postJson(server, '/api/auth/password/reset', { email: 'reset-update@example.com' });
    const token = resetToken(await mailbox.waitFor('reset-update@example.com'));

    const response = await postJson(server, '/api/auth/password/update', { token, password: NEW_PASSWORD });
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json(), { message: 'Password updated successfully' });
    for (const session of [before1, before2]) {
      assertError(await profile(session.authorization), 401, 'INVALID_TOKEN');
      assertError(await postJson(server, '/api/auth/refresh', { refreshToken: session.refreshToken }), 401, 'INVALID_TOKEN');
    }
    assertError(await login(server, 'reset-update@example.com'), 401, 'INVALID_CREDENTIALS');
    assert.equal((await login(server, 'reset-update@example.com', NEW_PASSWORD)).statusCode, 200);
    assertError(await postJson(server, '/api/auth/password/update', { token, password: 'Another-Secret-8' }), 400, 'INVALID_TOKEN');
    assert.equal((await login(server, 'reset-update@example.com', NEW_PASSWORD)).statusCode, 200, 'the refused reuse changed nothing');
  });

  it('a weak password is refused and leaves the link usable; a newer mail replaces the older link', async () => {
    await createUser(server, { email: 'reset-weak@example.com' });
    await postJson(server, '/api/auth/password/reset', { email: 'reset-weak@example.com' });
    const older = resetToken(await mailbox.waitFor('reset-weak@example.com'));
    await postJson(server, '/api/auth/password/reset', { email: 'reset-weak@example.com' });
    const newer = resetToken(await mailbox.waitFor('reset-weak@example.com', 2));
    assertError(await postJson(server, '/api/auth/password/update', { token: older, password: NEW_PASSWORD }), 400, 'INVALID_TOKEN');
    const weak = await postJson(server, '/api/auth/password/update', { token: newer, password: 'short1A' });
    assertError(weak, 400, 'WEAK_PASSWORD');
    assert.match(weak.json().message, /at least 8/);
    assert.equal((await login(server, 'reset-weak@example.com')).statusCode, 200, 'password unchanged');
    assert.equal((await postJson(server, '/api/auth/password/update', { token: newer, password: NEW_PASSWORD })).statusCode, 200);
  });

  it('the link expires after PASSWORD_RESET_TTL', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
    await createUser(server, { email: 'reset-expiry@example.com' });
    await postJson(server, '/api/auth/password/reset', { email: 'reset-expiry@example.com' });
    const token = resetToken(await mailbox.waitFor('reset-expiry@example.com'));
    t.mock.timers.tick(server.config.ttl.passwordReset * 1000 + 1);
    assertError(await postJson(server, '/api/auth/password/update', { token, password: NEW_PASSWORD }), 400, 'INVALID_TOKEN');
    assert.equal((await login(server, 'reset-expiry@example.com')).statusCode, 200);
  });

  it('answers 404 when the account of a valid link has been deleted', async () => {
    await createUser(server, { email: 'reset-deleted@example.com' });
    await postJson(server, '/api/auth/password/reset', { email: 'reset-deleted@example.com' });
    const token = resetToken(await mailbox.waitFor('reset-deleted@example.com'));
    const session = await signIn(server, 'reset-deleted@example.com', { password: PASSWORD });
    assert.equal((await server.app.inject({ method: 'DELETE', url: '/api/auth/account', headers: session.authorization })).statusCode, 204);
    assertError(await postJson(server, '/api/auth/password/update', { token, password: NEW_PASSWORD }), 404, 'USER_NOT_FOUND');
  });

  it('a reset verifies an unverified address (the mailbox is proven); a disabled account gets no mail', async () => {
    await createUser(server, { email: 'reset-unverified@example.com', verified: false });
    await postJson(server, '/api/auth/password/reset', { email: 'reset-unverified@example.com' });
    const token = resetToken(await mailbox.waitFor('reset-unverified@example.com'));
    assert.equal((await postJson(server, '/api/auth/password/update', { token, password: NEW_PASSWORD })).statusCode, 200);
    assert.equal((await login(server, 'reset-unverified@example.com', NEW_PASSWORD)).statusCode, 200);

    const disabled = await createUser(server, { email: 'reset-disabled@example.com' });
    await server.database!.db.updateTable('users').set({ disabled: 1 }).where('id', '=', disabled).execute();
    assert.equal((await postJson(server, '/api/auth/password/reset', { email: 'reset-disabled@example.com' })).statusCode, 200);
    await server.auth!.mailSettled();
    assert.equal((await resetRows('reset-disabled@example.com')).length, 0);
  });

  it('change-password needs the current password, keeps this session and signs out the others', async () => {
    await createUser(server, { email: 'change@example.com' });
    const current = await signIn(server, 'change@example.com', { password: PASSWORD });
    const other = await signIn(server, 'change@example.com', { password: PASSWORD });
    const change = (payload: unknown) => server.app.inject({ method: 'POST', url: '/api/auth/change-password', headers: current.authorization, payload: payload as object });

    assertError(await change({ currentPassword: 'Wrong-Password-9', newPassword: NEW_PASSWORD }), 400, 'INVALID_CURRENT_PASSWORD');
    const weak = await change({ currentPassword: PASSWORD, newPassword: 'nouppercase1' });
    assertError(weak, 400, 'WEAK_PASSWORD');
    assert.match(weak.json().message, /uppercase/);
    assert.equal((await profile(other.authorization)).statusCode, 200, 'refused changes signed nobody out');
    assert.equal((await login(server, 'change@example.com')).statusCode, 200);

    const response = await change({ currentPassword: PASSWORD, newPassword: NEW_PASSWORD });
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(Object.keys(response.json()), ['message']);
    assert.equal((await profile(current.authorization)).statusCode, 200, 'this session stays');
    assert.equal((await postJson(server, '/api/auth/refresh', { refreshToken: current.refreshToken })).statusCode, 200);
    assertError(await profile(other.authorization), 401, 'INVALID_TOKEN');
    assertError(await postJson(server, '/api/auth/refresh', { refreshToken: other.refreshToken }), 401, 'INVALID_TOKEN');
    assertError(await login(server, 'change@example.com'), 401, 'INVALID_CREDENTIALS');
    assert.equal((await login(server, 'change@example.com', NEW_PASSWORD)).statusCode, 200);
    assertError(await server.app.inject({ method: 'POST', url: '/api/auth/change-password', payload: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD } }), 401, 'UNAUTHORIZED');
  });

  it('answers bad input with 400 and changes nothing', async () => {
    await createUser(server, { email: 'password-bad-input@example.com' });
    const session = await signIn(server, 'password-bad-input@example.com', { password: PASSWORD });
    for (const payload of [{}, { email: 5 }, { email: 'not-an-address' }, { email: 'a@example.com', x: 1 }]) {
      assertError(await postJson(server, '/api/auth/password/reset', payload), 400, 'VALIDATION_FAILED');
    }
    for (const payload of [{ token: 'abc' }, { password: NEW_PASSWORD }, { token: 1, password: NEW_PASSWORD }, { token: 'x'.repeat(513), password: NEW_PASSWORD }, { token: 'abc', password: 'x'.repeat(1025) }]) {
      assertError(await postJson(server, '/api/auth/password/update', payload), 400, 'VALIDATION_FAILED');
    }
    for (const payload of [{ currentPassword: PASSWORD }, { newPassword: NEW_PASSWORD }, { currentPassword: PASSWORD, newPassword: 5 }, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD, x: 1 }]) {
      assertError(await server.app.inject({ method: 'POST', url: '/api/auth/change-password', headers: session.authorization, payload }), 400, 'VALIDATION_FAILED');
    }
    assert.equal((await login(server, 'password-bad-input@example.com')).statusCode, 200);
  });
});
