import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { TestContext } from 'node:test';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { assertError, signIn } from '../../support/api.ts';
import { cookie, createUser, login, PASSWORD, postJson, totpAt } from './support/auth.ts';
import type { SignedInWithPassword } from '../../support/api.ts';

const STEP = 30_000;

/** Freezes the clock 1 s into a TOTP step, so codes and steps are deterministic. */
function freezeClock(t: TestContext): { now: () => number; tick: (ms: number) => void } {
  const start = Math.floor(Date.now() / STEP) * STEP + 1000;
  t.mock.timers.enable({ apis: ['Date'], now: start });
  return { now: () => Date.now(), tick: (ms) => t.mock.timers.tick(ms) };
}

describeEachEngine('auth two-factor authentication', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off', APP_NAME: 'Fleet' });
  });
  after(() => server.dispose());

  const call = (url: string, session: SignedInWithPassword, payload?: unknown) =>
    server.app.inject({ method: 'POST', url, headers: session.authorization, ...(payload === undefined ? {} : { payload: payload as object }) });
  const twoFactorLogin = (tempToken: string, code: string) => postJson(server, '/api/auth/2fa/login', { temp_token: tempToken, code });
  const startLogin = async (email: string) => {
    const response = await login(server, email);
    assert.equal(response.statusCode, 202, response.body);
    return response.json().temp_token as string;
  };

  /** A user with 2FA on, enabled at the current step; returns the secret and the backup codes. */
  async function enabledUser(email: string, now: number) {
    await createUser(server, { email });
    const session = await signIn(server, email, { password: PASSWORD });
    const setup = (await call('/api/auth/2fa/setup', session)).json();
    const verified = await call('/api/auth/2fa/verify', session, { code: totpAt(setup.secret, now) });
    assert.equal(verified.statusCode, 200, verified.body);
    return { session, secret: setup.secret as string, backupCodes: verified.json().backup_codes as string[] };
  }

  it('setup, then verify: 10 backup codes shown once, secret encrypted and codes hashed at rest', async (t) => {
    const clock = freezeClock(t);
    const id = await createUser(server, { email: 'setup@example.com' });
    const session = await signIn(server, 'setup@example.com', { password: PASSWORD });
    const setup = await call('/api/auth/2fa/setup', session);
    assert.equal(setup.statusCode, 200, setup.body);
    const { secret, otpauth_url: url } = setup.json();
    assert.match(secret, /^[A-Z2-7]{32}$/, '20 bytes in base32');
    const parsed = new URL(url);
    assert.equal(parsed.protocol, 'otpauth:');
    assert.equal(parsed.searchParams.get('secret'), secret);
    assert.equal(parsed.searchParams.get('issuer'), 'Fleet');
    assert.equal(parsed.searchParams.get('algorithm'), 'SHA1');
    assert.equal(parsed.searchParams.get('digits'), '6');
    assert.equal(parsed.searchParams.get('period'), '30');
    assert.ok(decodeURIComponent(parsed.pathname).includes('setup@example.com'));

    assertError(await call('/api/auth/2fa/verify', session, { code: totpAt(secret, clock.now() - 2 * STEP) }), 400, 'INVALID_2FA_CODE');
    assert.equal((await server.app.inject({ url: '/api/auth/profile', headers: session.authorization })).json().attributes.twoFactorEnabled, false);

    const verified = await call('/api/auth/2fa/verify', session, { code: totpAt(secret, clock.now()) });
    assert.equal(verified.statusCode, 200, verified.body);
    const { message, backup_codes: codes } = verified.json();
    assert.equal(typeof message, 'string');
    assert.equal(codes.length, 10);
    assert.equal(new Set(codes).size, 10);
    for (const code of codes) assert.match(code, /^[0-9a-hjkmnp-tv-z]{5}-[0-9a-hjkmnp-tv-z]{5}$/);
    assert.equal((await server.app.inject({ url: '/api/auth/profile', headers: session.authorization })).json().attributes.twoFactorEnabled, true);

    const row = await server.database!.db.selectFrom('two_factor').selectAll().where('user_id', '=', id).executeTakeFirstOrThrow();
    assert.match(row.secret ?? '', /^v1\./);
    assert.ok(!(row.secret ?? '').includes(secret));
    assert.equal(row.pending_secret, null);
    const hashes = await server.database!.db.selectFrom('backup_codes').select('code_hash').where('user_id', '=', id).execute();
    assert.equal(hashes.length, 10);
    const salts = new Set(hashes.map((hash) => hash.code_hash.split('.')[0]));
    assert.equal(salts.size, 10, 'each code has its own salt');
    for (const { code_hash } of hashes) for (const code of codes) assert.ok(!code_hash.includes(code.replace('-', '')));

    assertError(await call('/api/auth/2fa/setup', session), 400, 'TOTP_ALREADY_ENABLED');
    assertError(await call('/api/auth/2fa/verify', session, { code: totpAt(secret, clock.now() + STEP) }), 400, 'TOTP_ALREADY_ENABLED');
  });

  it('verify needs a pending setup, which lasts 10 minutes', async (t) => {
    const clock = freezeClock(t);
    await createUser(server, { email: 'pending@example.com' });
    const session = await signIn(server, 'pending@example.com', { password: PASSWORD });
    assertError(await call('/api/auth/2fa/verify', session, { code: '123456' }), 400, 'TWO_FACTOR_SETUP_REQUIRED');
    const { secret } = (await call('/api/auth/2fa/setup', session)).json();
    clock.tick(server.config.ttl.totpSetup * 1000 + 1);
    assertError(await call('/api/auth/2fa/verify', session, { code: totpAt(secret, clock.now()) }), 400, 'TWO_FACTOR_SETUP_REQUIRED');
    const fresh = (await call('/api/auth/2fa/setup', session)).json();
    assert.notEqual(fresh.secret, secret);
    assert.equal((await call('/api/auth/2fa/verify', session, { code: totpAt(fresh.secret, clock.now()) })).statusCode, 200);
  });

  it('login answers 202 with a temp_token that is no access token; /2fa/login answers the User with cookies', async (t) => {
    const clock = freezeClock(t);
    const { secret } = await enabledUser('two-step@example.com', clock.now());
    const response = await login(server, 'two-step@example.com');
    assert.equal(response.statusCode, 202, response.body);
    const body = response.json();
    assert.deepEqual(Object.keys(body).sort(), ['message', 'require_2fa', 'temp_token', 'type']);
    assert.equal(body.require_2fa, true);
    assert.equal(body.type, 'totp');
    assert.equal(cookie(response, 'access_token'), undefined);
    assertError(await server.app.inject({ url: '/api/auth/profile', headers: { authorization: `Bearer ${body.temp_token}` } }), 401, 'INVALID_TOKEN');

    clock.tick(STEP);
    const done = await twoFactorLogin(body.temp_token, totpAt(secret, clock.now()));
    assert.equal(done.statusCode, 200, done.body);
    assert.equal(done.json().email, 'two-step@example.com');
    assert.equal(done.json().attributes.twoFactorEnabled, true);
    const access = cookie(done, 'access_token');
    const refresh = cookie(done, 'refresh_token');
    assert.ok(access?.value && refresh?.value);
    assert.equal(access.httpOnly, true);
    assert.equal(refresh.path, '/api/auth');
    assert.equal((await server.app.inject({ url: '/api/auth/profile', headers: { authorization: `Bearer ${access.value}` } })).statusCode, 200);
    assert.equal((await postJson(server, '/api/auth/refresh', { refreshToken: refresh.value })).statusCode, 200);
    assertError(await twoFactorLogin(body.temp_token, totpAt(secret, clock.now() + STEP)), 401, 'TEMP_TOKEN_EXPIRED');
  });

  it('never accepts a TOTP step twice, accepts ±1 step, refuses 2 steps away', async (t) => {
    const clock = freezeClock(t);
    const { secret } = await enabledUser('replay@example.com', clock.now());
    // The step used to confirm the setup is spent.
    assertError(await twoFactorLogin(await startLogin('replay@example.com'), totpAt(secret, clock.now())), 401, 'INVALID_2FA_LOGIN_CODE');

    clock.tick(4 * STEP);
    assertError(await twoFactorLogin(await startLogin('replay@example.com'), totpAt(secret, clock.now() - 2 * STEP)), 401, 'INVALID_2FA_LOGIN_CODE');
    assertError(await twoFactorLogin(await startLogin('replay@example.com'), totpAt(secret, clock.now() + 2 * STEP)), 401, 'INVALID_2FA_LOGIN_CODE');
    const previous = totpAt(secret, clock.now() - STEP);
    assert.equal((await twoFactorLogin(await startLogin('replay@example.com'), previous)).statusCode, 200, 'previous step');
    assertError(await twoFactorLogin(await startLogin('replay@example.com'), previous), 401, 'INVALID_2FA_LOGIN_CODE');
    const next = totpAt(secret, clock.now() + STEP);
    assert.equal((await twoFactorLogin(await startLogin('replay@example.com'), next)).statusCode, 200, 'next step');
    assertError(await twoFactorLogin(await startLogin('replay@example.com'), next), 401, 'INVALID_2FA_LOGIN_CODE');
    // Once a later step is used, an earlier one still inside the window is refused too.
    assertError(await twoFactorLogin(await startLogin('replay@example.com'), totpAt(secret, clock.now())), 401, 'INVALID_2FA_LOGIN_CODE');
  });

  it('each backup code works once, typed in any case and with or without its dash', async (t) => {
    const clock = freezeClock(t);
    const { backupCodes } = await enabledUser('backup@example.com', clock.now());
    const [first, second] = backupCodes as [string, string];
    assert.equal((await twoFactorLogin(await startLogin('backup@example.com'), first)).statusCode, 200);
    assertError(await twoFactorLogin(await startLogin('backup@example.com'), first), 401, 'INVALID_2FA_LOGIN_CODE');
    assert.equal((await twoFactorLogin(await startLogin('backup@example.com'), second.replace('-', '').toUpperCase())).statusCode, 200);
    assertError(await twoFactorLogin(await startLogin('backup@example.com'), second), 401, 'INVALID_2FA_LOGIN_CODE');
    assertError(await twoFactorLogin(await startLogin('backup@example.com'), 'zzzzz-zzzzz'), 401, 'INVALID_2FA_LOGIN_CODE');
  });

  it('the temp_token survives 4 wrong codes, burns on the 5th, and expires after 5 minutes', async (t) => {
    const clock = freezeClock(t);
    const { secret } = await enabledUser('temp@example.com', clock.now());
    clock.tick(STEP);
    const right = () => totpAt(secret, clock.now());
    const wrong = () => (right() === '000000' ? '000001' : '000000');

    const four = await startLogin('temp@example.com');
    for (let i = 0; i < 4; i++) assertError(await twoFactorLogin(four, wrong()), 401, 'INVALID_2FA_LOGIN_CODE');
    assert.equal((await twoFactorLogin(four, right())).statusCode, 200);

    clock.tick(STEP);
    const five = await startLogin('temp@example.com');
    for (let i = 0; i < 5; i++) assertError(await twoFactorLogin(five, wrong()), 401, 'INVALID_2FA_LOGIN_CODE');
    assertError(await twoFactorLogin(five, right()), 401, 'TEMP_TOKEN_EXPIRED');

    const late = await startLogin('temp@example.com');
    clock.tick(server.config.ttl.twoFactorTempToken * 1000 + 1);
    assertError(await twoFactorLogin(late, totpAt(secret, clock.now())), 401, 'TEMP_TOKEN_EXPIRED');
    assertError(await twoFactorLogin('never-issued', totpAt(secret, clock.now())), 401, 'TEMP_TOKEN_EXPIRED');
  });

  it('refuses the second step to an account disabled after its password step', async (t) => {
    const clock = freezeClock(t);
    const { secret, session } = await enabledUser('disabled-midway@example.com', clock.now());
    const tempToken = await startLogin('disabled-midway@example.com');
    await server.database!.db.updateTable('users').set({ disabled: 1 }).where('id', '=', session.userId).execute();
    clock.tick(STEP);
    assertError(await twoFactorLogin(tempToken, totpAt(secret, clock.now())), 403, 'ACCOUNT_DISABLED');
  });

  it('regenerate replaces the backup codes; 400 when 2FA is off', async (t) => {
    const clock = freezeClock(t);
    const { session, secret, backupCodes } = await enabledUser('regenerate@example.com', clock.now());
    clock.tick(STEP);
    const response = await call('/api/auth/2fa/regenerate', session, { code: totpAt(secret, clock.now()) });
    assert.equal(response.statusCode, 200, response.body);
    const fresh = response.json().backup_codes as string[];
    assert.equal(fresh.length, 10);
    assert.equal(typeof response.json().message, 'string');
    assertError(await twoFactorLogin(await startLogin('regenerate@example.com'), backupCodes[0] as string), 401, 'INVALID_2FA_LOGIN_CODE');
    assert.equal((await twoFactorLogin(await startLogin('regenerate@example.com'), fresh[0] as string)).statusCode, 200);

    await createUser(server, { email: 'no-2fa@example.com' });
    const plain = await signIn(server, 'no-2fa@example.com', { password: PASSWORD });
    assertError(await call('/api/auth/2fa/regenerate', plain), 400, 'TWO_FACTOR_NOT_ENABLED');
    assertError(await call('/api/auth/2fa/disable', plain, { code: '123456' }), 400, 'TWO_FACTOR_NOT_ENABLED');
  });

  it('regenerate with an access token alone is refused: 2FA cannot be stripped with a stolen token', async (t) => {
    const clock = freezeClock(t);
    // This session signed in with the password only (2FA was off then), like any stolen access token.
    const { session, secret } = await enabledUser('stolen-token@example.com', clock.now());
    const storedCodes = () => server.database!.db.selectFrom('backup_codes').select('code_hash').where('user_id', '=', session.userId).orderBy('id').execute();
    const before = await storedCodes();
    clock.tick(STEP);
    const wrongTotp = totpAt(secret, clock.now()) === '000000' ? '000001' : '000000';
    assertError(await call('/api/auth/2fa/regenerate', session), 403, 'REAUTHENTICATION_REQUIRED');
    assertError(await call('/api/auth/2fa/regenerate', session, {}), 403, 'REAUTHENTICATION_REQUIRED');
    assertError(await call('/api/auth/2fa/regenerate', session, { code: wrongTotp }), 400, 'INVALID_2FA_CODE');
    assertError(await call('/api/auth/2fa/regenerate', session, { code: 'zzzzz-zzzzz' }), 400, 'INVALID_2FA_CODE');
    assertError(await call('/api/auth/2fa/regenerate', session, { code: '123456', extra: 1 }), 400, 'VALIDATION_FAILED');
    assert.deepEqual(await storedCodes(), before, 'the backup codes are unchanged');
    assertError(await call('/api/auth/2fa/disable', session, { code: 'zzzzz-zzzzz' }), 400, 'INVALID_2FA_CODE');
    assert.equal((await login(server, 'stolen-token@example.com')).statusCode, 202, '2FA is still on');
  });

  it('regenerate takes a TOTP or backup code in the body, and none within 10 minutes of a 2FA sign-in of the same session', async (t) => {
    const clock = freezeClock(t);
    const { session, secret } = await enabledUser('reauth@example.com', clock.now());
    clock.tick(STEP);
    const withTotp = await call('/api/auth/2fa/regenerate', session, { code: totpAt(secret, clock.now()) });
    assert.equal(withTotp.statusCode, 200, withTotp.body);
    const [spent, ...rest] = withTotp.json().backup_codes as string[];
    const withBackup = await call('/api/auth/2fa/regenerate', session, { code: spent });
    assert.equal(withBackup.statusCode, 200, withBackup.body);
    assertError(await call('/api/auth/2fa/regenerate', session, { code: rest[0] }), 400, 'INVALID_2FA_CODE');

    clock.tick(STEP);
    const signedIn = await twoFactorLogin(await startLogin('reauth@example.com'), totpAt(secret, clock.now()));
    assert.equal(signedIn.statusCode, 200, signedIn.body);
    const twoFactorSession = { authorization: { authorization: `Bearer ${cookie(signedIn, 'access_token')?.value}` } } as SignedInWithPassword;
    assert.equal((await call('/api/auth/2fa/regenerate', twoFactorSession)).statusCode, 200, 'just signed in with 2FA');
    // Only that session's own sign-in counts.
    assertError(await call('/api/auth/2fa/regenerate', session), 403, 'REAUTHENTICATION_REQUIRED');
    clock.tick(10 * 60_000 - 1000);
    assert.equal((await call('/api/auth/2fa/regenerate', twoFactorSession)).statusCode, 200, 'still within 10 minutes');
    clock.tick(1000);
    assertError(await call('/api/auth/2fa/regenerate', twoFactorSession), 403, 'REAUTHENTICATION_REQUIRED');
  });

  it('disable needs a valid TOTP or backup code (400 otherwise); then login is one step again', async (t) => {
    const clock = freezeClock(t);
    const { session, secret } = await enabledUser('disable@example.com', clock.now());
    assertError(await call('/api/auth/2fa/disable', session, { code: totpAt(secret, clock.now()) }), 400, 'INVALID_2FA_CODE');
    assertError(await call('/api/auth/2fa/disable', session, { code: 'abcde-fghjk' }), 400, 'INVALID_2FA_CODE');
    assert.equal((await login(server, 'disable@example.com')).statusCode, 202, 'still on');
    clock.tick(STEP);
    const response = await call('/api/auth/2fa/disable', session, { code: totpAt(secret, clock.now()) });
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json(), { message: '2FA disabled' });
    assert.equal((await login(server, 'disable@example.com')).statusCode, 200);
    assertError(await call('/api/auth/2fa/disable', session, { code: totpAt(secret, clock.now()) }), 400, 'TWO_FACTOR_NOT_ENABLED');
    const counts = await server.database!.db.selectFrom('backup_codes').select('id').where('user_id', '=', session.userId).execute();
    assert.equal(counts.length, 0, 'backup codes go with it');

    const withBackup = await enabledUser('disable-backup@example.com', clock.now());
    assert.equal((await call('/api/auth/2fa/disable', withBackup.session, { code: withBackup.backupCodes[3] })).statusCode, 200);
  });

  it('answers bad input with 400 and changes nothing', async (t) => {
    const clock = freezeClock(t);
    const { session, secret } = await enabledUser('2fa-bad-input@example.com', clock.now());
    const tempToken = await startLogin('2fa-bad-input@example.com');
    for (const payload of [{}, { code: 123456 }, { code: 'x'.repeat(33) }, { code: '123456', extra: true }]) {
      assertError(await call('/api/auth/2fa/disable', session, payload), 400, 'VALIDATION_FAILED');
      assertError(await call('/api/auth/2fa/verify', session, payload), 400, 'VALIDATION_FAILED');
    }
    for (const payload of [{ temp_token: tempToken }, { code: '123456' }, { temp_token: 1, code: '123456' }, { temp_token: tempToken, code: '123456', x: 1 }]) {
      assertError(await postJson(server, '/api/auth/2fa/login', payload), 400, 'VALIDATION_FAILED');
    }
    assertError(await server.app.inject({ method: 'POST', url: '/api/auth/2fa/setup' }), 401, 'UNAUTHORIZED');
    clock.tick(STEP);
    assert.equal((await twoFactorLogin(tempToken, totpAt(secret, clock.now()))).statusCode, 200, 'the temp_token lost no attempt');
  });
});
