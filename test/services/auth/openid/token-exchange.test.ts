import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { generateKeyPair, SignJWT } from 'jose';
import { describeEachEngine } from '../../../support/engines.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestServer } from '../../../support/server.ts';
import { assertError, signIn } from '../../../support/api.ts';
import { cookie, createUser, PASSWORD, postJson, totpAt } from '../support/auth.ts';
import { JwksIssuer, KEY_ID } from './support/jwks-issuer.ts';

const ANDROID = 'android-client.apps.example.com';
const IOS = 'ios-client.apps.example.com';

describeEachEngine('social login: the mobile Google id_token exchange (POST /openid/token)', (engine) => {
  let issuer: JwksIssuer;
  let server: TestServer;
  before(async () => {
    issuer = await JwksIssuer.start();
    // Mobile only: audiences, no web client secret.
    server = await startTestServer(engine, { RATE_LIMITS: 'off', OIDC_GOOGLE_ISSUER: issuer.issuer, OIDC_GOOGLE_AUDIENCES: `${ANDROID}, ${IOS}` });
  });
  after(async () => {
    await server.dispose();
    await issuer.close();
  });

  const exchange = (payload: unknown) => postJson(server, '/api/auth/openid/token', payload);
  const google = async (claims: Record<string, unknown>, options?: Parameters<JwksIssuer['sign']>[1]) =>
    exchange({ provider: 'google', id_token: await issuer.sign({ aud: IOS, email_verified: true, ...claims }, options) });
  const userCount = async () => Number((await server.database!.db.selectFrom('users').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);

  /** Asserts the refusal and that it made no account and set no cookie. */
  async function refused(response: Awaited<ReturnType<typeof exchange>>, status: number, code: string, usersBefore: number) {
    assertError(response, status, code);
    assert.equal(cookie(response, 'access_token'), undefined);
    assert.equal(await userCount(), usersBefore);
  }

  it('a valid id_token signs a new user up: 200 with tokens, cookies and the user; the same sub signs in again', async () => {
    const response = await google({ sub: 'm-100', email: 'Mobile@Example.com', name: 'Mo Bile' });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json();
    assert.deepEqual(Object.keys(body).sort(), ['accessToken', 'expiresIn', 'refreshToken', 'user']);
    assert.equal(body.user.email, 'mobile@example.com');
    assert.equal(body.user.attributes.emailVerified, true);
    assert.equal(body.user.attributes.termsAcceptedVersion, undefined);
    assert.equal(cookie(response, 'access_token')?.value, body.accessToken);
    const me = await server.app.inject({ method: 'GET', url: '/api/auth/profile', headers: { authorization: `Bearer ${body.accessToken}` } });
    assert.equal(me.json().id, body.user.id);
    const refreshed = await postJson(server, '/api/auth/refresh', { refreshToken: body.refreshToken });
    assert.equal(refreshed.statusCode, 200, refreshed.body);

    const android = await exchange({ provider: 'google', id_token: await issuer.sign({ aud: ANDROID, sub: 'm-100', email: 'other@example.com', email_verified: true }) });
    assert.equal(android.statusCode, 200, android.body);
    assert.equal(android.json().user.id, body.user.id);
  });

  it('links an existing verified account; refuses an unverified one with 409 OPENID_ACCOUNT_EXISTS', async () => {
    const id = await createUser(server, { email: 'existing@example.com' });
    const linked = await google({ sub: 'm-101', email: 'existing@example.com' });
    assert.equal(linked.statusCode, 200, linked.body);
    assert.equal(linked.json().user.id, id);

    await createUser(server, { email: 'pending@example.com', verified: false });
    await refused(await google({ sub: 'm-102', email: 'pending@example.com' }), 409, 'OPENID_ACCOUNT_EXISTS', await userCount());
  });

  it('a 2FA user gets the 202 Login2FARequiredResponse, as on /login', async () => {
    await createUser(server, { email: 'mobile-2fa@example.com' });
    const session = await signIn(server, 'mobile-2fa@example.com', { password: PASSWORD });
    const setup = (await server.app.inject({ method: 'POST', url: '/api/auth/2fa/setup', headers: session.authorization })).json();
    const verified = await server.app.inject({ method: 'POST', url: '/api/auth/2fa/verify', headers: session.authorization, payload: { code: totpAt(setup.secret, Date.now()) } });
    assert.equal(verified.statusCode, 200, verified.body);

    const response = await google({ sub: 'm-103', email: 'mobile-2fa@example.com' });
    assert.equal(response.statusCode, 202, response.body);
    const body = response.json();
    assert.equal(body.require_2fa, true);
    assert.equal(body.type, 'totp');
    assert.equal(typeof body.message, 'string');
    assert.equal(cookie(response, 'access_token'), undefined);
    const completed = await postJson(server, '/api/auth/2fa/login', { temp_token: body.temp_token, code: verified.json().backup_codes[0] });
    assert.equal(completed.statusCode, 200, completed.body);
  });

  it('refuses bad id_tokens with 401 and a code per check, creating nothing', async () => {
    const before = await userCount();
    const claims = { sub: 'm-bad', email: 'bad@example.com' };
    await refused(await google({ ...claims, aud: 'someone-elses-client' }), 401, 'ID_TOKEN_WRONG_AUDIENCE', before);
    await refused(await google({ ...claims, iss: 'https://accounts.example.net' }), 401, 'ID_TOKEN_WRONG_ISSUER', before);
    const now = Math.floor(Date.now() / 1000);
    await refused(await google({ ...claims, iat: now - 7200, exp: now - 3600 }), 401, 'ID_TOKEN_EXPIRED', before);
    await refused(await google({ ...claims, email_verified: false }), 401, 'ID_TOKEN_EMAIL_UNVERIFIED', before);
    await refused(await google({ sub: 'm-bad' }), 401, 'ID_TOKEN_EMAIL_UNVERIFIED', before);

    const { privateKey: otherKey } = await generateKeyPair('RS256');
    await refused(await google(claims, { key: otherKey }), 401, 'ID_TOKEN_INVALID', before);
    await refused(await google(claims, { key: otherKey, kid: 'unknown-key' }), 401, 'ID_TOKEN_INVALID', before);
    const symmetric = await new SignJWT({ ...claims, iss: issuer.issuer, aud: IOS, email_verified: true })
      .setProtectedHeader({ alg: 'HS256', kid: KEY_ID })
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode('a-guessable-shared-secret-of-32-bytes'));
    await refused(await exchange({ provider: 'google', id_token: symmetric }), 401, 'ID_TOKEN_INVALID', before);
    const unsigned = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ ...claims, iss: issuer.issuer, aud: IOS })).toString('base64url')}.`;
    await refused(await exchange({ provider: 'google', id_token: unsigned }), 401, 'ID_TOKEN_INVALID', before);
    await refused(await exchange({ provider: 'google', id_token: 'not-a-jwt' }), 401, 'ID_TOKEN_INVALID', before);
  });

  it('refuses other providers and disabled accounts', async () => {
    const before = await userCount();
    const token = await issuer.sign({ aud: IOS, sub: 'm-104', email: 'elsewhere@example.com', email_verified: true });
    for (const provider of ['apple', 'facebook', 'Google']) {
      await refused(await exchange({ provider, id_token: token }), 400, 'OPENID_PROVIDER_UNSUPPORTED', before);
    }
    const id = await createUser(server, { email: 'blocked@example.com' });
    await server.database!.db.updateTable('users').set({ disabled: 1 }).where('id', '=', id).execute();
    await refused(await google({ sub: 'm-105', email: 'blocked@example.com' }), 403, 'ACCOUNT_DISABLED', before + 1);
  });

  it('refuses malformed bodies with 400 VALIDATION_FAILED, creating nothing', async () => {
    const before = await userCount();
    const token = await issuer.sign({ aud: IOS, sub: 'm-106', email: 'malformed@example.com', email_verified: true });
    for (const payload of [
      {},
      { provider: 'google' },
      { id_token: token },
      { provider: 'google', id_token: token, extra: 1 },
      { provider: 'google', id_token: 42 },
      { provider: ['google'], id_token: token },
      { provider: 'google', id_token: '' },
      { provider: 'google', id_token: 'x'.repeat(8193) },
      { provider: 'g'.repeat(33), id_token: token },
    ]) {
      await refused(await exchange(payload), 400, 'VALIDATION_FAILED', before);
    }
  });

  it('the web redirect flow needs the client secret: 400 without it', async () => {
    assertError(await server.app.inject({ method: 'GET', url: '/api/auth/openid/auth?provider=google' }), 400, 'OPENID_PROVIDER_NOT_CONFIGURED');
  });
});

describeEachEngine('social login: the id_token exchange when the issuer is unreachable, and its rate limit', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine, { OIDC_GOOGLE_ISSUER: 'http://127.0.0.1:9', OIDC_GOOGLE_AUDIENCES: IOS });
  });
  after(() => server.dispose());

  it('answers 502 UPSTREAM_UNAVAILABLE when the keys cannot be fetched', async () => {
    assertError(await postJson(server, '/api/auth/openid/token', { provider: 'google', id_token: 'a.b.c' }), 502, 'UPSTREAM_UNAVAILABLE');
  });

  it('allows 30 exchanges a minute per client IP, then 429 with Retry-After', async () => {
    const from = (remoteAddress: string, provider: string) =>
      server.app.inject({ method: 'POST', url: '/api/auth/openid/token', remoteAddress, payload: { provider, id_token: 'a.b.c' } });
    for (let attempt = 0; attempt < 30; attempt += 1) assertError(await from('192.0.2.7', 'apple'), 400, 'OPENID_PROVIDER_UNSUPPORTED');
    const limited = await from('192.0.2.7', 'google');
    assertError(limited, 429, 'RATE_LIMITED');
    assert.ok(Number(limited.headers['retry-after']) > 0);
    assertError(await from('192.0.2.8', 'apple'), 400, 'OPENID_PROVIDER_UNSUPPORTED');
  });
});
