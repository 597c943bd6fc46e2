import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import cookie from '@fastify/cookie';
import { createHttpApp } from '../../src/platform/http/app.ts';
import type { HttpApp } from '../../src/platform/http/app.ts';
import { IDENTITY_HEADERS, installIdentity } from '../../src/platform/http/identity.ts';
import { installAuthentication } from '../../src/gateway/authenticate.ts';
import { AccessTokenVerifier } from '../../src/services/auth/tokens/access-tokens.ts';
import { RevocationList } from '../../src/services/auth/tokens/revocations.ts';
import { describeEachEngine } from '../support/engines.ts';
import { TEST_INTERNAL_TOKEN, startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

/** A gateway in front of echo routes, each declaring its access, that show what a service behind it receives. */
async function gatewayInFront(server: TestServer, verifier: AccessTokenVerifier = server.auth!.api.verifier): Promise<HttpApp> {
  const app = createHttpApp({ logLevel: 'silent', bodyLimit: 1 << 20, trustProxy: undefined });
  await app.register(cookie);
  installAuthentication(app, verifier, TEST_INTERNAL_TOKEN, server.auth!.api.users, [server.config.publicUrl, server.config.webUrl]);
  installIdentity(app, TEST_INTERNAL_TOKEN);
  const echo = async (request: { identity: unknown; fromService: boolean; headers: Record<string, unknown> }) => ({
    identity: request.identity,
    fromService: request.fromService,
    forwarded: Object.keys(request.headers).filter((name) => name.startsWith('x-user-')),
    tokenExpires: request.headers[IDENTITY_HEADERS.tokenExpires],
  });
  app.get('/api/devices/echo', { config: { access: 'user' } }, echo);
  app.post('/api/devices/echo', { config: { access: 'user' } }, echo);
  app.post('/api/devices/validate-token', { config: { access: 'public' } }, echo);
  app.get('/api/socket', { config: { access: 'user' } }, echo);
  app.get('/api/auth/internal/secret', { config: { access: 'service' } }, echo);
  await app.ready();
  return app;
}

describeEachEngine('gateway authentication', (engine) => {
  let server: TestServer;
  let gateway: HttpApp;
  before(async () => {
    server = await startTestServer(engine);
    gateway = await gatewayInFront(server);
  });
  after(async () => {
    await gateway.close();
    await server.dispose();
  });

  it('answers 401 JSON without a token on protected paths', async () => {
    const response = await gateway.inject({ method: 'GET', url: '/api/devices/echo' });
    assert.equal(response.statusCode, 401);
    assert.equal(response.json().code, 'UNAUTHORIZED');
  });

  it('answers 401 INVALID_TOKEN for a bad or malformed token', async () => {
    for (const authorization of ['Bearer nope', 'Bearer ', 'Basic abc', 'Bearer a.b.c']) {
      const response = await gateway.inject({ method: 'GET', url: '/api/devices/echo', headers: { authorization } });
      assert.equal(response.statusCode, 401, authorization);
      assert.equal(response.json().statusCode, 401);
    }
  });

  it('passes the user on and strips identity headers the client sent', async () => {
    const login = await server.login({ email: 'gw-user@example.com' });
    const response = await gateway.inject({
      method: 'GET',
      url: '/api/devices/echo',
      headers: { ...login.authorization, 'x-user-id': '999', 'x-user-admin': 'true', 'x-internal-token': 'guess' },
    });
    assert.equal(response.statusCode, 200);
    const body = response.json();
    assert.deepEqual(body.identity, { userId: login.userId, email: 'gw-user@example.com', sessionId: login.sessionId });
    assert.equal(body.fromService, false);
    assert.deepEqual(body.forwarded.sort(), ['x-user-email', 'x-user-id', 'x-user-session']);
  });

  it('accepts the access_token cookie, with the CSRF guard on unsafe methods', async () => {
    const login = await server.login({ email: 'gw-cookie@example.com' });
    const headers = { cookie: `access_token=${login.token}` };
    const read = await gateway.inject({ method: 'GET', url: '/api/devices/echo', headers });
    assert.equal(read.json().identity.userId, login.userId);
    const form = await gateway.inject({
      method: 'POST',
      url: '/api/devices/echo',
      headers: { ...headers, 'content-type': 'text/plain' },
      payload: 'x',
    });
    assert.equal(form.statusCode, 403);
    assert.equal(form.json().code, 'FORBIDDEN');
    const json = await gateway.inject({ method: 'POST', url: '/api/devices/echo', headers, payload: { a: 1 } });
    assert.equal(json.statusCode, 200);
    const bearer = await gateway.inject({
      method: 'POST',
      url: '/api/devices/echo',
      headers: { ...login.authorization, 'content-type': 'text/plain' },
      payload: 'x',
    });
    assert.notEqual(bearer.statusCode, 403, 'a bearer request needs no CSRF guard');
  });

  it('takes ?token= on the WebSocket path only', async () => {
    const login = await server.login({ email: 'gw-socket@example.com' });
    const socket = await gateway.inject({ method: 'GET', url: `/api/socket?token=${login.token}` });
    assert.equal(socket.json().identity.userId, login.userId);
    const elsewhere = await gateway.inject({ method: 'GET', url: `/api/devices/echo?token=${login.token}` });
    assert.equal(elsewhere.statusCode, 401);
  });

  it('refuses a revoked session on the very next request', async () => {
    const login = await server.login({ email: 'gw-revoked@example.com' });
    assert.equal((await gateway.inject({ url: '/api/devices/echo', headers: login.authorization })).statusCode, 200);
    await server.auth!.api.sessions.revoke(login.sessionId);
    const response = await gateway.inject({ url: '/api/devices/echo', headers: login.authorization });
    assert.equal(response.statusCode, 401);
    assert.equal(response.json().code, 'INVALID_TOKEN');
  });

  it('refuses an account from the moment its expiration time passes, though its token and its cached record live on', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
    const login = await server.login({ email: 'gw-account-expiry@example.com' });
    const expiresAt = Date.now() + 20_000;
    await server.database!.db.updateTable('users').set({ expiration_time: expiresAt }).where('id', '=', login.userId).execute();
    await server.bus.publish('auth.user.changed', { userId: login.userId });
    assert.equal((await gateway.inject({ url: '/api/devices/echo', headers: login.authorization })).statusCode, 200);
    const socket = await gateway.inject({ url: `/api/socket?token=${login.token}` });
    assert.equal(socket.json().tokenExpires, String(expiresAt), 'a live socket closes when the account expires');

    t.mock.timers.tick(20_000);
    assert.ok(server.auth!.api.users.peek(login.userId), 'the directory still remembers the user: the clock decides, not the cache');
    const refused = await gateway.inject({ url: '/api/devices/echo', headers: login.authorization });
    assert.equal(refused.statusCode, 403);
    assert.equal(refused.json().code, 'ACCOUNT_EXPIRED');
    assert.equal((await gateway.inject({ url: `/api/socket?token=${login.token}` })).statusCode, 403);
    const publicPath = await gateway.inject({ method: 'POST', url: '/api/devices/validate-token', headers: login.authorization });
    assert.equal(publicPath.statusCode, 200);
    assert.equal(publicPath.json().identity, null, 'a public path answers as for anyone');
  });

  it('lets public paths through, with the identity when the token is valid', async () => {
    const login = await server.login({ email: 'gw-public@example.com' });
    const anonymous = await gateway.inject({ method: 'POST', url: '/api/devices/validate-token', headers: { authorization: 'Bearer junk' } });
    assert.equal(anonymous.statusCode, 200);
    assert.equal(anonymous.json().identity, null);
    const known = await gateway.inject({ method: 'POST', url: '/api/devices/validate-token', headers: login.authorization });
    assert.equal(known.json().identity.userId, login.userId);
  });

  it('never exposes internal service routes', async () => {
    const login = await server.login({ email: 'gw-internal@example.com' });
    const response = await gateway.inject({
      url: '/api/auth/internal/secret',
      headers: { ...login.authorization, 'x-internal-token': TEST_INTERNAL_TOKEN },
    });
    assert.equal(response.statusCode, 404);
  });

  it('answers 404, not 401, for paths no service owns', async () => {
    const response = await gateway.inject({ url: '/api/nothing-here' });
    assert.equal(response.statusCode, 404);
  });
});

describeEachEngine('gateway authentication once a token expires', (engine) => {
  let server: TestServer;
  let gateway: HttpApp;
  // The gateway's clock runs ahead by this much: moved instead of waited for.
  let ahead = 0;
  before(async () => {
    server = await startTestServer(engine);
    const auth = server.auth!.api;
    gateway = await gatewayInFront(server, new AccessTokenVerifier(auth.signingKey.publicKey, server.config.publicUrl, new RevocationList(), () => Date.now() + ahead));
  });
  after(async () => {
    await gateway.close();
    await server.dispose();
  });

  it('refuses a token once it has expired, even though it was cached', async () => {
    const login = await server.login({ email: 'gw-expiry@example.com' });
    assert.equal((await gateway.inject({ url: '/api/devices/echo', headers: login.authorization })).statusCode, 200);
    ahead = server.config.ttl.accessToken * 1000;
    const expired = await gateway.inject({ url: '/api/devices/echo', headers: login.authorization });
    assert.equal(expired.statusCode, 401);
    assert.equal(expired.json().code, 'INVALID_TOKEN');
  });
});

describeEachEngine('a service behind the gateway', (engine) => {
  let server: TestServer;
  let service: HttpApp;
  before(async () => {
    server = await startTestServer(engine);
    service = createHttpApp({ logLevel: 'silent', bodyLimit: 1 << 20, trustProxy: undefined });
    installIdentity(service, TEST_INTERNAL_TOKEN);
    service.get('/api/devices/echo', async (request) => ({ identity: request.identity, fromService: request.fromService }));
    await service.ready();
  });
  after(async () => {
    await service.close();
    await server.dispose();
  });

  it('trusts X-User-Id only beside the internal token', async () => {
    const forged = await service.inject({ url: '/api/devices/echo', headers: { 'x-user-id': '1' } });
    assert.deepEqual(forged.json(), { identity: null, fromService: false });
    const wrong = await service.inject({ url: '/api/devices/echo', headers: { 'x-user-id': '1', 'x-internal-token': 'x'.repeat(36) } });
    assert.deepEqual(wrong.json(), { identity: null, fromService: false });
    const trusted = await service.inject({
      url: '/api/devices/echo',
      headers: { 'x-user-id': '7', 'x-user-email': 'a@b.c', 'x-user-session': 's1', 'x-internal-token': TEST_INTERNAL_TOKEN },
    });
    assert.deepEqual(trusted.json(), { identity: { userId: 7, email: 'a@b.c', sessionId: 's1' }, fromService: false });
    const serviceCall = await service.inject({ url: '/api/devices/echo', headers: { 'x-internal-token': TEST_INTERNAL_TOKEN } });
    assert.deepEqual(serviceCall.json(), { identity: null, fromService: true });
  });
});
