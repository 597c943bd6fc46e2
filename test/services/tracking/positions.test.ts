import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { DeviceAccessApi } from '../../../src/services/devices/access.ts';
import type { TrackingApi } from '../../../src/services/tracking/api.ts';
import { HISTORY_LIMIT, HISTORY_PAGE_SIZE } from '../../../src/services/tracking/positions/service.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { assertError, signIn } from '../../support/api.ts';
import { T0, iso, position, servedPosition } from '../../factories/position.ts';
import { createDevice, get, share, trackingInstance } from './support/tracking.ts';
import type { SignedIn } from '../../support/api.ts';

const MINUTE = 60_000;

describeEachEngine('tracking positions', (engine) => {
  let server: TestServer;
  let api: TrackingApi;
  let devicesApi: DeviceAccessApi;
  let owner: SignedIn;
  let viewer: SignedIn;
  let blind: SignedIn;
  let stranger: SignedIn;
  let admin: SignedIn;
  let device: number;
  let other: number;

  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off' });
    const instance = await trackingInstance(server);
    api = instance.tracking.api;
    devicesApi = instance.devices;
    owner = await signIn(server, 'owner@example.com');
    viewer = await signIn(server, 'viewer@example.com');
    blind = await signIn(server, 'blind@example.com');
    stranger = await signIn(server, 'stranger@example.com');
    admin = await signIn(server, 'admin@example.com', { administrator: true });
    device = await createDevice(server, owner, 'pos-1');
    other = await createDevice(server, owner, 'pos-2');
    await share(server, owner, device, viewer.email, { position: true });
    await share(server, owner, device, blind.email, { events: true, geofences: true });
  });
  after(() => server.dispose());

  const positions = (query: string, user: SignedIn, headers?: Record<string, string>) => get(server, `/api/positions/${query}`, user, headers);
  const history = (deviceId: number, from: number, to: number, user: SignedIn = owner, headers?: Record<string, string>) =>
    positions(`?deviceId=${deviceId}&from=${encodeURIComponent(iso(from))}&to=${encodeURIComponent(iso(to))}`, user, headers);
  const remove = (query: string, user: SignedIn) => server.app.inject({ method: 'DELETE', url: `/api/positions/${query}`, headers: user.authorization });

  describe('storage', () => {
    it('storePositions returns the new ids in input order and stores every field', async () => {
      const batch = [position(device, 2 * MINUTE), position(device, 0, { address: 'Unter den Linden 1', attributes: { ignition: true, fuel: 12.5 } }), position(device, MINUTE, { valid: false, protocol: null })];
      const ids = await api.storePositions(batch);
      assert.equal(ids.length, 3);
      assert.ok(ids[0]! < ids[1]! && ids[1]! < ids[2]!, 'ascending in input order');

      const response = await positions(`?id=${ids[0]}&id=${ids[1]}&id=${ids[2]}`, owner);
      assert.equal(response.statusCode, 200, response.body);
      assert.match(String(response.headers['content-type']), /^application\/json/);
      const stored = response.json() as Record<string, unknown>[];
      assert.deepEqual(
        stored.map((row) => row.id),
        ids,
      );
      assert.deepEqual(stored[1], servedPosition(batch[1]!, ids[1]!));
      assert.equal(stored[2]!.valid, false);
      assert.equal(stored[2]!.protocol, null);
    });

    it('keeps double precision for coordinates and an empty batch stores nothing', async () => {
      const [id] = await api.storePositions([position(other, 0, { latitude: -33.868819716, longitude: 151.209295523, deviceTime: null })]);
      const [stored] = (await positions(`?id=${id}`, owner)).json();
      assert.equal(stored.latitude, -33.868819716);
      assert.equal(stored.longitude, 151.209295523);
      assert.equal(stored.deviceTime, null);
      assert.deepEqual(await api.storePositions([]), []);
    });

    it('keeps text exactly, whatever characters it holds (PostgreSQL receives it as arrays)', async () => {
      const tricky = 'NULL, "quoted" \\ {brace} \u00e9\u{1F600} \n end';
      const [id] = await api.storePositions([position(other, 1, { address: 'NULL', protocol: '{"x"}', attributes: { text: tricky, nested: { list: [1, null, 'a,b'] } } })]);
      const [stored] = (await positions(`?id=${id}`, owner)).json();
      assert.equal(stored.address, 'NULL');
      assert.equal(stored.protocol, '{"x"}');
      assert.deepEqual(stored.attributes, { text: tricky, nested: { list: [1, null, 'a,b'] } });
    });

    it('stores a large batch in one call (several statements on SQLite) with ids in order', async () => {
      const batch = Array.from({ length: 4_500 }, (_, index) => position(other, -(index + 1) * 1000));
      const ids = await api.storePositions(batch);
      assert.equal(ids.length, batch.length);
      assert.deepEqual(ids, [...ids].sort((a, b) => a - b));
      const sample = (await positions(`?id=${ids[0]}&id=${ids[2_222]}&id=${ids[4_499]}`, owner)).json();
      assert.deepEqual(
        sample.map((row: { fixTime: string }) => row.fixTime),
        [iso(T0 - 1000), iso(T0 - 2_223_000), iso(T0 - 4_500_000)],
      );
    });

    it('refuses numbers that are not finite and protocols that are too long, storing nothing of the batch', async () => {
      const before = (await history(device, T0 - 10 * MINUTE, T0 + 10 * MINUTE)).json().length;
      await assert.rejects(api.storePositions([position(device, 3 * MINUTE), position(device, 4 * MINUTE, { latitude: Number.NaN })]), TypeError);
      await assert.rejects(api.storePositions([position(device, 5 * MINUTE, { protocol: 'x'.repeat(33) })]), TypeError);
      assert.equal((await history(device, T0 - 10 * MINUTE, T0 + 10 * MINUTE)).json().length, before);
    });
  });

  describe('latest position', () => {
    let fresh: number;
    before(async () => {
      fresh = await createDevice(server, owner, 'pos-latest');
    });

    it('a device without positions has no latest', async () => {
      const response = await positions(`?deviceId=${fresh}`, owner);
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json(), []);
    });

    it('moves to the newest fix of a batch and is passed to the devices module (positionId, lastUpdate)', async () => {
      const ids = await api.storePositions([position(fresh, MINUTE), position(fresh, 3 * MINUTE), position(fresh, 2 * MINUTE)]);
      const [latest] = (await positions(`?deviceId=${fresh}`, owner)).json();
      assert.equal(latest.id, ids[1]);
      const [record] = await devicesApi.getDevices([fresh]);
      assert.equal(record?.positionId, ids[1]);
      assert.equal(record?.lastUpdate, T0 + 3 * MINUTE + 500);
      const view = (await get(server, `/api/devices/${fresh}`, owner)).json();
      assert.equal(view.positionId, ids[1]);
    });

    it('an out-of-order position is stored but does not move the latest', async () => {
      const [late] = await api.storePositions([position(fresh, 2.5 * MINUTE)]);
      const [latest] = (await positions(`?deviceId=${fresh}`, owner)).json();
      assert.notEqual(latest.id, late);
      assert.equal(latest.fixTime, iso(T0 + 3 * MINUTE));
      assert.equal((await positions(`?id=${late}`, owner)).json().length, 1, 'stored');
      const [record] = await devicesApi.getDevices([fresh]);
      assert.equal(record?.positionId, latest.id);
    });

    it('an equal fixTime arriving later becomes the latest', async () => {
      const [same] = await api.storePositions([position(fresh, 3 * MINUTE, { latitude: 1 })]);
      assert.equal((await positions(`?deviceId=${fresh}`, owner)).json()[0].id, same);
    });

    it('without parameters: the latest of every device the caller may see positions of, by device', async () => {
      const mine = (await positions('', owner)).json();
      assert.deepEqual(
        mine.map((row: { deviceId: number }) => row.deviceId),
        [device, other, fresh],
      );
      const shared = (await positions('', viewer)).json();
      assert.deepEqual(
        shared.map((row: { deviceId: number }) => row.deviceId),
        [device],
      );
      assert.deepEqual((await positions('', blind)).json(), [], 'shared without the position permission');
      assert.deepEqual((await positions('', stranger)).json(), []);
      assert.deepEqual((await positions('', admin)).json(), [], "an administrator's own list: no devices of theirs");
    });
  });

  describe('history', () => {
    let track: number;
    let ids: number[];
    before(async () => {
      track = await createDevice(server, owner, 'pos-history');
      // Stored out of order, with two fixes at the same time.
      ids = await api.storePositions([
        position(track, 4 * MINUTE),
        position(track, 0),
        position(track, 2 * MINUTE),
        position(track, MINUTE),
        position(track, 2 * MINUTE, { latitude: 10 }),
        position(track, 3 * MINUTE),
      ]);
    });

    it('is ordered by fixTime ascending (ties by id) with both bounds inclusive', async () => {
      const response = await history(track, T0 + MINUTE, T0 + 3 * MINUTE);
      assert.equal(response.statusCode, 200, response.body);
      assert.match(String(response.headers['content-type']), /^application\/json/);
      assert.deepEqual(
        response.json().map((row: { id: number }) => row.id),
        [ids[3], ids[2], ids[4], ids[5]],
      );
    });

    it('bounds one millisecond inside leave out the fixes on them', async () => {
      const rows = (await history(track, T0 + MINUTE + 1, T0 + 3 * MINUTE - 1)).json();
      assert.deepEqual(
        rows.map((row: { id: number }) => row.id),
        [ids[2], ids[4]],
      );
    });

    it('from = to is one instant; an empty range is an empty array', async () => {
      assert.equal((await history(track, T0 + 2 * MINUTE, T0 + 2 * MINUTE)).json().length, 2);
      assert.deepEqual((await history(track, T0 + 10 * MINUTE, T0 + 20 * MINUTE)).json(), []);
    });

    it('accepts time zone offsets in the bounds', async () => {
      const response = await positions(`?deviceId=${track}&from=${encodeURIComponent('2025-03-01T01:01:00+01:00')}&to=${encodeURIComponent('2025-03-01T01:02:00+01:00')}`, owner);
      assert.equal(response.json().length, 3);
    });

    it('only for users with the position permission', async () => {
      await share(server, owner, track, viewer.email, { position: true });
      await share(server, owner, track, blind.email, { events: true });
      assert.equal((await history(track, T0, T0 + 4 * MINUTE, viewer)).json().length, 6);
      assertError(await history(track, T0, T0 + 4 * MINUTE, blind), 403, 'PERMISSION_REQUIRED');
      assertError(await history(track, T0, T0 + 4 * MINUTE, stranger), 403, 'FORBIDDEN');
      assert.equal((await history(track, T0, T0 + 4 * MINUTE, admin)).json().length, 6, 'administrators see every device');
      assertError(await history(999_999, T0, T0 + 4 * MINUTE, owner), 404, 'NOT_FOUND');
      assertError(await history(999_999, T0, T0 + 4 * MINUTE, stranger), 404, 'NOT_FOUND');
    });

    it('exports GPX when asked with Accept: application/gpx+xml', async () => {
      const response = await history(track, T0, T0 + 4 * MINUTE, owner, { accept: 'application/gpx+xml' });
      assert.equal(response.statusCode, 200);
      assert.match(String(response.headers['content-type']), /^application\/gpx\+xml/);
      assert.match(String(response.headers['content-disposition']), new RegExp(`attachment; filename="device-${track}-positions.gpx"`));
      assert.match(response.body, /^<\?xml version="1.0" encoding="UTF-8"\?>\n<gpx version="1.1"/);
      assert.match(response.body, /<trk><name>Tracker pos-history<\/name><trkseg>/);
      const points = [...response.body.matchAll(/<trkpt lat="([^"]+)" lon="([^"]+)"><ele>34<\/ele><time>([^<]+)<\/time>/g)];
      assert.equal(points.length, 6);
      assert.deepEqual(
        points.map((match) => match[3]),
        [0, 1, 2, 2, 3, 4].map((minutes) => iso(T0 + minutes * MINUTE)),
      );
      assert.match(response.body, /<gpxtpx:speed>5\.144\d*<\/gpxtpx:speed><gpxtpx:course>90<\/gpxtpx:course>/, 'speed in m/s');
      assert.match(response.body, /<\/trkseg><\/trk>\n<\/gpx>\n$/);
    });

    it('exports CSV with a header row when asked with Accept: text/csv', async () => {
      const response = await history(track, T0, T0 + MINUTE, owner, { accept: 'text/csv' });
      assert.equal(response.statusCode, 200);
      assert.match(String(response.headers['content-type']), /^text\/csv/);
      assert.match(String(response.headers['content-disposition']), /filename="device-\d+-positions.csv"/);
      const lines = response.body.split('\r\n');
      assert.equal(lines[0], 'id,deviceId,protocol,serverTime,deviceTime,fixTime,valid,latitude,longitude,altitude,speed,course,accuracy,address,attributes');
      assert.equal(lines[1], `${ids[1]},${track},osmand,${iso(T0 + 500)},${iso(T0)},${iso(T0)},true,52.5,13.4,34,10,90,5,,"{""sat"":7}"`);
      assert.equal(lines.length, 4, 'two rows and the final line break');
    });

    it('picks the format by q-value and answers JSON for anything else', async () => {
      const csv = await history(track, T0, T0, owner, { accept: 'application/json;q=0.5, text/csv' });
      assert.match(String(csv.headers['content-type']), /^text\/csv/);
      const json = await history(track, T0, T0, owner, { accept: 'text/html' });
      assert.match(String(json.headers['content-type']), /^application\/json/);
      assert.equal(json.json().length, 1);
    });

    it('the latest forms answer JSON whatever the Accept header', async () => {
      const response = await positions(`?deviceId=${track}`, owner, { accept: 'text/csv' });
      assert.match(String(response.headers['content-type']), /^application\/json/);
    });
  });

  describe('query validation', () => {
    it('from without to, and to without from, are 400', async () => {
      assertError(await positions(`?deviceId=${device}&from=${iso(T0)}`, owner), 400, 'VALIDATION_FAILED', /\/query\/to/);
      assertError(await positions(`?deviceId=${device}&to=${iso(T0)}`, owner), 400, 'VALIDATION_FAILED', /\/query\/from/);
    });

    it('a range needs a deviceId, cannot be combined with id, and must not end before it starts', async () => {
      assertError(await positions(`?from=${iso(T0)}&to=${iso(T0)}`, owner), 400, 'VALIDATION_FAILED', /deviceId/);
      assertError(await positions(`?deviceId=${device}&id=1&from=${iso(T0)}&to=${iso(T0)}`, owner), 400, 'VALIDATION_FAILED', /\/query\/id/);
      assertError(await history(device, T0 + 1, T0), 400, 'VALIDATION_FAILED', /\/query\/to/);
    });

    it('malformed values are 400', async () => {
      assertError(await positions('?deviceId=abc', owner), 400, 'VALIDATION_FAILED');
      assertError(await positions('?deviceId=0', owner), 400, 'VALIDATION_FAILED');
      assertError(await positions(`?deviceId=${device}&from=yesterday&to=${iso(T0)}`, owner), 400, 'VALIDATION_FAILED', /from/);
      assertError(await positions(`?deviceId=${device}&from=2025-03-01&to=${iso(T0)}`, owner), 400, 'VALIDATION_FAILED', /from/);
      assertError(await positions(`?${Array.from({ length: 101 }, (_, index) => `id=${index + 1}`).join('&')}`, owner), 400, 'VALIDATION_FAILED');
    });

    it('needs a bearer token', async () => {
      const response = await server.app.inject({ method: 'GET', url: '/api/positions/' });
      assertError(response, 401, 'UNAUTHORIZED');
    });
  });

  describe('by id', () => {
    it('leaves out positions the caller may not see, without telling them apart from missing ones', async () => {
      const [own] = await api.storePositions([position(device, 7 * MINUTE)]);
      const strangersDevice = await createDevice(server, stranger, 'pos-stranger');
      const [foreign] = await api.storePositions([position(strangersDevice, 0)]);
      const rows = (await positions(`?id=${foreign}&id=${own}&id=999999999`, owner)).json();
      assert.deepEqual(
        rows.map((row: { id: number }) => row.id),
        [own],
      );
      assert.deepEqual((await positions(`?id=${own}`, blind)).json(), [], 'shared without the position permission');
      assert.deepEqual((await positions(`?id=${own}`, viewer)).json().length, 1);
      assert.deepEqual(
        (await positions(`?id=${foreign}&id=${own}`, admin)).json().map((row: { id: number }) => row.id),
        [own, foreign],
      );
      assert.deepEqual((await positions(`?id=${own}&deviceId=${other}`, owner)).json(), [], 'restricted to deviceId');
    });
  });

  describe('range limit', () => {
    it(`serves ${HISTORY_LIMIT} positions over several pages, and one more is 400 RANGE_TOO_LARGE`, async () => {
      const big = await createDevice(server, owner, 'pos-big');
      await api.storePositions(Array.from({ length: HISTORY_LIMIT }, (_, index) => position(big, index * 1000)));
      const to = T0 + (HISTORY_LIMIT - 1) * 1000;
      const response = await history(big, T0, to);
      assert.equal(response.statusCode, 200);
      const rows = response.json() as { fixTime: string }[];
      assert.equal(rows.length, HISTORY_LIMIT);
      assert.ok(HISTORY_LIMIT > 2 * HISTORY_PAGE_SIZE);
      for (const index of [0, HISTORY_PAGE_SIZE - 1, HISTORY_PAGE_SIZE, HISTORY_LIMIT - 1]) assert.equal(rows[index]!.fixTime, iso(T0 + index * 1000));

      await api.storePositions([position(big, HISTORY_LIMIT * 1000)]);
      assertError(await history(big, T0, to + 1000), 400, 'RANGE_TOO_LARGE', /narrow/);
      assert.equal((await history(big, T0 + 1000, to + 1000)).json().length, HISTORY_LIMIT, 'a narrower range is served');
    });
  });

  describe('deletion', () => {
    let doomed: number;
    let ids: number[];
    before(async () => {
      doomed = await createDevice(server, owner, 'pos-delete');
      await share(server, owner, doomed, viewer.email, { position: true, events: true });
      ids = await api.storePositions([0, 1, 2, 3, 4].map((minutes) => position(doomed, minutes * MINUTE)));
    });
    const rangeQuery = (deviceId: number, from: number, to: number) => `?deviceId=${deviceId}&from=${encodeURIComponent(iso(from))}&to=${encodeURIComponent(iso(to))}`;
    const remaining = async () => (await history(doomed, T0 - MINUTE, T0 + 10 * MINUTE)).json().map((row: { id: number }) => row.id);

    it('needs deviceId, from and to', async () => {
      assertError(await remove(`?deviceId=${doomed}`, owner), 400, 'VALIDATION_FAILED');
      assertError(await remove(`?deviceId=${doomed}&from=${iso(T0)}`, owner), 400, 'VALIDATION_FAILED');
      assertError(await remove(`?from=${iso(T0)}&to=${iso(T0)}`, owner), 400, 'VALIDATION_FAILED');
      assertError(await remove(rangeQuery(doomed, T0 + 1, T0), owner), 400, 'VALIDATION_FAILED');
      assert.equal((await remaining()).length, 5);
    });

    it('is refused to shared users (403), strangers (403) and for unknown devices (404), deleting nothing', async () => {
      assertError(await remove(rangeQuery(doomed, T0, T0 + 10 * MINUTE), viewer), 403, 'FORBIDDEN', /owner/);
      assertError(await remove(rangeQuery(doomed, T0, T0 + 10 * MINUTE), stranger), 403, 'FORBIDDEN');
      assertError(await remove(rangeQuery(999_999, T0, T0 + 10 * MINUTE), owner), 404, 'NOT_FOUND');
      assert.equal((await remaining()).length, 5);
    });

    it('deletes the inclusive range for the owner; events raised by those positions lose their positionId', async () => {
      const [eventId] = await api.storeEvents([{ type: 'alarm', eventTime: T0 + MINUTE, deviceId: doomed, positionId: ids[1], attributes: { alarm: 'sos' } }]);
      const response = await remove(rangeQuery(doomed, T0 + MINUTE, T0 + 2 * MINUTE), owner);
      assert.equal(response.statusCode, 204, response.body);
      assert.deepEqual(await remaining(), [ids[0], ids[3], ids[4]]);
      const event = (await get(server, `/api/events/${eventId}`, owner)).json();
      assert.equal(event.positionId, null);
      assert.deepEqual(event.attributes, { alarm: 'sos' });
    });

    it('deleting the latest position makes the newest remaining one the latest, also for the devices module', async () => {
      assert.equal((await remove(rangeQuery(doomed, T0 + 4 * MINUTE, T0 + 4 * MINUTE), owner)).statusCode, 204);
      assert.equal((await positions(`?deviceId=${doomed}`, owner)).json()[0].id, ids[3]);
      assert.equal((await devicesApi.getDevices([doomed]))[0]?.positionId, ids[3]);
    });

    it('administrators may delete too; deleting everything leaves no latest position', async () => {
      assert.equal((await remove(rangeQuery(doomed, T0 - MINUTE, T0 + 10 * MINUTE), admin)).statusCode, 204);
      assert.deepEqual(await remaining(), []);
      assert.deepEqual((await positions(`?deviceId=${doomed}`, owner)).json(), []);
      assert.equal((await devicesApi.getDevices([doomed]))[0]?.positionId, null);
    });

    it('read-only accounts may not delete', async () => {
      const readonly = await signIn(server, 'readonly-owner@example.com');
      const own = await createDevice(server, readonly, 'pos-readonly');
      const [id] = await api.storePositions([position(own, 0)]);
      const flagged = await server.app.inject({ method: 'PUT', url: `/api/auth/users/${readonly.userId}`, headers: admin.authorization, payload: { readonly: true } });
      assert.equal(flagged.statusCode, 200);
      assertError(await remove(rangeQuery(own, T0, T0), readonly), 403, 'USER_READONLY', /read-only/);
      assert.equal((await positions(`?id=${id}`, readonly)).json().length, 1);
    });
  });

  describe('device deletion', () => {
    it('removes the positions and events of the device', async () => {
      const gone = await createDevice(server, owner, 'pos-gone');
      const [positionId] = await api.storePositions([position(gone, 0)]);
      const [eventId] = await api.storeEvents([{ type: 'deviceOnline', eventTime: Date.now(), deviceId: gone }]);
      assert.equal((await server.app.inject({ method: 'DELETE', url: `/api/devices/${gone}`, headers: owner.authorization })).statusCode, 204);
      await server.outbox!.drainNow();
      assert.deepEqual((await positions(`?id=${positionId}`, admin)).json(), []);
      assertError(await get(server, `/api/events/${eventId}`, admin), 404, 'NOT_FOUND');
      const left = await server.database!.db.selectFrom('positions').select('id').where('device_id', '=', gone).execute();
      assert.deepEqual(left, []);
      const latest = await server.database!.db.selectFrom('latest_positions').selectAll().where('device_id', '=', gone).execute();
      assert.deepEqual(latest, []);
    });
  });
});
