import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { decodeJwt } from 'jose';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { assertError, signIn } from '../../support/api.ts';
import { cookie, createUser, login, PASSWORD, postJson } from './support/auth.ts';

const ACCESS_TTL = 900;
const REFRESH_TTL = 7200;

describeEachEngine('auth sign-in, refresh, logout and validate', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine, {
      RATE_LIMITS: 'off',
      PUBLIC_URL: 'https://tracker.example.com',
      ACCESS_TOKEN_TTL: String(ACCESS_TTL),
      REFRESH_TOKEN_TTL: String(REFRESH_TTL),
    });
  });
  after(() => server.dispose());

  const setUser = (id: number, changes: Record<string, number | null>) =>
    server.database!.db.updateTable('users').set(changes).where('id', '=', id).execute();
  const profile = (headers: Record<string, string>) => server.app.inject({ method: 'GET', url: '/api/auth/profile', headers });
  const validate = (headers: Record<string, string>, method: 'GET' | 'HEAD' = 'GET') => server.app.inject({ method, url: '/api/auth/validate', headers });

  it('answers 200 with the login response and sets the session cookies with their attributes', async () => {
    const id = await createUser(server, { email: 'Login.Ok@Example.com', name: 'Ada' });
    const response = await login(server, 'login.ok@example.COM');
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.headers['cache-control'], 'no-store', 'tokens are never cached (RFC 6749 §5.1)');
    const body = response.json();
    assert.deepEqual(Object.keys(body).sort(), ['accessToken', 'expiresIn', 'refreshToken', 'user']);
    assert.equal(body.expiresIn, ACCESS_TTL);
    assert.deepEqual(body.user, {
      id,
      email: 'login.ok@example.com',
      name: 'Ada',
      phone: null,
      administrator: false,
      disabled: false,
      readonly: false,
      deviceReadonly: false,
      limitCommands: false,
      expirationTime: null,
      attributes: { emailVerified: true, twoFactorEnabled: false },
    });
    const claims = decodeJwt(body.accessToken);
    assert.equal(claims.userId, id);
    assert.equal(claims.email, 'login.ok@example.com');

    const access = cookie(response, 'access_token');
    assert.equal(access?.value, body.accessToken);
    assert.equal(access?.httpOnly, true);
    assert.equal(access?.sameSite, 'Lax');
    assert.equal(access?.path, '/');
    assert.equal(access?.secure, true, 'PUBLIC_URL is https');
    assert.equal(access?.maxAge, ACCESS_TTL);
    const refresh = cookie(response, 'refresh_token');
    assert.equal(refresh?.value, body.refreshToken);
    assert.equal(refresh?.httpOnly, true);
    assert.equal(refresh?.sameSite, 'Lax');
    assert.equal(refresh?.path, '/api/auth');
    assert.equal(refresh?.secure, true);
    assert.equal(refresh?.maxAge, REFRESH_TTL);
    const signedIn = cookie(response, 'signed_in');
    assert.equal(signedIn?.value, '1', 'no secret: only that this browser holds a sign-in');
    assert.equal(signedIn?.httpOnly, undefined, 'the web app reads it');
    assert.equal(signedIn?.sameSite, 'Lax');
    assert.equal(signedIn?.path, '/');
    assert.equal(signedIn?.secure, true);
    assert.equal(signedIn?.maxAge, REFRESH_TTL, 'as long as the refresh token can sign the browser in again');

    assert.equal((await profile({ authorization: `Bearer ${body.accessToken}` })).json().id, id);
    assert.equal((await profile({ cookie: `access_token=${body.accessToken}` })).json().id, id);
  });

  it('answers the same 401 for an unknown address and a wrong password', async () => {
    await createUser(server, { email: 'wrong-password@example.com' });
    const unknown = await login(server, 'nobody-here@example.com');
    const wrong = await login(server, 'wrong-password@example.com', 'Not-The-Password-1');
    assertError(unknown, 401, 'INVALID_CREDENTIALS');
    assertError(wrong, 401, 'INVALID_CREDENTIALS');
    assert.equal(unknown.body, wrong.body);
    assert.equal(cookie(wrong, 'access_token'), undefined);
  });

  it('refuses unverified, disabled and expired accounts with 403, but only after a correct password', async () => {
    const unverified = await createUser(server, { email: 'unverified@example.com', verified: false });
    assertError(await login(server, 'unverified@example.com', 'Wrong-Password-1'), 401, 'INVALID_CREDENTIALS');
    assertError(await login(server, 'unverified@example.com'), 403, 'EMAIL_NOT_VERIFIED');
    assert.ok(unverified > 0);

    const disabled = await createUser(server, { email: 'disabled@example.com' });
    await setUser(disabled, { disabled: 1 });
    assertError(await login(server, 'disabled@example.com', 'Wrong-Password-1'), 401, 'INVALID_CREDENTIALS');
    assertError(await login(server, 'disabled@example.com'), 403, 'ACCOUNT_DISABLED');

    const expired = await createUser(server, { email: 'expired@example.com' });
    await setUser(expired, { expiration_time: Date.now() - 1000 });
    assertError(await login(server, 'expired@example.com', 'Wrong-Password-1'), 401, 'INVALID_CREDENTIALS');
    assertError(await login(server, 'expired@example.com'), 403, 'ACCOUNT_EXPIRED');

    const future = await createUser(server, { email: 'expires-later@example.com' });
    await setUser(future, { expiration_time: Date.now() + 86_400_000 });
    assert.equal((await login(server, 'expires-later@example.com')).statusCode, 200);
  });

  it('refuses password login to an account without a password (social sign-in only)', async () => {
    await server.auth!.api.accounts.create({ email: 'social-only@example.com', emailVerified: true });
    assertError(await login(server, 'social-only@example.com'), 401, 'INVALID_CREDENTIALS');
  });

  it('logout answers 204 and the token is refused at once by the gateway and by /validate', async () => {
    await createUser(server, { email: 'logout@example.com' });
    const first = await signIn(server, 'logout@example.com', { password: PASSWORD });
    const second = await signIn(server, 'logout@example.com', { password: PASSWORD });
    assert.equal((await validate(first.authorization)).statusCode, 200);

    const response = await server.app.inject({ method: 'DELETE', url: '/api/auth/logout', headers: first.authorization });
    assert.equal(response.statusCode, 204);
    assert.equal(response.body, '');
    for (const name of ['access_token', 'refresh_token', 'signed_in']) {
      const cleared = cookie(response, name);
      assert.equal(cleared?.value, '');
      assert.ok(cleared?.expires && cleared.expires.getTime() <= Date.now(), `${name} cleared`);
    }
    assertError(await profile(first.authorization), 401, 'INVALID_TOKEN');
    assertError(await profile({ cookie: `access_token=${first.token}` }), 401, 'INVALID_TOKEN');
    assertError(await validate({ cookie: `access_token=${first.token}` }), 401, 'INVALID_TOKEN');
    assertError(await postJson(server, '/api/auth/refresh', { refreshToken: first.refreshToken }), 401, 'INVALID_TOKEN');
    assert.equal((await profile(second.authorization)).statusCode, 200, 'the other session lives on');
    assertError(await server.app.inject({ method: 'DELETE', url: '/api/auth/logout' }), 401, 'UNAUTHORIZED');
  });

  it('a cookie-authenticated logout must be a JSON request (CSRF guard)', async () => {
    await createUser(server, { email: 'cookie-logout@example.com' });
    const session = await signIn(server, 'cookie-logout@example.com', { password: PASSWORD });
    const cookieHeader = { cookie: `access_token=${session.token}` };
    assertError(await server.app.inject({ method: 'DELETE', url: '/api/auth/logout', headers: cookieHeader }), 403, 'FORBIDDEN');
    assert.equal((await profile(session.authorization)).statusCode, 200, 'refused logout changed nothing');
    const response = await server.app.inject({
      method: 'DELETE',
      url: '/api/auth/logout',
      headers: { ...cookieHeader, 'content-type': 'application/json' },
      payload: '{}',
    });
    assert.equal(response.statusCode, 204, response.body);
    assertError(await profile(session.authorization), 401, 'INVALID_TOKEN');
  });

  it('refresh rotates: a new pair, the old refresh token spent, the session unchanged', async () => {
    const id = await createUser(server, { email: 'refresh@example.com' });
    const session = await signIn(server, 'refresh@example.com', { password: PASSWORD });
    const response = await postJson(server, '/api/auth/refresh', { refreshToken: session.refreshToken });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json();
    assert.deepEqual(Object.keys(body).sort(), ['accessToken', 'expiresIn', 'refreshToken', 'user']);
    assert.equal(body.user.id, id);
    assert.equal(body.expiresIn, ACCESS_TTL);
    assert.notEqual(body.refreshToken, session.refreshToken);
    assert.notEqual(body.accessToken, session.token);
    assert.equal(decodeJwt(body.accessToken).sid, decodeJwt(session.token).sid, 'same session');
    assert.equal(cookie(response, 'access_token')?.value, body.accessToken);
    assert.equal(cookie(response, 'refresh_token')?.value, body.refreshToken);
    assert.equal((await profile({ authorization: `Bearer ${body.accessToken}` })).statusCode, 200);

    const next = await postJson(server, '/api/auth/refresh', { refreshToken: body.refreshToken });
    assert.equal(next.statusCode, 200);
    const stored = await server.database!.db.selectFrom('refresh_tokens').select('token_hash').where('user_id', '=', id).execute();
    for (const row of stored) for (const token of [session.refreshToken, body.refreshToken]) assert.notEqual(row.token_hash, token, 'stored hashed');
  });

  it('refresh reads the refresh_token cookie when the body has none, even with no body at all', async () => {
    await createUser(server, { email: 'refresh-cookie@example.com' });
    const session = await signIn(server, 'refresh-cookie@example.com', { password: PASSWORD });
    const response = await server.app.inject({ method: 'POST', url: '/api/auth/refresh', headers: { cookie: `refresh_token=${session.refreshToken}` } });
    assert.equal(response.statusCode, 200, response.body);
    const again = await server.app.inject({
      method: 'POST',
      url: '/api/auth/refresh',
      headers: { cookie: `refresh_token=${response.json().refreshToken}` },
      payload: {},
    });
    assert.equal(again.statusCode, 200, again.body);
  });

  it('a second use within 10 s gets the same successor, not a fork; a reuse after that ends the whole family', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
    const id = await createUser(server, { email: 'reuse@example.com' });
    const session = await signIn(server, 'reuse@example.com', { password: PASSWORD });
    const refresh = (refreshToken: string) => postJson(server, '/api/auth/refresh', { refreshToken });
    const [first, second] = await Promise.all([refresh(session.refreshToken), refresh(session.refreshToken)]);
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(second.statusCode, 200, second.body);
    const successor = first.json().refreshToken as string;
    assert.equal(second.json().refreshToken, successor, 'two tabs refreshing at once end up with one token');
    assert.equal(cookie(second, 'refresh_token')?.value, successor);
    t.mock.timers.tick(9_000);
    const late = await refresh(session.refreshToken);
    assert.equal(late.statusCode, 200, late.body);
    assert.equal(late.json().refreshToken, successor, 'still the same successor 9 s later');

    const next = await refresh(successor);
    assert.equal(next.statusCode, 200, next.body);
    const latest = next.json();
    const family = await server.database!.db.selectFrom('refresh_tokens').select('token_hash').where('user_id', '=', id).execute();
    assert.equal(family.length, 3, 'one chain of three tokens, no sibling');

    t.mock.timers.tick(10_001);
    assertError(await refresh(successor), 401, 'REFRESH_TOKEN_REUSED');
    assertError(await refresh(session.refreshToken), 401, 'INVALID_TOKEN');
    assertError(await refresh(latest.refreshToken), 401, 'INVALID_TOKEN');
    assertError(await profile({ authorization: `Bearer ${latest.accessToken}` }), 401, 'INVALID_TOKEN');
    assertError(await profile(session.authorization), 401, 'INVALID_TOKEN');
  });

  it('refuses refresh tokens that are missing, unknown, expired, or of an expired account', async (t) => {
    assertError(await postJson(server, '/api/auth/refresh', {}), 401, 'UNAUTHORIZED');
    const unknown = await postJson(server, '/api/auth/refresh', { refreshToken: 'not-a-real-token' });
    assertError(unknown, 401, 'INVALID_TOKEN');
    assert.equal(cookie(unknown, 'refresh_token')?.value, '', 'a refused refresh clears the cookies');
    assert.equal(cookie(unknown, 'signed_in')?.value, '', 'and the web app stops asking for the profile');

    const start = Date.now();
    t.mock.timers.enable({ apis: ['Date'], now: start });
    const id = await createUser(server, { email: 'refresh-expiry@example.com' });
    const session = await signIn(server, 'refresh-expiry@example.com', { password: PASSWORD });
    const other = await signIn(server, 'refresh-expiry@example.com', { password: PASSWORD });
    t.mock.timers.tick(REFRESH_TTL * 1000 + 1);
    assertError(await postJson(server, '/api/auth/refresh', { refreshToken: session.refreshToken }), 401, 'INVALID_TOKEN');

    t.mock.timers.setTime(start);
    await setUser(id, { expiration_time: Date.now() - 1 });
    assertError(await postJson(server, '/api/auth/refresh', { refreshToken: other.refreshToken }), 403, 'ACCOUNT_EXPIRED');
    assertError(await profile(other.authorization), 401, 'INVALID_TOKEN');
  });

  it('an access token stops working when it expires; refresh gives a working one', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
    await createUser(server, { email: 'expiry@example.com' });
    const session = await signIn(server, 'expiry@example.com', { password: PASSWORD });
    assert.equal((await profile(session.authorization)).statusCode, 200);
    t.mock.timers.tick(ACCESS_TTL * 1000 + 1);
    assertError(await profile(session.authorization), 401, 'INVALID_TOKEN');
    assertError(await validate({ cookie: `access_token=${session.token}` }), 401, 'INVALID_TOKEN');
    const refreshed = await postJson(server, '/api/auth/refresh', { refreshToken: session.refreshToken });
    assert.equal(refreshed.statusCode, 200);
    assert.equal((await profile({ authorization: `Bearer ${refreshed.json().accessToken}` })).statusCode, 200);
  });

  it('/validate answers 200 with the user headers for a valid cookie or bearer, never cached', async () => {
    const id = await createUser(server, { email: 'validate@example.com' });
    const session = await signIn(server, 'validate@example.com', { password: PASSWORD });
    for (const headers of [{ cookie: `access_token=${session.token}` }, session.authorization]) {
      for (const method of ['GET', 'HEAD'] as const) {
        const response = await validate(headers, method);
        assert.equal(response.statusCode, 200, `${method} ${response.body}`);
        assert.equal(response.headers['x-user-id'], String(id));
        assert.equal(response.headers['x-user-email'], 'validate@example.com');
        assert.equal(response.headers['cache-control'], 'no-store');
        if (method === 'HEAD') assert.equal(response.body, '');
        else assert.deepEqual(response.json(), { userId: id, email: 'validate@example.com' });
      }
    }
  });

  it('/validate answers 401 without a token, with a bad one, and for an inactive account', async () => {
    const attempts: Record<string, string>[] = [{}, { cookie: 'access_token=garbage' }, { authorization: 'Bearer garbage' }, { 'x-user-id': '1', 'x-user-email': 'a@b.c' }];
    for (const headers of attempts) {
      for (const method of ['GET', 'HEAD'] as const) {
        const response = await validate(headers, method);
        assert.equal(response.statusCode, 401, JSON.stringify(headers));
        assert.equal(response.headers['cache-control'], 'no-store');
        assert.equal(response.headers['x-user-id'], undefined);
      }
    }
    const id = await createUser(server, { email: 'validate-expired@example.com' });
    const session = await signIn(server, 'validate-expired@example.com', { password: PASSWORD });
    await setUser(id, { expiration_time: Date.now() - 1 });
    // The status cache holds an answer for up to 5 s; this user was never validated before.
    assertError(await validate(session.authorization), 401, 'INVALID_TOKEN');
  });

  it('answers bad input with 400 and signs nobody in', async () => {
    await createUser(server, { email: 'bad-input@example.com' });
    const cases: [unknown, string][] = [
      [{ email: 'bad-input@example.com' }, 'VALIDATION_FAILED'],
      [{ password: PASSWORD }, 'VALIDATION_FAILED'],
      [{ email: 42, password: PASSWORD }, 'VALIDATION_FAILED'],
      [{ email: 'bad-input@example.com', password: ['x'] }, 'VALIDATION_FAILED'],
      [{ email: 'not-an-address', password: PASSWORD }, 'VALIDATION_FAILED'],
      [{ email: `${'a'.repeat(250)}@example.com`, password: PASSWORD }, 'VALIDATION_FAILED'],
      [{ email: 'bad-input@example.com', password: 'x'.repeat(1025) }, 'VALIDATION_FAILED'],
      [{ email: 'bad-input@example.com', password: PASSWORD, remember: true }, 'VALIDATION_FAILED'],
      [[], 'VALIDATION_FAILED'],
    ];
    for (const [payload, code] of cases) {
      const response = await postJson(server, '/api/auth/login', payload);
      assertError(response, 400, code);
      assert.equal(cookie(response, 'access_token'), undefined);
    }
    const malformed = await server.app.inject({ method: 'POST', url: '/api/auth/login', headers: { 'content-type': 'application/json' }, payload: '{"email":' });
    assertError(malformed, 400, 'MALFORMED_JSON');
    const sessions = await server.database!.db
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.user_id')
      .select('sessions.id')
      .where('users.email', '=', 'bad-input@example.com')
      .execute();
    assert.equal(sessions.length, 0);
    assertError(await postJson(server, '/api/auth/refresh', { refreshToken: 7 }), 400, 'VALIDATION_FAILED');
    assertError(await postJson(server, '/api/auth/refresh', { refreshToken: 'x'.repeat(513) }), 400, 'VALIDATION_FAILED');
  });
});
