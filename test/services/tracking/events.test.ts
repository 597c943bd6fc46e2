import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TrackingApi } from '../../../src/services/tracking/api.ts';
import { EVENT_LIMIT } from '../../../src/services/tracking/events/service.ts';
import { EVENT_TYPES } from '../../../src/services/tracking/events/types.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { assertError, signIn } from '../../support/api.ts';
import { T0, iso } from '../../factories/position.ts';
import { createDevice, get, share, trackingInstance } from './support/tracking.ts';
import type { SignedIn } from '../../support/api.ts';

const HOUR = 3_600_000;

describeEachEngine('tracking events', (engine) => {
  let server: TestServer;
  let api: TrackingApi;
  let owner: SignedIn;
  let watcher: SignedIn;
  let positionOnly: SignedIn;
  let stranger: SignedIn;
  let admin: SignedIn;
  let device: number;
  let second: number;
  let ids: number[];

  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off' });
    api = (await trackingInstance(server)).tracking.api;
    owner = await signIn(server, 'owner@example.com');
    watcher = await signIn(server, 'watcher@example.com');
    positionOnly = await signIn(server, 'position-only@example.com');
    stranger = await signIn(server, 'stranger@example.com');
    admin = await signIn(server, 'admin@example.com', { administrator: true });
    device = await createDevice(server, owner, 'ev-1');
    second = await createDevice(server, owner, 'ev-2');
    await share(server, owner, device, watcher.email, { events: true });
    await share(server, owner, device, positionOnly.email, { position: true });
    // Stored out of order; two at the same instant.
    ids = await api.storeEvents([
      { type: 'deviceOnline', eventTime: T0 + 2 * HOUR, deviceId: device },
      { type: 'alarm', eventTime: T0, deviceId: device, positionId: 77, attributes: { alarm: 'sos' } },
      { type: 'geofenceEnter', eventTime: T0 + HOUR, deviceId: second, geofenceId: 5 },
      { type: 'ignitionOn', eventTime: T0 + HOUR, deviceId: device },
      { type: 'maintenance', eventTime: T0 + 3 * HOUR, deviceId: second, maintenanceId: 9 },
    ]);
  });
  after(() => server.dispose());

  const events = (query: string, user: SignedIn) => get(server, `/api/events/${query}`, user);
  const range = (from: number, to: number) => `from=${encodeURIComponent(iso(from))}&to=${encodeURIComponent(iso(to))}`;
  const idsOf = (response: { json(): unknown }) => (response.json() as { id: number }[]).map((event) => event.id);

  describe('storage', () => {
    it('storeEvents returns ids in input order and stores every field', async () => {
      assert.equal(ids.length, 5);
      assert.deepEqual(ids, [...ids].sort((a, b) => a - b));
      const response = await events(`${ids[1]}`, owner);
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(response.json(), {
        id: ids[1],
        type: 'alarm',
        eventTime: iso(T0),
        deviceId: device,
        positionId: 77,
        geofenceId: null,
        maintenanceId: null,
        attributes: { alarm: 'sos' },
      });
      assert.equal((await events(`${ids[4]}`, owner)).json().maintenanceId, 9);
      assert.equal((await events(`${ids[2]}`, owner)).json().geofenceId, 5);
    });

    it('refuses unknown types and times that are not epoch milliseconds', async () => {
      await assert.rejects(api.storeEvents([{ type: 'teleported' as never, eventTime: T0, deviceId: device }]), TypeError);
      await assert.rejects(api.storeEvents([{ type: 'alarm', eventTime: Number.POSITIVE_INFINITY, deviceId: device }]), TypeError);
      assert.deepEqual(await api.storeEvents([]), []);
    });
  });

  describe('list', () => {
    it('one device, ascending by eventTime (ties by id), both bounds inclusive', async () => {
      const response = await events(`?deviceId=${device}&${range(T0, T0 + 2 * HOUR)}`, owner);
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(idsOf(response), [ids[1], ids[3], ids[0]]);
      assert.deepEqual(idsOf(await events(`?deviceId=${device}&${range(T0 + 1, T0 + 2 * HOUR - 1)}`, owner)), [ids[3]]);
    });

    it('without deviceId: every device the caller may see events of', async () => {
      assert.deepEqual(idsOf(await events(`?${range(T0, T0 + 3 * HOUR)}`, owner)), [ids[1], ids[2], ids[3], ids[0], ids[4]]);
      assert.deepEqual(idsOf(await events(`?${range(T0, T0 + 3 * HOUR)}`, watcher)), [ids[1], ids[3], ids[0]]);
      assert.deepEqual(idsOf(await events(`?${range(T0, T0 + 3 * HOUR)}`, positionOnly)), []);
      assert.deepEqual(idsOf(await events(`?${range(T0, T0 + 3 * HOUR)}`, stranger)), []);
    });

    it('filters by type, repeatable', async () => {
      assert.deepEqual(idsOf(await events(`?type=alarm&${range(T0, T0 + 3 * HOUR)}`, owner)), [ids[1]]);
      assert.deepEqual(idsOf(await events(`?type=alarm&type=maintenance&${range(T0, T0 + 3 * HOUR)}`, owner)), [ids[1], ids[4]]);
    });

    it('one device needs the events permission: 403 for others, 404 for no such device; administrators see all', async () => {
      assertError(await events(`?deviceId=${device}&${range(T0, T0 + 3 * HOUR)}`, positionOnly), 403, 'PERMISSION_REQUIRED');
      assertError(await events(`?deviceId=${second}&${range(T0, T0 + 3 * HOUR)}`, watcher), 403, 'FORBIDDEN');
      assertError(await events(`?deviceId=${device}&${range(T0, T0 + 3 * HOUR)}`, stranger), 403, 'FORBIDDEN');
      assertError(await events(`?deviceId=999999&${range(T0, T0 + 3 * HOUR)}`, owner), 404, 'NOT_FOUND');
      assert.deepEqual(idsOf(await events(`?deviceId=${second}&${range(T0, T0 + 3 * HOUR)}`, admin)), [ids[2], ids[4]]);
    });

    it('from and to default to the 24 hours before now', async () => {
      const now = Date.now();
      const [recent, old, future] = await api.storeEvents([
        { type: 'deviceMoving', eventTime: now - HOUR, deviceId: second },
        { type: 'deviceStopped', eventTime: now - 25 * HOUR, deviceId: second },
        { type: 'deviceStopped', eventTime: now + HOUR, deviceId: second },
      ]);
      assert.deepEqual(idsOf(await events(`?deviceId=${second}`, owner)), [recent]);
      assert.deepEqual(idsOf(await events(`?deviceId=${second}&from=${encodeURIComponent(iso(now - 26 * HOUR))}`, owner)), [old, recent]);
      assert.deepEqual(idsOf(await events(`?deviceId=${second}&to=${encodeURIComponent(iso(now + 2 * HOUR))}`, owner)), [recent, future]);
    });

    it(`answers at most ${EVENT_LIMIT}: the first ones in time`, async () => {
      const busy = await createDevice(server, owner, 'ev-busy');
      const stored = await api.storeEvents(Array.from({ length: EVENT_LIMIT + 5 }, (_, index) => ({ type: 'alarm' as const, eventTime: T0 + index, deviceId: busy })));
      const response = await events(`?deviceId=${busy}&${range(T0, T0 + HOUR)}`, owner);
      assert.deepEqual(idsOf(response), stored.slice(0, EVENT_LIMIT));
    });

    it('unknown types and malformed parameters are 400', async () => {
      assertError(await events('?type=teleported', owner), 400, 'VALIDATION_FAILED', /\/query\/type/);
      assertError(await events('?type=', owner), 400, 'VALIDATION_FAILED');
      assertError(await events('?deviceId=x', owner), 400, 'VALIDATION_FAILED');
      assertError(await events('?from=yesterday', owner), 400, 'VALIDATION_FAILED');
      assertError(await events(`?${range(T0 + 1, T0)}`, owner), 400, 'VALIDATION_FAILED', /\/query\/to/);
      assertError(await events(`?from=${encodeURIComponent(iso(Date.now() + HOUR))}`, owner), 400, 'VALIDATION_FAILED', /\/query\/from/);
      assertError(await events(`?${EVENT_TYPES.map(() => 'type=alarm').join('&')}&type=alarm`, owner), 400, 'VALIDATION_FAILED');
    });

    it('needs a bearer token', async () => {
      assertError(await server.app.inject({ url: '/api/events/' }), 401, 'UNAUTHORIZED');
      assertError(await server.app.inject({ url: `/api/events/${ids[0]}` }), 401, 'UNAUTHORIZED');
    });
  });

  describe('get by id', () => {
    it('needs the events permission on its device: 403; no such event: 404', async () => {
      assert.equal((await events(`${ids[0]}`, watcher)).statusCode, 200);
      assertError(await events(`${ids[0]}`, positionOnly), 403, 'PERMISSION_REQUIRED');
      assertError(await events(`${ids[0]}`, stranger), 403, 'FORBIDDEN');
      assertError(await events(`${ids[2]}`, watcher), 403, 'FORBIDDEN');
      assert.equal((await events(`${ids[2]}`, admin)).statusCode, 200);
      assertError(await events('999999999', owner), 404, 'NOT_FOUND');
      assertError(await events('0', owner), 400, 'VALIDATION_FAILED');
      assertError(await events('abc', owner), 400, 'VALIDATION_FAILED');
    });
  });
});
