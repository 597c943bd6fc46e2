import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import { decodeJwt } from 'jose';
import { ApiError, AuthClient, LoggedOutError, MemoryTokenStore } from '../../src/client/index.ts';
import type { StoredTokens } from '../../src/client/index.ts';
import { AccessTokenIssuer } from '../../src/services/auth/tokens/access-tokens.ts';
import { describeEachEngine } from '../support/engines.ts';
import { eventually } from '../support/eventually.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { Mailbox } from '../services/auth/support/mailbox.ts';

const PASSWORD = 'Sturdy-Lantern-42';

interface Call {
  method: string;
  path: string;
  authorization: string | undefined;
  retry: string | undefined;
}

interface Interposer {
  /** Changes a request on its way, e.g. to make the server refuse it. */
  request?(call: Call, headers: Headers): void;
  /** Changes an answer on its way back. */
  response?(call: Call, response: Response): Promise<Response>;
}

/** The real global fetch, recording each call; optional changes simulate what a test needs of the wire. */
function recordingFetch(interposer: Interposer = {}) {
  const calls: Call[] = [];
  const fetchImpl: typeof fetch = async (input, init) => {
    const url = new URL(String(input));
    const headers = new Headers(init?.headers);
    const call: Call = {
      method: init?.method ?? 'GET',
      path: url.pathname + url.search,
      authorization: headers.get('authorization') ?? undefined,
      retry: headers.get('authorization-retry') ?? undefined,
    };
    calls.push(call);
    interposer.request?.(call, headers);
    const response = await fetch(input, { ...init, headers });
    return interposer.response ? interposer.response(call, response) : response;
  };
  return { calls, fetchImpl };
}

async function listen(server: TestServer): Promise<string> {
  await server.app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(server.app.server.address() as AddressInfo).port}`;
}

describeEachEngine('client SDK against the real server', (engine) => {
  let server: TestServer;
  let baseUrl: string;
  let mailbox: Mailbox;
  before(async () => {
    mailbox = await Mailbox.start();
    server = await startTestServer(engine, { RATE_LIMITS: 'off', SMTP_URL: mailbox.url });
    baseUrl = await listen(server);
  });
  after(async () => {
    await server.dispose();
    await mailbox.close();
  });

  const account = async (target: TestServer, email: string) =>
    (await target.auth!.api.accounts.create({ email, password: PASSWORD, emailVerified: true })).id;
  /** A signed-in client whose access token the server will refuse (a revoked session's), beside a valid refresh token. */
  async function clientWithRefusedAccessToken(email: string, interposer?: Interposer) {
    const userId = await account(server, email);
    const stale = await server.login({ email });
    await server.auth!.api.sessions.revoke(stale.sessionId);
    const store = new MemoryTokenStore();
    const recorder = recordingFetch(interposer);
    const client = new AuthClient({ baseUrl, store, fetch: recorder.fetchImpl });
    assert.equal((await client.login(email, PASSWORD)).kind, 'signed-in');
    const refreshToken = store.load()?.refreshToken;
    store.save({ accessToken: stale.token, refreshToken });
    recorder.calls.length = 0;
    return { client, store, calls: recorder.calls, userId, refreshToken };
  }

  it('logs in, keeps the tokens, reads the claims, and sends no Authorization header to public paths', async () => {
    const userId = await account(server, 'client-login@example.com');
    const { calls, fetchImpl } = recordingFetch();
    const client = new AuthClient({ baseUrl: `${baseUrl}/`, fetch: fetchImpl });
    const result = await client.login('client-login@example.com', PASSWORD);
    assert.equal(result.kind, 'signed-in');
    assert.equal(result.kind === 'signed-in' && result.user.id, userId);
    assert.equal(result.kind === 'signed-in' && result.expiresIn, 3600);
    assert.deepEqual({ ...(await client.claims()), exp: 0 }, { userId, email: 'client-login@example.com', exp: 0 });
    assert.equal(await client.isExpiringSoon(), false);
    assert.equal((await client.profile()).id, userId);
    assert.equal((await client.legalDocument('terms')).type, 'terms');
    assert.equal((await client.requestPasswordReset('client-login@example.com')).message, 'If email exists, reset link sent');
    assert.deepEqual(
      calls.map((call) => [call.method, call.path, call.authorization === undefined]),
      [
        ['POST', '/api/auth/login', true],
        ['GET', '/api/auth/profile', false],
        ['GET', '/api/legal/terms', true],
        ['POST', '/api/auth/password/reset', true],
      ],
    );
  });

  it('reports errors with their code and never refreshes on a public path', async () => {
    await account(server, 'client-errors@example.com');
    const { calls, fetchImpl } = recordingFetch();
    const client = new AuthClient({ baseUrl, fetch: fetchImpl });
    await assert.rejects(client.login('client-errors@example.com', 'Wrong-Password-1'), (error: ApiError) => {
      assert.ok(error instanceof ApiError);
      assert.equal(error.status, 401);
      assert.equal(error.code, 'INVALID_CREDENTIALS');
      return true;
    });
    assert.deepEqual(calls.map((call) => call.path), ['/api/auth/login']);
    await client.login('client-errors@example.com', PASSWORD);
    await assert.rejects(client.updateProfile({ timezone: 'Nowhere/Else' }), (error: ApiError) => error.status === 400 && error.code === 'VALIDATION_FAILED');
  });

  it('on a 401: one refresh, then the request once more marked Authorization-Retry', async () => {
    const { client, store, calls, userId, refreshToken } = await clientWithRefusedAccessToken('client-refresh@example.com');
    assert.equal((await client.profile()).id, userId);
    assert.deepEqual(
      calls.map((call) => [call.method, call.path, call.retry]),
      [
        ['GET', '/api/auth/profile', undefined],
        ['POST', '/api/auth/refresh', undefined],
        ['GET', '/api/auth/profile', 'true'],
      ],
    );
    assert.equal(calls[1]?.authorization, undefined, 'refresh carries no Authorization header');
    const stored = store.load();
    assert.equal(calls[2]?.authorization, `Bearer ${stored?.accessToken}`);
    assert.notEqual(stored?.refreshToken, refreshToken, 'the rotated refresh token is kept');
  });

  it('keeps the old refresh token when the refresh answer carries none', async () => {
    const { client, store, refreshToken } = await clientWithRefusedAccessToken('client-keep@example.com', {
      async response(call, response) {
        if (call.path !== '/api/auth/refresh' || response.status !== 200) return response;
        const { refreshToken: _dropped, ...rest } = (await response.json()) as Record<string, unknown>;
        return new Response(JSON.stringify(rest), { status: 200, headers: { 'content-type': 'application/json' } });
      },
    });
    await client.profile();
    assert.equal(store.load()?.refreshToken, refreshToken);
  });

  it('a second 401 ends the attempts, keeping the tokens', async () => {
    const { client, store, calls } = await clientWithRefusedAccessToken('client-second-401@example.com', {
      request(call, headers) {
        if (call.retry) headers.delete('authorization');
      },
    });
    await assert.rejects(client.profile(), (error: ApiError) => !(error instanceof LoggedOutError) && error.status === 401);
    assert.deepEqual(calls.map((call) => call.path), ['/api/auth/profile', '/api/auth/refresh', '/api/auth/profile']);
    assert.ok(store.load()?.accessToken);
  });

  it('a refused refresh drops the tokens and reports logged-out', async () => {
    const userId = await account(server, 'client-refused@example.com');
    let loggedOut = 0;
    const { calls, fetchImpl } = recordingFetch();
    const client = new AuthClient({ baseUrl, fetch: fetchImpl, onLoggedOut: () => loggedOut++ });
    await client.login('client-refused@example.com', PASSWORD);
    await server.auth!.api.sessions.revokeAllOfUser(userId);
    await assert.rejects(client.profile(), (error: LoggedOutError) => error instanceof LoggedOutError && error.code === 'INVALID_TOKEN');
    assert.equal(loggedOut, 1);
    assert.equal(await client.isLoggedIn(), false);
    assert.deepEqual(calls.slice(1).map((call) => call.path), ['/api/auth/profile', '/api/auth/refresh']);
  });

  it('concurrent 401s share one refresh', async () => {
    const { client, calls, userId } = await clientWithRefusedAccessToken('client-concurrent@example.com');
    const profiles = await Promise.all([client.profile(), client.profile(), client.profile()]);
    assert.ok(profiles.every((profile) => profile.id === userId));
    assert.equal(calls.filter((call) => call.path === '/api/auth/refresh').length, 1);
    assert.equal(calls.filter((call) => call.retry === 'true').length, 3);
  });

  it('does not refresh ahead of expiry; refreshes once the token has expired', async () => {
    const userId = await account(server, 'client-expiry@example.com');
    const store = new MemoryTokenStore();
    const { calls, fetchImpl } = recordingFetch();
    const client = new AuthClient({ baseUrl, store, fetch: fetchImpl });
    await client.login('client-expiry@example.com', PASSWORD);
    // Access tokens of the same session that the server signs as it would have a while ago, instead of waiting for one to expire.
    const signedIn = store.load() as StoredTokens;
    const subject = { userId, email: 'client-expiry@example.com', sessionId: decodeJwt(signedIn.accessToken).sid as string };
    const { signingKey } = server.auth!.api;
    const issuedAgo = (ttlSeconds: number, ageSeconds: number) =>
      new AccessTokenIssuer(signingKey.privateKey, server.config.publicUrl, ttlSeconds, () => Date.now() - ageSeconds * 1000).issue(subject);
    store.save({ ...signedIn, accessToken: await issuedAgo(600, 540) });
    assert.equal(await client.isExpiringSoon(), true, 'a token with a minute left is within the 300 s window');
    assert.equal((await client.profile()).id, userId);
    assert.deepEqual(calls.map((call) => call.path), ['/api/auth/login', '/api/auth/profile']);
    store.save({ ...signedIn, accessToken: await issuedAgo(600, 660) });
    assert.equal((await client.profile()).id, userId);
    assert.deepEqual(calls.slice(2).map((call) => [call.path, call.retry]), [
      ['/api/auth/profile', undefined],
      ['/api/auth/refresh', undefined],
      ['/api/auth/profile', 'true'],
    ]);
  });

  it('completes a two-factor sign-in and keeps the tokens the server set as cookies', async () => {
    await account(server, 'client-2fa@example.com');
    const client = new AuthClient({ baseUrl });
    await client.login('client-2fa@example.com', PASSWORD);
    const setup = await client.twoFactorSetup();
    const { TOTP, Secret } = await import('otpauth');
    const code = TOTP.generate({ secret: Secret.fromBase32(setup.secret), algorithm: 'SHA1', digits: 6, period: 30 });
    const { backup_codes: codes } = await client.twoFactorVerify(code);
    await client.logout();
    assert.equal(await client.isLoggedIn(), false);

    const step = await client.login('client-2fa@example.com', PASSWORD);
    assert.equal(step.kind, 'two-factor');
    assert.equal(await client.isLoggedIn(), false);
    const user = await client.completeTwoFactor(step.kind === 'two-factor' ? step.tempToken : '', codes[0] as string);
    assert.equal(user.attributes.twoFactorEnabled, true);
    assert.equal((await client.profile()).id, user.id);
    assert.equal((await client.twoFactorRegenerate()).backup_codes.length, 10);
  });

  it('e-mail as the second factor: setup, a sign-in of type email with a resent code, and codes for regenerate and disable', async () => {
    const email = 'client-email-2fa@example.com';
    await account(server, email);
    const mailedCode = async (count: number) => /Your code: (\d{6})/.exec((await mailbox.waitFor(email, count)).text)?.[1] as string;
    const client = new AuthClient({ baseUrl });
    await client.login(email, PASSWORD);
    await client.twoFactorEmailSetup();
    assert.equal((await client.twoFactorEmailVerify(await mailedCode(1))).backup_codes.length, 10);
    await client.logout();

    const step = await client.login(email, PASSWORD);
    assert.ok(step.kind === 'two-factor');
    assert.equal(step.type, 'email');
    await mailbox.waitFor(email, 2);
    assert.equal(typeof (await client.resendTwoFactorCode(step.tempToken)).message, 'string');
    const user = await client.completeTwoFactor(step.tempToken, await mailedCode(2));
    assert.equal(user.attributes.twoFactorEnabled, true);

    await client.twoFactorEmailCode();
    assert.equal((await client.twoFactorRegenerate(await mailedCode(3))).backup_codes.length, 10);
    await assert.rejects(client.twoFactorDisable('000000'), (error: ApiError) => error.code === 'INVALID_2FA_CODE');
    assert.equal((await client.profile()).attributes.twoFactorEnabled, true);
  });

  it('logout and account deletion drop the tokens; later calls report logged-out', async () => {
    await account(server, 'client-leave@example.com');
    const client = new AuthClient({ baseUrl });
    await client.login('client-leave@example.com', PASSWORD);
    assert.equal((await client.updateProfile({ name: 'Leaving' })).name, 'Leaving');
    await client.deleteAccount();
    assert.equal(await client.isLoggedIn(), false);
    await assert.rejects(client.profile(), LoggedOutError);
    await assert.rejects(client.login('client-leave@example.com', PASSWORD), (error: ApiError) => error.code === 'INVALID_CREDENTIALS');
  });

  it('an administrator lists dead letters and asks for a retry; others are refused', async () => {
    const at = Date.now();
    await server.database!.db
      .insertInto('dead_letters')
      .values({ queue: 'outbox', consumer: 'devices', topic: 'auth.user.deleted', source_id: null, payload: '{"userId":424242}', attempts: 20, last_error: 'refused', created_at: at, failed_at: at, retry_requested_at: null })
      .execute();
    await server.auth!.api.accounts.create({ email: 'client-admin@example.com', password: PASSWORD, emailVerified: true, administrator: true });
    const admin = new AuthClient({ baseUrl });
    await admin.login('client-admin@example.com', PASSWORD);
    const page = await admin.listDeadLetters({ consumer: 'devices', limit: 10 });
    assert.deepEqual([page.total, page.page, page.limit], [1, 1, 10]);
    const [letter] = page.deadLetters;
    assert.deepEqual([letter!.topic, letter!.payload, letter!.attempts, letter!.lastError], ['auth.user.deleted', '{"userId":424242}', 20, 'refused']);

    await account(server, 'client-not-admin@example.com');
    const member = new AuthClient({ baseUrl });
    await member.login('client-not-admin@example.com', PASSWORD);
    await assert.rejects(member.listDeadLetters(), (error: ApiError) => error.status === 403 && error.code === 'FORBIDDEN');
    await assert.rejects(member.retryDeadLetter(letter!.id), (error: ApiError) => error.code === 'FORBIDDEN');

    assert.equal((await admin.retryDeadLetter(letter!.id)).id, letter!.id);
    await eventually(async () => (await admin.listDeadLetters()).total === 0, 'the outbox took the letter back');
    await assert.rejects(admin.retryDeadLetter(letter!.id), (error: ApiError) => error.status === 404 && error.code === 'DEAD_LETTER_NOT_FOUND');
  });
});
