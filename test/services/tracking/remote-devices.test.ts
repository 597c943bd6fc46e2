import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { loadConfig } from '../../../src/config.ts';
import { createServer } from '../../../src/server.ts';
import type { Server } from '../../../src/server.ts';
import { createSharedDatabase, testEngines } from '../../support/engines.ts';
import type { SharedTestDatabase } from '../../support/engines.ts';
import { signIn } from '../../support/api.ts';
import { eventually } from '../../support/eventually.ts';
import { NO_DEVICE_LISTENERS, NO_METRICS, TEST_INTERNAL_TOKEN } from '../../support/server.ts';

interface Caller {
  userId: number;
  email: string;
  headers: { authorization: string };
}

/**
 * Split mode with tracking away from devices: one process runs auth, devices and billing; another
 * runs the gateway and tracking, which asks the first "who may see what" over internal HTTP
 * (devices/remote.ts). Every request below goes through that gateway.
 */
for (const engine of testEngines()) {
  describe(`tracking in a process without devices, through the gateway [${engine.name}]`, () => {
    let database: SharedTestDatabase | undefined;
    let services: Server;
    let front: Server;
    let servicesUrl: string;
    let osmand: string;
    let owner: Caller;
    let sharee: Caller;
    let stranger: Caller;
    let deviceId: number;
    let positionId: number;
    let eventId: number;
    let geofenceId: number;

    const call = async (caller: Caller | undefined, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) => {
      const response = await front.app.inject({ method, url, headers: caller?.headers ?? {}, ...(payload ? { payload } : {}) });
      return { status: response.statusCode, body: response.body ? response.json() : undefined };
    };

    async function caller(email: string): Promise<Caller> {
      const { userId, authorization } = await signIn(services, email);
      return { userId, email, headers: authorization };
    }

    before(async () => {
      database = await createSharedDatabase(engine, 'trackstack-remote-devices-');
      const shared = {
        DATA_DIR: database.dataDir,
        DATABASE_URL: database.url,
        LOG_LEVEL: 'silent',
        INTERNAL_TOKEN: TEST_INTERNAL_TOKEN,
        PUBLIC_URL: 'http://localhost:8080',
        RATE_LIMITS: 'off',
        ...NO_DEVICE_LISTENERS,
        ...NO_METRICS,
      };
      services = await createServer(loadConfig({ ...shared, SERVICES: 'auth,devices,billing' }));
      await services.app.listen({ port: 0, host: '127.0.0.1' });
      servicesUrl = `http://127.0.0.1:${(services.app.server.address() as AddressInfo).port}`;
      front = await createServer(
        loadConfig({ ...shared, SERVICES: 'gateway,tracking', AUTH_URL: servicesUrl, DEVICES_URL: servicesUrl, BILLING_URL: servicesUrl, NOTIFICATIONS_URL: servicesUrl }),
      );
      assert.equal(front.devices, undefined, 'the devices module runs in the other process only');
      assert.ok(front.tracking);
      osmand = `http://127.0.0.1:${await front.tracking.ingestion.listen('osmand', 0)}`;

      owner = await caller('remote-owner@example.com');
      sharee = await caller('remote-sharee@example.com');
      stranger = await caller('remote-stranger@example.com');
      const created = await call(owner, 'POST', '/api/devices/', { name: 'Remote tracker', uniqueId: 'remote-0001' });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      deviceId = created.body.id;
      const sharing = await call(owner, 'POST', `/api/devices/${deviceId}/shares`, {
        email: sharee.email,
        permissions: { position: true, events: false, geofences: true },
      });
      assert.equal(sharing.status, 201, JSON.stringify(sharing.body));
    });
    after(async () => {
      await front?.close();
      await services?.close();
      await database?.dispose();
    });

    it('ingests a report of a device known only to the devices process, which learns its latest position', async () => {
      const report = await request(`${osmand}/?id=remote-0001&lat=52.5&lon=13.4&timestamp=${Math.floor(Date.now() / 1000)}`);
      await report.body.dump();
      assert.equal(report.statusCode, 200);
      const unknown = await request(`${osmand}/?id=remote-unknown&lat=52.5&lon=13.4&timestamp=${Math.floor(Date.now() / 1000)}`);
      await unknown.body.dump();
      assert.equal(unknown.statusCode, 404, 'an identifier the devices process does not know is refused');

      const latest = await call(owner, 'GET', `/api/positions?deviceId=${deviceId}`);
      assert.equal(latest.status, 200, JSON.stringify(latest.body));
      assert.equal(latest.body.length, 1);
      positionId = latest.body[0].id;
      await eventually(async () => (await call(owner, 'GET', `/api/devices/${deviceId}`)).body.positionId === positionId, 'the device points at its latest position');
    });

    it('answers positions to the owner and a sharee with the permission, and refuses a stranger', async () => {
      for (const caller of [owner, sharee]) {
        const latest = await call(caller, 'GET', `/api/positions?deviceId=${deviceId}`);
        assert.equal(latest.status, 200, `${caller.email}: ${JSON.stringify(latest.body)}`);
        assert.deepEqual(latest.body.map((position: { id: number }) => position.id), [positionId]);
        const all = await call(caller, 'GET', '/api/positions');
        assert.deepEqual(all.body.map((position: { id: number }) => position.id), [positionId], caller.email);
      }
      const refused = await call(stranger, 'GET', `/api/positions?deviceId=${deviceId}`);
      assert.deepEqual([refused.status, refused.body.code], [403, 'FORBIDDEN']);
      assert.deepEqual((await call(stranger, 'GET', '/api/positions')).body, []);
      assert.deepEqual((await call(stranger, 'GET', `/api/positions?id=${positionId}`)).body, []);
      const missing = await call(owner, 'GET', '/api/positions?deviceId=987654');
      assert.deepEqual([missing.status, missing.body.code], [404, 'NOT_FOUND']);
      for (const caller of [sharee, stranger]) {
        const deleted = await call(caller, 'DELETE', `/api/positions?deviceId=${deviceId}&from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z`);
        assert.deepEqual([deleted.status, deleted.body.code], [403, 'FORBIDDEN'], caller.email);
      }
      assert.equal((await call(owner, 'GET', `/api/positions?deviceId=${deviceId}`)).body.length, 1, 'nothing was deleted');
    });

    it('answers events to the owner only: the share gives no events permission', async () => {
      assert.ok(front.tracking);
      eventId = (await front.tracking.api.storeEvents([{ type: 'deviceOnline', eventTime: Date.now() - 1000, deviceId }]))[0] as number;
      const listed = await call(owner, 'GET', `/api/events?deviceId=${deviceId}`);
      assert.equal(listed.status, 200, JSON.stringify(listed.body));
      assert.ok(listed.body.some((event: { id: number }) => event.id === eventId), JSON.stringify(listed.body));
      assert.equal((await call(owner, 'GET', `/api/events/${eventId}`)).status, 200);
      for (const [caller, code] of [[sharee, 'PERMISSION_REQUIRED'], [stranger, 'FORBIDDEN']] as const) {
        const refused = await call(caller, 'GET', `/api/events?deviceId=${deviceId}`);
        assert.deepEqual([refused.status, refused.body.code], [403, code], caller.email);
        assert.equal((await call(caller, 'GET', `/api/events/${eventId}`)).status, 403, caller.email);
        assert.deepEqual((await call(caller, 'GET', '/api/events')).body, [], caller.email);
      }
    });

    it("shows the owner's geofences to a sharee with the geofences permission, not to a stranger", async () => {
      const created = await call(owner, 'POST', '/api/geofences', { name: 'Home', area: 'CIRCLE (52.5 13.4, 100)' });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      geofenceId = created.body.id;
      const ids = async (caller: Caller) => (await call(caller, 'GET', '/api/geofences?all=true')).body.map((geofence: { id: number }) => geofence.id);
      assert.deepEqual(await ids(owner), [geofenceId]);
      assert.deepEqual(await ids(sharee), [geofenceId]);
      assert.deepEqual(await ids(stranger), []);
      assert.equal((await call(sharee, 'GET', `/api/geofences/${geofenceId}`)).status, 200);
      const refused = await call(stranger, 'GET', `/api/geofences/${geofenceId}`);
      assert.deepEqual([refused.status, refused.body.code], [403, 'FORBIDDEN']);
    });

    it('follows a share withdrawn in the devices process at once', async () => {
      const withdrawn = await call(owner, 'DELETE', `/api/devices/${deviceId}/shares/${sharee.userId}`);
      assert.equal(withdrawn.status, 204, JSON.stringify(withdrawn.body));
      const refused = await call(sharee, 'GET', `/api/positions?deviceId=${deviceId}`);
      assert.deepEqual([refused.status, refused.body.code], [403, 'FORBIDDEN']);
      assert.deepEqual((await call(sharee, 'GET', '/api/geofences?all=true')).body, []);
      assert.equal((await call(sharee, 'GET', `/api/geofences/${geofenceId}`)).status, 403);
    });

    it('bounds what one internal call may ask, and changes nothing on a refused one', async () => {
      const send = async (method: 'POST' | 'PUT', path: string, body: unknown) => {
        const response = await request(`${servicesUrl}${path}`, {
          method,
          headers: { 'x-internal-token': TEST_INTERNAL_TOKEN, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        return { status: response.statusCode, body: (await response.body.json()) as { code?: string } };
      };
      const ids = Array.from({ length: 1001 }, (_, index) => index + 1);
      assert.equal((await send('POST', '/api/devices/internal/devices/by-id', { ids })).body.code, 'VALIDATION_FAILED');
      assert.equal((await send('POST', '/api/devices/internal/views', { userId: owner.userId, ids })).status, 400);
      assert.equal((await send('POST', '/api/devices/internal/devices/by-unique-id', { uniqueId: 'x'.repeat(1025) })).status, 400);
      const changes = ids.map((id) => ({ deviceId: id === 1 ? deviceId : id + deviceId, positionId: 424242 }));
      const refused = await send('PUT', '/api/devices/internal/statuses', { changes });
      assert.deepEqual([refused.status, refused.body.code], [400, 'VALIDATION_FAILED']);
      assert.equal((await call(owner, 'GET', `/api/devices/${deviceId}`)).body.positionId, positionId, 'the device kept its position');
    });

    it("keeps the devices process's internal routes from clients", async () => {
      const throughGateway = await call(owner, 'GET', `/api/devices/internal/access/${owner.userId}`);
      assert.equal(throughGateway.status, 404);
      for (const headers of [{}, { 'x-internal-token': 'not-the-internal-token-0123456789' }, { 'x-internal-token': TEST_INTERNAL_TOKEN, 'x-user-id': String(owner.userId) }]) {
        const direct = await request(`${servicesUrl}/api/devices/internal/access/${owner.userId}`, { headers });
        await direct.body.dump();
        assert.equal(direct.statusCode, 403, JSON.stringify(headers));
      }
      const service = await request(`${servicesUrl}/api/devices/internal/access/${owner.userId}`, { headers: { 'x-internal-token': TEST_INTERNAL_TOKEN } });
      assert.equal(service.statusCode, 200);
      assert.deepEqual(((await service.body.json()) as { grants: { deviceId: number }[] }).grants.map((grant) => grant.deviceId), [deviceId]);
    });
  });
}
