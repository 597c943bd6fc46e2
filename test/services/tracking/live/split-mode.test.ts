import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { loadConfig } from '../../../../src/config.ts';
import { IDENTITY_HEADERS } from '../../../../src/platform/http/identity.ts';
import { createServer } from '../../../../src/server.ts';
import type { Server } from '../../../../src/server.ts';
import { signIn } from '../../../support/api.ts';
import { createSharedDatabase, testEngines } from '../../../support/engines.ts';
import type { SharedTestDatabase } from '../../../support/engines.ts';
import { freePort } from '../../../support/ports.ts';
import { NO_DEVICE_LISTENERS, NO_METRICS, TEST_INTERNAL_TOKEN } from '../../../support/server.ts';
import { LiveClient, bareUpgrade, refusal, socketUrl } from './support.ts';
import type { LiveMessage } from './support.ts';


/**
 * Split mode: a gateway-only instance in front of an instance that runs the services. The
 * gateway authenticates the upgrade and pipes the WebSocket to the tracking service.
 */
for (const engine of testEngines()) {
  describe(`the live socket through a gateway-only instance [${engine.name}]`, () => {
    let database: SharedTestDatabase | undefined;
    let services: Server;
    let gateway: Server;
    let servicesUrl: string;
    let gatewayUrl: string;
    let servicesSocket: string;
    let gatewaySocket: string;
    let user: { userId: number; sessionId: string; token: string };
    let open: LiveClient[] = [];
    let shared: Record<string, string>;

    async function connect(url: string, headers: Record<string, string> = {}): Promise<LiveClient> {
      const client = await LiveClient.open(url, { headers });
      open.push(client);
      return client;
    }

    before(async () => {
      database = await createSharedDatabase(engine, 'trackstack-live-split-');
      shared = { DATA_DIR: database.dataDir, LOG_LEVEL: 'silent', INTERNAL_TOKEN: TEST_INTERNAL_TOKEN, PUBLIC_URL: 'http://localhost:8080', RATE_LIMITS: 'off', ...NO_DEVICE_LISTENERS, ...NO_METRICS };
      services = await createServer(loadConfig({ ...shared, DATABASE_URL: database.url, SERVICES: 'auth,devices,tracking' }));
      servicesSocket = await socketUrl(services.app);
      servicesUrl = servicesSocket.replace('ws:', 'http:').replace('/api/socket', '');
      gateway = await createServer(
        loadConfig({ ...shared, SERVICES: 'gateway', AUTH_URL: servicesUrl, DEVICES_URL: servicesUrl, TRACKING_URL: servicesUrl, BILLING_URL: servicesUrl, NOTIFICATIONS_URL: servicesUrl }),
      );
      gatewaySocket = await socketUrl(gateway.app);
      gatewayUrl = gatewaySocket.replace('ws:', 'http:').replace('/api/socket', '');
      user = await signIn(services, 'live-split@example.com');
    });
    afterEach(async () => {
      for (const client of open) client.close();
      await Promise.all(open.map((client) => client.closed));
      open = [];
    });
    after(async () => {
      await gateway?.close();
      await services?.close();
      await database?.dispose();
    });

    it('carries the socket with a bearer, the cookie or ?token=: the initial positions, then live messages', async () => {
      const created = await gateway.app.inject({
        method: 'POST',
        url: '/api/devices/',
        headers: { authorization: `Bearer ${user.token}` },
        payload: { name: 'Split tracker', uniqueId: 'live-split-1' },
      });
      assert.equal(created.statusCode, 201, created.body);
      const deviceId = created.json().id as number;

      const clients = [
        await connect(gatewaySocket, { authorization: `Bearer ${user.token}` }),
        await connect(gatewaySocket, { cookie: `access_token=${user.token}` }),
        await connect(`${gatewaySocket}?token=${encodeURIComponent(user.token)}`),
      ];
      for (const client of clients) assert.deepEqual(await client.next(), { positions: [] });

      const live = { deviceId, json: JSON.stringify({ id: 1, deviceId, latitude: 52.5, longitude: 13.4 }) };
      await services.bus.publish('tracking.positions.stored', { positions: [live] });
      for (const client of clients) assert.deepEqual(await client.nextOf('positions'), [JSON.parse(live.json)]);
    });

    it('refuses an upgrade without a valid token at the gateway (401), and on a path that has no socket (404)', async () => {
      const missing = await refusal(gatewaySocket);
      assert.equal(missing.status, 401);
      assert.equal(missing.body.code, 'UNAUTHORIZED');
      const bad = await refusal(`${gatewaySocket}?token=not-a-token`);
      assert.equal(bad.status, 401);
      assert.equal(bad.body.code, 'INVALID_TOKEN');
      const bare = await bareUpgrade(gatewaySocket);
      assert.match(bare.statusLine, /^HTTP\/1\.1 401 /);
      assert.ok(bare.endedByServer, 'the gateway ended the refused connection');
      const elsewhere = await refusal(`${gatewayUrl.replace('http:', 'ws:')}/api/devices/`, { headers: { authorization: `Bearer ${user.token}` } });
      assert.equal(elsewhere.status, 404);
      assert.equal(elsewhere.body.code, 'NOT_FOUND');
    });

    it('judges the page origin of a cookie upgrade at the gateway, which sees the Host the browser used', async () => {
      const cookie = { cookie: `access_token=${user.token}` };
      // PUBLIC_URL says localhost:8080; the page is at the gateway's own address.
      const own = await connect(gatewaySocket, { ...cookie, origin: new URL(gatewayUrl).origin });
      assert.deepEqual(await own.next(), { positions: [] });
      const foreign = await refusal(gatewaySocket, { headers: { ...cookie, origin: 'https://evil.example' } });
      assert.equal(foreign.status, 403);
      assert.equal(foreign.body.code, 'FORBIDDEN');
    });

    it('relays a plain HTTP request to the service, which answers 426', async () => {
      const response = await gateway.app.inject({ url: '/api/socket', headers: { authorization: `Bearer ${user.token}` } });
      assert.equal(response.statusCode, 426);
      assert.equal(response.json().code, 'WEBSOCKET_REQUIRED');
    });

    it('the service refuses an upgrade sent straight to it without the internal token (401)', async () => {
      const forged = await refusal(servicesSocket, { headers: { 'x-user-id': String(user.userId), 'x-user-session': user.sessionId } });
      assert.equal(forged.status, 401);
      const wrongSecret = await refusal(servicesSocket, { headers: { 'x-user-id': String(user.userId), 'x-internal-token': 'x'.repeat(40) } });
      assert.equal(wrongSecret.status, 401);
    });

    it('the service closes a socket with 4401 at the token expiry the gateway passed on', async () => {
      const client = await connect(servicesSocket, {
        'x-internal-token': TEST_INTERNAL_TOKEN,
        'x-user-id': String(user.userId),
        'x-user-session': user.sessionId,
        [IDENTITY_HEADERS.tokenExpires]: String(Date.now() + 200),
      });
      assert.deepEqual(await client.next(), { positions: [] });
      assert.deepEqual(await client.waitClosed(), { code: 4401, reason: 'token expired' });
    });

    it('passes the service’s close code through the tunnel: a logout closes the socket with 4401', async () => {
      const other = await signIn(services, 'live-split-logout@example.com');
      const client = await connect(gatewaySocket, { authorization: `Bearer ${other.token}` });
      assert.ok(((await client.next()) as LiveMessage).positions);
      const logout = await gateway.app.inject({ method: 'DELETE', url: '/api/auth/logout', headers: { authorization: `Bearer ${other.token}` } });
      assert.equal(logout.statusCode, 204, logout.body);
      assert.deepEqual(await client.waitClosed(), { code: 4401, reason: 'session revoked' });
    });

    it('answers 502 UPSTREAM_UNAVAILABLE when the tracking service cannot be reached', async () => {
      const unreachable = `http://127.0.0.1:${await freePort()}`;
      const lonely = await createServer(
        loadConfig({ ...shared, SERVICES: 'gateway', AUTH_URL: servicesUrl, DEVICES_URL: servicesUrl, TRACKING_URL: unreachable, BILLING_URL: servicesUrl, NOTIFICATIONS_URL: servicesUrl }),
      );
      try {
        const refused = await refusal(await socketUrl(lonely.app), { headers: { authorization: `Bearer ${user.token}` } });
        assert.equal(refused.status, 502);
        assert.equal(refused.body.code, 'UPSTREAM_UNAVAILABLE');
      } finally {
        await lonely.close();
      }
    });

    it('a gateway that shuts down ends its tunnels', async () => {
      const second = await createServer(
        loadConfig({ ...shared, SERVICES: 'gateway', AUTH_URL: servicesUrl, DEVICES_URL: servicesUrl, TRACKING_URL: servicesUrl, BILLING_URL: servicesUrl, NOTIFICATIONS_URL: servicesUrl }),
      );
      const client = await LiveClient.open(await socketUrl(second.app), { headers: { authorization: `Bearer ${user.token}` } });
      assert.ok(((await client.next()) as LiveMessage).positions);
      await second.close();
      assert.equal((await client.waitClosed()).code, 1006, 'the tunnel is cut without a close frame');
    });
  });
}
