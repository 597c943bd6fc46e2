import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/platform/db/database.ts';
import { runUserCommand } from '../src/services/auth/cli.ts';
import { createSharedDatabase, testEngines } from './support/engines.ts';
import type { SharedTestDatabase } from './support/engines.ts';
import { eventually } from './support/eventually.ts';
import { parseMail } from './services/auth/support/mailbox.ts';
import { outboxMails } from './support/outbox.ts';
import { startProcess } from './support/processes.ts';
import type { RunningProcess } from './support/processes.ts';
import { NO_DEVICE_LISTENERS, TEST_INTERNAL_TOKEN } from './support/server.ts';
import { TcpProxy } from './support/tcp-proxy.ts';

const ADMIN = { email: 'split-admin@example.com', password: 'Split-Mode-Password-1' };

async function call(url: string, options: { method?: 'GET' | 'POST' | 'PUT' | 'DELETE'; headers?: Record<string, string>; body?: unknown } = {}) {
  const response = await request(url, {
    method: options.method ?? 'GET',
    headers: { ...(options.body ? { 'content-type': 'application/json' } : {}), ...options.headers },
    body: options.body ? JSON.stringify(options.body) : undefined,
  });
  const text = await response.body.text();
  return { status: response.statusCode, body: text ? JSON.parse(text) : undefined };
}

for (const engine of testEngines()) {
  describe(`split mode: a gateway and two service processes [${engine.name}]`, () => {
    let database: SharedTestDatabase | undefined;
    const running: RunningProcess[] = [];
    let authBilling: RunningProcess;
    let devicesTracking: RunningProcess;
    let notifications: RunningProcess;
    let gateway: RunningProcess;
    // Billing counts usage in the processes started after it, so their URLs are named before they listen:
    // relays on ports this process holds, pointed at each process once it says where it listens.
    const relays = { devicesTracking: new TcpProxy(), notifications: new TcpProxy() };

    before(async () => {
      database = await createSharedDatabase(engine, 'trackstack-split-');
      const shared = { DATA_DIR: database.dataDir, DATABASE_URL: database.url, INTERNAL_TOKEN: TEST_INTERNAL_TOKEN, PUBLIC_URL: 'http://localhost:8080', ...NO_DEVICE_LISTENERS };
      for (const relay of Object.values(relays)) await relay.start();
      const urlOf = (relay: TcpProxy) => `http://127.0.0.1:${relay.port}`;
      const pointAt = (relay: TcpProxy, started: RunningProcess) => {
        relay.target = { host: '127.0.0.1', port: Number(new URL(started.url).port) };
      };
      authBilling = await startProcess({
        ...shared,
        SERVICES: 'auth,billing',
        ADMIN_EMAIL: ADMIN.email,
        ADMIN_PASSWORD: ADMIN.password,
        DEVICES_URL: urlOf(relays.devicesTracking),
        TRACKING_URL: urlOf(relays.devicesTracking),
        NOTIFICATIONS_URL: urlOf(relays.notifications),
      });
      running.push(authBilling);
      // It and the gateway log every request, so a test can see which request id each worked under.
      devicesTracking = await startProcess({ ...shared, SERVICES: 'devices,tracking', AUTH_URL: authBilling.url, LOG_LEVEL: 'info' });
      running.push(devicesTracking);
      pointAt(relays.devicesTracking, devicesTracking);
      notifications = await startProcess({ ...shared, SERVICES: 'notifications', AUTH_URL: authBilling.url, DEVICES_URL: devicesTracking.url });
      running.push(notifications);
      pointAt(relays.notifications, notifications);
      gateway = await startProcess({
        ...shared,
        SERVICES: 'gateway',
        LOG_LEVEL: 'info',
        AUTH_URL: authBilling.url,
        BILLING_URL: authBilling.url,
        DEVICES_URL: devicesTracking.url,
        TRACKING_URL: devicesTracking.url,
        NOTIFICATIONS_URL: notifications.url,
      });
      running.push(gateway);
    });
    after(async () => {
      await Promise.all(running.map((process) => process.stop()));
      for (const relay of Object.values(relays)) await relay.stop();
      await database?.dispose();
    });

    it('routes each path to the process that owns it', async () => {
      assert.deepEqual((await call(`${gateway.url}/api/auth/health`)).body.service, 'auth');
      assert.deepEqual((await call(`${gateway.url}/api/devices/health`)).body.service, 'device');
      assert.deepEqual((await call(`${gateway.url}/api/tracking/health`)).body.service, 'tracking');
      assert.deepEqual((await call(`${gateway.url}/health`)).body.service, 'billing');
      assert.deepEqual((await call(`${gateway.url}/api/notifications/health`)).body.service, 'notifications');
    });

    it('carries a login, an authenticated device request and a logout through the gateway', async () => {
      const login = await call(`${gateway.url}/api/auth/login`, { method: 'POST', body: ADMIN });
      assert.equal(login.status, 200, JSON.stringify(login.body));
      const headers = { authorization: `Bearer ${login.body.accessToken}` };

      const created = await call(`${gateway.url}/api/devices/`, { method: 'POST', headers, body: { name: 'Split tracker', uniqueId: 'split-0001' } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const listed = await call(`${gateway.url}/api/devices/`, { headers });
      assert.equal(listed.status, 200);
      assert.deepEqual(
        listed.body.map((device: { uniqueId: string; isOwner: boolean }) => [device.uniqueId, device.isOwner]),
        [['split-0001', true]],
      );
      // The notifications process checks the device through the devices process.
      const rule = await call(`${gateway.url}/api/notifications`, { method: 'POST', headers, body: { type: 'alarm', deviceIds: [created.body.id], channels: ['mail'] } });
      assert.equal(rule.status, 201, JSON.stringify(rule.body));
      assert.deepEqual((await call(`${gateway.url}/api/notifications`, { headers })).body.map((listed: { id: number }) => listed.id), [rule.body.id]);

      assert.equal((await call(`${gateway.url}/api/auth/logout`, { method: 'DELETE', headers })).status, 204);
      // Without Redis the gateway learns revocations by polling the auth service every second.
      let status = 0;
      for (let attempt = 0; attempt < 40 && status !== 401; attempt++) {
        status = (await call(`${gateway.url}/api/devices/`, { headers })).status;
        if (status !== 401) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal(status, 401, 'the logged-out token is refused by the gateway');
    });

    it('a notifications process without BILLING_URL warns at start that no plan applies', () => {
      const warnings = notifications
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { level: number; msg: string })
        .filter((entry) => entry.level === 40);
      assert.ok(
        warnings.some((entry) => entry.msg === 'notifications: no billing module in this process and no BILLING_URL; plans are not applied: every user may use every configured channel, up to MAX_NOTIFICATION_RULES_PER_USER rules'),
        notifications.output(),
      );
    });

    it('one request id follows a request from the gateway to the service', async () => {
      const generated = await request(`${gateway.url}/api/devices/health`);
      await generated.body.dump();
      const id = generated.headers['x-request-id'];
      assert.equal(typeof id, 'string');
      // Each process logs the request after answering it; the lines reach this process through a pipe.
      await eventually(() => gateway.output().includes(`"reqId":"${id}"`), 'the gateway answered under its own id');
      await eventually(() => devicesTracking.output().includes(`"reqId":"${id}"`), 'the service worked under the same id');

      const chosen = await request(`${gateway.url}/api/devices/health`, { headers: { 'x-request-id': 'trace-split-0001' } });
      await chosen.body.dump();
      assert.equal(chosen.headers['x-request-id'], 'trace-split-0001');
      await eventually(() => devicesTracking.output().includes('"reqId":"trace-split-0001"'), 'the service worked under the chosen id');
    });

    it('an administrator lists and retries a dead letter through the gateway; the process running its consumer takes it back', async () => {
      const shared = openDatabase(loadConfig({ DATA_DIR: database!.dataDir, DATABASE_URL: database!.url }).database);
      try {
        const at = Date.now();
        await shared.db
          .insertInto('dead_letters')
          .values({ queue: 'outbox', consumer: 'tracking', topic: 'devices.device.deleted', source_id: null, payload: '{"deviceId":987654}', attempts: 20, last_error: 'refused', created_at: at, failed_at: at, retry_requested_at: null })
          .execute();
        const login = await call(`${gateway.url}/api/auth/login`, { method: 'POST', body: ADMIN });
        const headers = { authorization: `Bearer ${login.body.accessToken}` };
        const listed = await call(`${gateway.url}/api/admin/dead-letters?consumer=tracking`, { headers });
        assert.equal(listed.status, 200, JSON.stringify(listed.body));
        assert.deepEqual(
          listed.body.deadLetters.map((letter: { topic: string; payload: string }) => [letter.topic, letter.payload]),
          [['devices.device.deleted', '{"deviceId":987654}']],
        );
        const retried = await call(`${gateway.url}/api/admin/dead-letters/${listed.body.deadLetters[0].id}/retry`, { method: 'POST', headers });
        assert.equal(retried.status, 202, JSON.stringify(retried.body));
        // No Redis here: the devices and tracking process finds the request at its next poll, and handles the fact.
        const left = async () => [
          ...(await shared.db.selectFrom('dead_letters').select('id').execute()),
          ...(await shared.db.selectFrom('outbox').select('id').where('consumer', '=', 'tracking').execute()),
        ];
        await eventually(async () => (await left()).length === 0, 'the tracking process put the fact back and handled it', 10_000);
      } finally {
        await shared.close();
      }
    });

    /** A user made with the CLI, signed in through the gateway. */
    async function signedInUser(user: { email: string; password: string }) {
      const made = await runUserCommand(loadConfig({ DATA_DIR: database!.dataDir, DATABASE_URL: database!.url }), ['create', '--email', user.email, '--password', user.password]);
      assert.equal(made.exitCode, 0, made.output);
      const login = await call(`${gateway.url}/api/auth/login`, { method: 'POST', body: user });
      return { userId: login.body.user.id as number, headers: { authorization: `Bearer ${login.body.accessToken}` } };
    }

    it('billing reports the usage held in the devices, tracking and notifications processes', async () => {
      const { userId, headers } = await signedInUser({ email: 'split-usage@example.com', password: 'Split-Usage-Password-1' });
      const usage = async () => (await call(`${gateway.url}/api/subscriptions/check/${userId}`, { headers })).body.usage;
      assert.deepEqual(await usage(), { devices: 0, geofences: 0, shares: 0, notificationRules: 0 });

      const created = async (url: string, body: object) => {
        const answer = await call(`${gateway.url}${url}`, { method: 'POST', headers, body });
        assert.equal(answer.status, 201, JSON.stringify(answer.body));
        return answer.body as { id: number };
      };
      const device = await created('/api/devices/', { name: 'Counted', uniqueId: 'split-usage-1' });
      await created(`/api/devices/${device.id}/shares`, { email: ADMIN.email, permissions: { position: true } });
      await created('/api/geofences', { name: 'Home', area: 'CIRCLE (52.52 13.405, 150)' });
      await created('/api/notifications', { type: 'alarm', deviceIds: [device.id], channels: ['mail'] });
      assert.deepEqual(await usage(), { devices: 1, geofences: 1, shares: 1, notificationRules: 1 });
    });

    it("an account deleted in the auth process loses its devices in the devices process, without Redis", async () => {
      const { headers } = await signedInUser({ email: 'split-leaving@example.com', password: 'Split-Leaving-Password-1' });
      const device = await call(`${gateway.url}/api/devices/`, { method: 'POST', headers, body: { name: 'Leaving', uniqueId: 'split-leaving-1' } });
      assert.equal(device.status, 201, JSON.stringify(device.body));

      assert.equal((await call(`${gateway.url}/api/auth/account`, { method: 'DELETE', headers })).status, 204);
      const admin = await call(`${gateway.url}/api/auth/login`, { method: 'POST', body: ADMIN });
      const adminHeaders = { authorization: `Bearer ${admin.body.accessToken}` };
      await eventually(
        async () => (await call(`${gateway.url}/api/devices/${device.body.id}`, { headers: adminHeaders })).status === 404,
        'the devices process removed the device from the recorded fact',
        5000,
      );
    });

    it('the gateway refuses an account once its expiration time passes', async () => {
      const user = { email: 'split-expiring@example.com', password: ADMIN.password };
      const registered = await call(`${gateway.url}/api/auth/register`, { method: 'POST', body: { ...user, name: 'Expiring', termsPrivacyAccepted: true } });
      assert.equal(registered.status, 201, JSON.stringify(registered.body));
      const outbox = path.join(database!.dataDir, 'outbox');
      const mailTo = () => outboxMails(outbox).map((file) => readFileSync(file, 'utf8')).find((raw) => raw.includes(user.email));
      await eventually(() => mailTo() !== undefined, 'the verification mail in the outbox');
      const token = /verify-email\?token=([\w-]+)/.exec(parseMail(mailTo() as string).text)?.[1];
      assert.equal((await call(`${gateway.url}/api/auth/verify`, { method: 'POST', body: { token } })).status, 200);
      const signedIn = await call(`${gateway.url}/api/auth/login`, { method: 'POST', body: user });
      const headers = { authorization: `Bearer ${signedIn.body.accessToken}` };
      const admin = { authorization: `Bearer ${(await call(`${gateway.url}/api/auth/login`, { method: 'POST', body: ADMIN })).body.accessToken}` };

      // Far enough ahead that the first request lands before it even on a loaded machine.
      const expirationTime = new Date(Date.now() + 5000).toISOString();
      const changed = await call(`${gateway.url}/api/auth/users/${signedIn.body.user.id}`, { method: 'PUT', headers: admin, body: { expirationTime } });
      assert.equal(changed.status, 200, JSON.stringify(changed.body));
      assert.equal((await call(`${gateway.url}/api/devices/`, { headers })).status, 200, 'before the expiration time');
      await eventually(async () => (await call(`${gateway.url}/api/devices/`, { headers })).body?.code === 'ACCOUNT_EXPIRED', 'refused once expired', 15_000);
      const refused = await call(`${gateway.url}/api/devices/`, { method: 'POST', headers, body: { name: 'Late', uniqueId: 'split-late' } });
      assert.equal(refused.status, 403);
      const theirs = await call(`${gateway.url}/api/devices/?userId=${signedIn.body.user.id}`, { headers: admin });
      assert.deepEqual([theirs.status, theirs.body.length], [200, 0], 'nothing was created');
    });

    it('refuses a forged X-User-Id sent straight to a service', async () => {
      const forged = await call(`${devicesTracking.url}/api/devices/`, { headers: { 'x-user-id': '1' } });
      assert.equal(forged.status, 401);
      assert.equal(forged.body.code, 'UNAUTHORIZED');
      const wrongSecret = await call(`${devicesTracking.url}/api/devices/`, { headers: { 'x-user-id': '1', 'x-internal-token': 'y'.repeat(40) } });
      assert.equal(wrongSecret.status, 401);
      const internal = await call(`${gateway.url}/api/auth/internal/users/1`, { headers: { 'x-internal-token': TEST_INTERNAL_TOKEN } });
      assert.equal(internal.status, 404, 'internal routes are not reachable through the gateway');
    });
  });
}
