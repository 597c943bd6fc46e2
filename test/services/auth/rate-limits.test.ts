import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { AppError } from '../../../src/platform/http/errors.ts';
import { MemoryRateLimiter, RedisRateLimiter } from '../../../src/platform/rate-limit.ts';
import { ClientHashShares, MAX_HASHES_PER_CLIENT } from '../../../src/services/auth/users/hash-shares.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { TEST_EVENT_CHANNEL, startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { assertError, signIn } from '../../support/api.ts';
import { createUser, login, PASSWORD, postJson, storedUser } from './support/auth.ts';

const REDIS_URL = process.env.TEST_REDIS_URL;
/** Redis counters outlive a test run: every run uses addresses of its own. */
const run = randomBytes(4).toString('hex');
const address = (name: string) => `${name}-${run}@limits.example`;

function assertLimited(response: Awaited<ReturnType<TestServer['app']['inject']>>, maxSeconds: number): void {
  assertError(response, 429, 'RATE_LIMITED');
  const retryAfter = Number(response.headers['retry-after']);
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= maxSeconds, `Retry-After ${response.headers['retry-after']}`);
}

describe('rate limiter stores', () => {
  it('memory: counts per rule and key within a fixed window', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
    const limiter = new MemoryRateLimiter();
    const rule = { name: 'unit', limit: 2, windowSeconds: 10 };
    assert.equal((await limiter.hit(rule, 'a')).allowed, true);
    assert.equal((await limiter.hit(rule, 'a')).allowed, true);
    t.mock.timers.tick(4000);
    assert.deepEqual(await limiter.hit(rule, 'a'), { allowed: false, retryAfterMs: 6000 });
    assert.equal((await limiter.hit(rule, 'b')).allowed, true, 'keys are separate');
    assert.equal((await limiter.hit({ ...rule, name: 'other' }, 'a')).allowed, true, 'rules are separate');
    t.mock.timers.tick(6000);
    assert.equal((await limiter.hit(rule, 'a')).allowed, true, 'a new window');
  });

  it('redis: the same, shared by every limiter on the server', { skip: REDIS_URL ? false : 'TEST_REDIS_URL not set' }, async () => {
    const connections = [new Redis(REDIS_URL as string), new Redis(REDIS_URL as string)];
    try {
      const [one, two] = connections.map((connection) => new RedisRateLimiter(connection, `deployment-${run}`)) as [RedisRateLimiter, RedisRateLimiter];
      const rule = { name: `unit-${run}`, limit: 2, windowSeconds: 5 };
      assert.equal((await one.hit(rule, 'a')).allowed, true);
      assert.equal((await two.hit(rule, 'a')).allowed, true);
      const refused = await one.hit(rule, 'a');
      assert.equal(refused.allowed, false);
      assert.ok(refused.retryAfterMs > 0 && refused.retryAfterMs <= 5000);
      assert.equal((await two.hit(rule, 'b')).allowed, true);
      const keys = await connections[0]!.keys(`deployment-${run}:rate:unit-${run}:*`);
      assert.equal(keys.length, 2, 'one counter per key, under the deployment namespace');
      assert.ok(keys.every((key) => !key.includes(':a') && !key.includes(':b')), 'keys are digests');
      assert.ok((await connections[0]!.pttl(keys[0] as string)) > 0, 'every counter expires');
    } finally {
      await Promise.all(connections.map((connection) => connection.quit()));
    }
  });

  it('redis: deployments sharing a Redis count apart', { skip: REDIS_URL ? false : 'TEST_REDIS_URL not set' }, async () => {
    const connection = new Redis(REDIS_URL as string);
    try {
      const production = new RedisRateLimiter(connection, `production-${run}`);
      const staging = new RedisRateLimiter(connection, `staging-${run}`);
      const rule = { name: 'login', limit: 1, windowSeconds: 5 };
      assert.equal((await production.hit(rule, 'same-ip')).allowed, true);
      assert.equal((await production.hit(rule, 'same-ip')).allowed, false);
      assert.equal((await staging.hit(rule, 'same-ip')).allowed, true, 'the other deployment has a counter of its own');
    } finally {
      await connection.quit();
    }
  });
});

describe('password-check shares per client', () => {
  it('lets a client hold two checks at once, refuses a third with 429 and Retry-After, and forgets clients that are done', () => {
    const shares = new ClientHashShares(MAX_HASHES_PER_CLIENT);
    const first = shares.take('10.9.0.1');
    const second = shares.take('10.9.0.1');
    assert.throws(
      () => shares.take('10.9.0.1'),
      (error: unknown) => error instanceof AppError && error.code === 'RATE_LIMITED' && error.headers?.['retry-after'] === '1',
    );
    const other = shares.take('10.9.0.2');
    first();
    shares.take('10.9.0.1')();
    second();
    other();
    assert.equal(shares.clients, 0);
    const unlimited = new ClientHashShares(Infinity);
    for (let i = 0; i < 50; i++) unlimited.take('10.9.0.3');
  });
});

describeEachEngine('auth rate limits', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'on' });
  });
  after(() => server.dispose());

  it('login: 10 per minute per client and address, then 429 with Retry-After; other pairs unaffected', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
    const email = address('login');
    await createUser(server, { email });
    for (let i = 0; i < 10; i++) assert.notEqual((await login(server, email, i === 9 ? PASSWORD : 'Wrong-Password-1')).statusCode, 429);
    assertLimited(await login(server, email), 60);
    assert.equal((await login(server, email, PASSWORD, {})).statusCode, 429, 'even with the right password');
    assert.equal((await server.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email, password: PASSWORD }, remoteAddress: '10.0.0.9' })).statusCode, 200, 'another client');
    assertError(await login(server, address('login-other')), 401, 'INVALID_CREDENTIALS');
    // Without TRUST_PROXY a client cannot pick its address with X-Forwarded-For.
    assertLimited(await login(server, email, PASSWORD, { 'x-forwarded-for': '203.0.113.7' }), 60);
    t.mock.timers.tick(60_000);
    assert.equal((await login(server, email)).statusCode, 200, 'the next window');
  });

  it('login: 100 per minute per client across addresses (password spraying)', async () => {
    const remoteAddress = '10.3.0.1';
    const attempt = (email: string, from = remoteAddress) =>
      server.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email, password: 'Common-Password-1' }, remoteAddress: from });
    // Two addresses, 50 tries each: every try counts for the client, also those its address limit refused.
    const statuses: number[] = [];
    for (let i = 0; i < 100; i++) statuses.push((await attempt(address(`spray-${i % 2}`))).statusCode);
    assert.deepEqual([statuses.filter((status) => status === 401).length, statuses.filter((status) => status === 429).length], [20, 80]);
    assertLimited(await attempt(address('spray-fresh')), 60);
    const email = address('spray-victim');
    await createUser(server, { email });
    assertLimited(await server.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email, password: PASSWORD }, remoteAddress }), 60);
    assert.equal((await attempt(address('spray-fresh'), '10.3.0.2')).statusCode, 401, 'another client is not affected');
  });

  it('login: a client gets two password checks at a time; parallel extras answer 429, another client is not refused', async () => {
    const email = address('parallel');
    await createUser(server, { email });
    const attempt = (remoteAddress: string) =>
      server.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email, password: 'Wrong-Password-1' }, remoteAddress });
    const [mine, other] = await Promise.all([Promise.all([1, 2, 3, 4, 5].map(() => attempt('10.4.0.1'))), attempt('10.4.0.2')]);
    const refused = mine.filter((response) => response.statusCode === 429);
    assert.equal(refused.length, 3);
    for (const response of refused) {
      assertError(response, 429, 'RATE_LIMITED');
      assert.equal(response.headers['retry-after'], '1');
    }
    assert.equal(mine.filter((response) => response.statusCode === 401).length, 2);
    assertError(other, 401, 'INVALID_CREDENTIALS');
    assertError(await attempt('10.4.0.1'), 401, 'INVALID_CREDENTIALS');
  });

  it('register: 5 per minute per client', async () => {
    const register = (email: string, remoteAddress = '10.1.0.1') =>
      server.app.inject({ method: 'POST', url: '/api/auth/register', payload: { email, password: PASSWORD, name: 'x', termsPrivacyAccepted: true }, remoteAddress });
    for (let i = 0; i < 5; i++) assert.equal((await register(address(`register-${i}`))).statusCode, 201);
    assertLimited(await register(address('register-5')), 60);
    assert.equal(await storedUser(server, address('register-5')), undefined);
    assert.equal((await register(address('register-6'), '10.1.0.2')).statusCode, 201);
  });

  it('password reset: 5 mails per address per hour, silently', async () => {
    const email = address('reset');
    const id = await createUser(server, { email });
    const answers = new Set<string>();
    for (let i = 0; i < 7; i++) {
      const response = await postJson(server, '/api/auth/password/reset', { email });
      assert.equal(response.statusCode, 200);
      answers.add(response.body);
    }
    assert.equal(answers.size, 1);
    await server.auth!.mailSettled();
    const issued = await server.database!.db.selectFrom('one_time_tokens').select('token_hash').where('user_id', '=', id).where('purpose', '=', 'password_reset').execute();
    assert.equal(issued.length, 5);
  });

  it('resend: 5 mails per address per hour, silently, beside the 30 s cooldown', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
    const email = address('resend');
    const id = await createUser(server, { email, verified: false });
    for (let i = 0; i < 7; i++) {
      assert.equal((await postJson(server, '/api/auth/resend-verification', { email })).statusCode, 200);
      await server.auth!.mailSettled();
      t.mock.timers.tick(30_000);
    }
    const issued = await server.database!.db.selectFrom('one_time_tokens').select('token_hash').where('user_id', '=', id).where('purpose', '=', 'email_verification').execute();
    assert.equal(issued.length, 5);
  });

  it('verify-code: 30 per minute per client', async () => {
    const email = address('verify-code');
    for (let i = 0; i < 30; i++) {
      const response = await server.app.inject({ method: 'POST', url: '/api/auth/verify-code', payload: { email, code: '123456' }, remoteAddress: '10.2.0.1' });
      assertError(response, 400, 'INVALID_VERIFICATION_CODE');
    }
    assertLimited(await server.app.inject({ method: 'POST', url: '/api/auth/verify-code', payload: { email, code: '123456' }, remoteAddress: '10.2.0.1' }), 60);
  });

  it('second-factor codes: 10 per 5 minutes per user; change-password: 10 per 10 minutes per user', async () => {
    const email = address('two-factor');
    await createUser(server, { email });
    const session = await signIn(server, email, { password: PASSWORD });
    await server.app.inject({ method: 'POST', url: '/api/auth/2fa/setup', headers: session.authorization });
    for (let i = 0; i < 10; i++) {
      assertError(await server.app.inject({ method: 'POST', url: '/api/auth/2fa/verify', headers: session.authorization, payload: { code: '000000' } }), 400, 'INVALID_2FA_CODE');
    }
    assertLimited(await server.app.inject({ method: 'POST', url: '/api/auth/2fa/verify', headers: session.authorization, payload: { code: '000000' } }), 300);

    for (let i = 0; i < 10; i++) {
      const response = await server.app.inject({ method: 'POST', url: '/api/auth/change-password', headers: session.authorization, payload: { currentPassword: 'Wrong-Password-1', newPassword: 'Whatever-Pass-1' } });
      assertError(response, 400, 'INVALID_CURRENT_PASSWORD');
    }
    const limited = await server.app.inject({ method: 'POST', url: '/api/auth/change-password', headers: session.authorization, payload: { currentPassword: PASSWORD, newPassword: 'Whatever-Pass-1' } });
    assertLimited(limited, 600);
    assert.equal((await login(server, email)).statusCode, 200, 'the refused change changed nothing');
  });
});

describeEachEngine('auth rate limits behind a trusted proxy', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'on', TRUST_PROXY: '127.0.0.1' });
  });
  after(() => server.dispose());

  it('counts per client address from X-Forwarded-For when the proxy is trusted', async () => {
    const email = address('proxied');
    await createUser(server, { email });
    for (let i = 0; i < 10; i++) await login(server, email, 'Wrong-Password-1', { 'x-forwarded-for': '198.51.100.1' });
    assertLimited(await login(server, email, PASSWORD, { 'x-forwarded-for': '198.51.100.1' }), 60);
    assert.equal((await login(server, email, PASSWORD, { 'x-forwarded-for': '198.51.100.2' })).statusCode, 200);
    // An untrusted peer's header is ignored: it is counted as itself.
    const direct = await server.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email, password: PASSWORD }, remoteAddress: '192.0.2.50', headers: { 'x-forwarded-for': '198.51.100.3' } });
    assert.equal(direct.statusCode, 200);
  });
});

describeEachEngine('auth rate limits shared through Redis', (engine) => {
  const servers: TestServer[] = [];
  before(async () => {
    if (!REDIS_URL) return;
    for (let i = 0; i < 2; i++) servers.push(await startTestServer(engine, { RATE_LIMITS: 'on', REDIS_URL }));
  });
  after(() => Promise.all(servers.map((server) => server.dispose())));

  it('two instances count the same login attempts', { skip: REDIS_URL ? false : 'TEST_REDIS_URL not set' }, async () => {
    const [one, two] = servers as [TestServer, TestServer];
    const email = address(`shared-${engine.name}`);
    await createUser(one, { email });
    for (let i = 0; i < 10; i++) assertError(await login(i % 2 === 0 ? one : two, email, 'Wrong-Password-1'), 401, 'INVALID_CREDENTIALS');
    assertLimited(await login(one, email), 60);
    assertLimited(await login(two, email), 60);
    const connection = new Redis(REDIS_URL as string);
    try {
      const counters = await connection.keys(`${TEST_EVENT_CHANNEL}:rate:*`);
      assert.ok(counters.length > 0, 'the counters live under this deployment\'s EVENT_CHANNEL');
    } finally {
      await connection.quit();
    }
  });
});
