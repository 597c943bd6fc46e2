// Segmentation at ingestion (DESIGN §5.9, docs/reports.md): positions sent through the device listeners become trips,
// stops and hourly sums after the acknowledgement; a late position recomputes its span to the same rows as a rebuild;
// the state survives a new instance; a window's trips are the same whatever window contains it; deleting a device
// deletes its rows; positions a read took before their hand-off are not taken again; a replay of the simulator's traffic gives what a rebuild gives.
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { Kysely } from 'kysely';
import { request } from 'undici';
import { generatedRoute, runSimulation, simulatedIds } from '../../../../src/cli/simulate.ts';
import { osmAndQuery } from '../../../../src/services/tracking/protocols/osmand/simulator.ts';
import type { DeviceFix } from '../../../../src/services/tracking/protocols/simulated-tracker.ts';
import { localDeviceAttributes } from '../../../../src/services/devices/module.ts';
import { storedFromRow } from '../../../../src/services/tracking/ingest/rows.ts';
import { engineSettings } from '../../../../src/services/tracking/ingest/settings.ts';
import type { SegmentedPosition } from '../../../../src/services/tracking/reports/segmentation/machine.ts';
import { SegmentationRepository } from '../../../../src/services/tracking/reports/segmentation/repository.ts';
import { Segmentation } from '../../../../src/services/tracking/reports/segmentation/service.ts';
import type { TrackingTables } from '../../../../src/services/tracking/tables.ts';
import { systemClock } from '../../../../src/services/tracking/throttled-writer.ts';
import { describeEachEngine } from '../../../support/engines.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestLogin, TestServer } from '../../../support/server.ts';
import { registerDevice, waitFor } from '../ingest/support.ts';

const MINUTE = 60_000;
const DAY = 86_400_000;
const T0 = Date.parse('2025-03-03T08:00:00.000Z'); // a Monday
/** Traccar's trip test device. */
const TRACCAR_TEST = { minimalTripDistance: 500, minimalTripDuration: 300, minimalParkingDuration: 180, minimalNoDataDuration: 900 };

/** A report `minutes` after `start` at `speed` knots with the device's odometer (metres), moving north with it. */
function fix(start: number, minutes: number, speed: number, odometer: number): DeviceFix {
  return { time: new Date(start + minutes * MINUTE), latitude: 52 + odometer / 111_195, longitude: 13, altitude: 30, speed, course: 0, valid: true, odometer: 100_000 + odometer };
}

/** Two trips in two hours: 08:02–08:05, parked, 09:30–09:40, parked till 10:00. */
function twoTrips(start: number): DeviceFix[] {
  const fixes = [fix(start, 0, 0, 0), fix(start, 1, 0, 0), fix(start, 2, 10, 0), fix(start, 3, 10, 1000), fix(start, 4, 10, 2000), fix(start, 5, 0, 3000)];
  for (let minute = 15; minute <= 85; minute += 10) fixes.push(fix(start, minute, 0, 3000));
  for (let minute = 90; minute <= 100; minute++) fixes.push(fix(start, minute, minute === 100 ? 0 : 20, 3000 + (minute - 90) * 600));
  fixes.push(fix(start, 110, 0, 9000), fix(start, 120, 0, 9000));
  return fixes;
}

describeEachEngine('Segmentation at ingestion', (engine) => {
  let server: TestServer;
  let owner: TestLogin;
  let osmand: string;
  let db: Kysely<TrackingTables>;

  before(async () => {
    server = await startTestServer(engine, { REPORTS_SEGMENTATION_DELAY: '0' });
    owner = await server.login({ email: 'segmentation-owner@example.com' });
    osmand = `http://127.0.0.1:${await server.tracking!.ingestion.listen('osmand', 0)}`;
    db = server.database!.db as Kysely<TrackingTables>;
  });
  after(() => server.dispose());

  const send = async (uniqueId: string, fixes: readonly DeviceFix[]) => {
    for (const one of fixes) {
      const response = await request(`${osmand}/?${osmAndQuery(uniqueId, one)}`);
      await response.body.text();
      assert.equal(response.statusCode, 200);
    }
  };
  const settled = async () => {
    await server.tracking!.ingestion.pipeline.settled();
    await server.tracking!.segmentation.settled();
  };
  /** Every row segmentation wrote for the device, in order. */
  const rowsWithIds = async (deviceId: number) => ({
    trips: await db.selectFrom('trips').selectAll().where('device_id', '=', deviceId).orderBy('start_time').execute(),
    stops: await db.selectFrom('stops').selectAll().where('device_id', '=', deviceId).orderBy('start_time').execute(),
    hours: await db.selectFrom('summary_hours').selectAll().where('device_id', '=', deviceId).orderBy('hour_start').execute(),
  });
  type Rows = Awaited<ReturnType<typeof rowsWithIds>>;
  /** The rows without their ids (a rewrite gives new ones). */
  const withoutIds = ({ trips, stops, hours }: Rows) => ({ trips: trips.map(({ id: _id, ...row }) => row), stops: stops.map(({ id: _id, ...row }) => row), hours });
  const rowsOf = async (deviceId: number) => withoutIds(await rowsWithIds(deviceId));
  /** Segmentation as another instance (or this one restarted) runs it on the same database. */
  const newInstance = () =>
    new Segmentation({
      repository: new SegmentationRepository(db),
      deviceAttributes: localDeviceAttributes(server.database!),
      settings: engineSettings(server.config.eventDefaults),
      delayMs: 0,
      clock: systemClock,
      log: server.app.log,
    });
  const clock = (time: number) => new Date(Number(time)).toISOString().slice(11, 16);

  it('writes trips, stops and hourly sums after the acknowledgement, as Traccar counts them', async () => {
    const deviceId = await registerDevice(server, owner, 'seg-simple', TRACCAR_TEST);
    await send('seg-simple', twoTrips(T0));
    await settled();
    const { trips, stops, hours } = await rowsOf(deviceId);
    assert.deepEqual(trips.map((trip) => [clock(trip.start_time), clock(trip.end_time), trip.ongoing]), [['08:02', '08:05', 0], ['09:30', '09:40', 0]]);
    assert.deepEqual(trips.map((trip) => [trip.distance, trip.start_odometer, trip.end_odometer, trip.max_speed]), [[3000, 100_000, 103_000, 10], [6000, 103_000, 109_000, 20]]);
    assert.ok(Math.abs(Number(trips[0]?.average_speed) - 32.4) < 0.01);
    assert.deepEqual(stops.map((stop) => [clock(stop.start_time), clock(stop.end_time), stop.ongoing]), [['08:00', '08:02', 0], ['08:05', '09:30', 0], ['09:40', '10:00', 1]]);
    assert.deepEqual(hours.map((hour) => [clock(hour.hour_start), Number(hour.positions), hour.distance]), [['08:00', 11, 3000], ['09:00', 15, 6000], ['10:00', 1, 0]]);
    const [state] = await db.selectFrom('motion_states').selectAll().where('device_id', '=', deviceId).execute();
    assert.equal(Number(state?.fix_time), T0 + 120 * MINUTE);
  });

  it('a late position recomputes only its span, to the rows a rebuild gives', async () => {
    const deviceId = await registerDevice(server, owner, 'seg-late', TRACCAR_TEST);
    const fixes = twoTrips(T0);
    const late = fixes.findIndex((one) => one.time.getTime() === T0 + 95 * MINUTE);
    await send('seg-late', [...fixes.slice(0, late), ...fixes.slice(late + 1)]);
    await settled();
    const before = await rowsWithIds(deviceId);
    await send('seg-late', [fixes[late] as DeviceFix]);
    await settled();
    const live = await rowsWithIds(deviceId);
    // The first trip and its stops lie before the late position's hour: they were not rewritten.
    assert.deepEqual(live.trips[0], before.trips[0]);
    assert.deepEqual(live.stops.slice(0, 1), before.stops.slice(0, 1));
    assert.equal(live.hours.length, 3);
    await server.tracking!.segmentation.rebuild([deviceId], undefined);
    assert.deepEqual(await rowsOf(deviceId), withoutIds(live));
  });

  it('a new instance continues a device from its durable state (a restart in the middle)', async () => {
    const deviceId = await registerDevice(server, owner, 'seg-restart', TRACCAR_TEST);
    const fixes = twoTrips(T0);
    await send('seg-restart', fixes.slice(0, 12));
    await settled();
    // This instance stops segmenting; the positions keep arriving.
    await server.tracking!.segmentation.stop();
    await send('seg-restart', fixes.slice(12));
    await server.tracking!.ingestion.pipeline.settled();
    const restarted = newInstance();
    await restarted.start();
    await restarted.settled();
    const live = await rowsOf(deviceId);
    assert.equal(live.trips.length, 2);
    await restarted.rebuild([deviceId], undefined);
    assert.deepEqual(await rowsOf(deviceId), live);
    await restarted.stop();
    await server.tracking!.segmentation.start();
  });

  it('two instances catching up one device at once write it once (a lock per device)', async () => {
    const deviceId = await registerDevice(server, owner, 'seg-two', TRACCAR_TEST);
    await server.tracking!.segmentation.stop();
    await send('seg-two', twoTrips(T0));
    await server.tracking!.ingestion.pipeline.settled();
    const instances = [newInstance(), newInstance()];
    await Promise.all(instances.map((instance) => instance.start()));
    await Promise.all(instances.map((instance) => instance.settled()));
    const live = await rowsOf(deviceId);
    assert.equal(live.trips.length, 2);
    await instances[0]!.rebuild([deviceId], undefined);
    assert.deepEqual(await rowsOf(deviceId), live);
    await Promise.all(instances.map((instance) => instance.stop()));
    await server.tracking!.segmentation.start();
  });

  it('positions a read took before they were handed over are not taken again (no rewind, no second read)', async () => {
    const deviceId = await registerDevice(server, owner, 'seg-ahead', TRACCAR_TEST);
    await server.tracking!.segmentation.stop();
    const fixes = twoTrips(T0);
    await send('seg-ahead', fixes.slice(0, 9));
    await server.tracking!.ingestion.pipeline.settled();
    const stored = async () => (await db.selectFrom('positions').selectAll().where('device_id', '=', deviceId).orderBy('fix_time').orderBy('id').execute()).map((row) => storedFromRow(row) as SegmentedPosition);
    const instance = newInstance();
    // The first three are handed over; the read of this first round takes all nine, the first trip closed.
    instance.positionsStored((await stored()).slice(0, 3));
    await instance.settled();
    const [firstTrip] = (await rowsWithIds(deviceId)).trips;
    assert.equal(firstTrip?.ongoing, 0);
    // The other six are handed over late: a rewind would rewrite the first trip (a new id).
    instance.positionsStored((await stored()).slice(3));
    await instance.settled();
    assert.deepEqual((await rowsWithIds(deviceId)).trips[0], firstTrip);
    await send('seg-ahead', fixes.slice(9));
    await server.tracking!.ingestion.pipeline.settled();
    instance.positionsStored((await stored()).slice(9));
    await instance.settled();
    const live = await rowsWithIds(deviceId);
    assert.deepEqual(live.trips[0], firstTrip);
    assert.equal(live.trips.length, 2);
    await instance.rebuild([deviceId], undefined);
    assert.deepEqual(await rowsOf(deviceId), withoutIds(live));
    await instance.stop();
    await server.tracking!.segmentation.start();
  });

  it('the trips overlapping a day are those of its week and month, whole and the same', async () => {
    const deviceId = await registerDevice(server, owner, 'seg-windows', TRACCAR_TEST);
    // A trip each day at 08:00, and one from 23:50 on Wednesday to 00:10 on Thursday.
    const fixes: DeviceFix[] = [];
    for (let day = 0; day < 5; day++) fixes.push(...twoTrips(T0 + day * DAY).slice(0, 7));
    const night = T0 + 2 * DAY + 15 * 60 * MINUTE + 50 * MINUTE;
    fixes.push(fix(night, 0, 0, 0));
    for (let minute = 1; minute <= 20; minute++) fixes.push(fix(night, minute, 20, minute * 600));
    fixes.push(fix(night, 21, 0, 12_000), fix(night, 40, 0, 12_000));
    fixes.push(...twoTrips(T0 + 3 * DAY + 2 * 60 * MINUTE).slice(0, 7));
    fixes.sort((a, b) => a.time.getTime() - b.time.getTime());
    await send('seg-windows', fixes);
    await settled();
    const overlapping = (from: number, to: number) =>
      db.selectFrom('trips').selectAll().where('device_id', '=', deviceId).where('start_time', '<=', to).where('end_time', '>=', from).orderBy('start_time').execute();
    const wednesday = Date.parse('2025-03-05T00:00:00.000Z');
    const thursday = wednesday + DAY;
    const week = await overlapping(Date.parse('2025-03-03T00:00:00.000Z'), Date.parse('2025-03-10T00:00:00.000Z') - 1);
    const month = await overlapping(Date.parse('2025-03-01T00:00:00.000Z'), Date.parse('2025-04-01T00:00:00.000Z') - 1);
    assert.deepEqual(week, month);
    for (const day of [wednesday, thursday]) {
      const ofDay = await overlapping(day, day + DAY - 1);
      assert.deepEqual(ofDay, week.filter((trip) => trip.start_time <= day + DAY - 1 && trip.end_time >= day));
    }
    const crossing = week.filter((trip) => trip.start_time < thursday && trip.end_time > thursday);
    assert.equal(crossing.length, 1, 'the trip across midnight is one row');
    assert.deepEqual((await overlapping(wednesday, thursday - 1)).at(-1), crossing[0]);
    assert.deepEqual((await overlapping(thursday, thursday + DAY - 1))[0], crossing[0]);
  });

  it('deleting a device deletes its trips, stops, hours and state', async () => {
    const deviceId = await registerDevice(server, owner, 'seg-deleted', TRACCAR_TEST);
    await send('seg-deleted', twoTrips(T0));
    await settled();
    assert.equal((await rowsOf(deviceId)).trips.length, 2);
    const response = await server.app.inject({ method: 'DELETE', url: `/api/devices/${deviceId}`, headers: owner.authorization });
    assert.equal(response.statusCode, 204, response.body);
    const count = async () => {
      const counts = await Promise.all(
        (['trips', 'stops', 'summary_hours', 'motion_states', 'motion_checkpoints'] as const).map(async (table) =>
          Number((await db.selectFrom(table).select((eb) => eb.fn.countAll().as('count')).where('device_id', '=', deviceId).executeTakeFirstOrThrow()).count),
        ),
      );
      return counts.reduce((sum, value) => sum + value, 0);
    };
    await waitFor(count, (value) => value === 0, 'the deleted device rows to go');
  });

  it('a summary is the same whatever window cuts its hours: partial edges add up as whole hours do', async () => {
    const deviceId = await registerDevice(server, owner, 'seg-summary', TRACCAR_TEST);
    // 08:03 to 11:57 every 6 minutes: no odometer at first (measured), then one on two positions in three; `fuel`
    // falls (one refill), `hours` on every other position.
    for (let index = 0; index < 40; index++) {
      const reading: DeviceFix = {
        ...fix(T0 + 3 * MINUTE, index * 6, (index * 7) % 40, index * 450),
        odometer: index >= 5 && index % 3 !== 1 ? 100_000 + index * 500 : undefined,
      };
      const extra = new URLSearchParams({ fuel: String(index === 20 ? 90 : 80 - index * 0.5) });
      if (index % 2 === 0) extra.set('hours', String(index * 360_000));
      const response = await request(`${osmand}/?${osmAndQuery('seg-summary', reading)}&${extra}`);
      await response.body.text();
      assert.equal(response.statusCode, 200);
    }
    await settled();
    const summary = async (from: number, to: number) => {
      const response = await server.app.inject({ url: `/api/reports/summary?deviceId=${deviceId}&from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`, headers: owner.authorization });
      assert.equal(response.statusCode, 200, response.body);
      const [row, ...rest] = response.json() as Record<string, number>[];
      assert.ok(row);
      assert.deepEqual(rest, []);
      return row;
    };
    const close = (actual: number, expected: number, what: string) => assert.ok(Math.abs(actual - expected) < 1e-6, `${what}: ${actual} ≠ ${expected}`);
    const addsUp = (whole: Record<string, number>, parts: Record<string, number>[], what: string) => {
      for (const field of ['distance', 'engineHours', 'spentFuel']) close(whole[field] as number, parts.reduce((sum, part) => sum + (part[field] as number), 0), `${what} ${field}`);
      assert.equal(whole['maxSpeed'], Math.max(...parts.map((part) => part['maxSpeed'] as number)), `${what} maxSpeed`);
      assert.equal(whole['startOdometer'], parts[0]?.['startOdometer'], `${what} startOdometer`);
      assert.equal(whole['endOdometer'], parts.at(-1)?.['endOdometer'], `${what} endOdometer`);
    };

    // 08:20–11:40 (partial first and last hours) against 08:20–09:30 and 09:30–11:40 (each cutting the 09:00 hour).
    const window = await summary(T0 + 20 * MINUTE, T0 + 220 * MINUTE);
    addsUp(window, [await summary(T0 + 20 * MINUTE, T0 + 90 * MINUTE - 1), await summary(T0 + 90 * MINUTE, T0 + 220 * MINUTE)], 'split mid-hour');
    assert.ok(window['distance']! > 0 && window['engineHours']! > 0 && window['spentFuel']! !== 0, JSON.stringify(window));

    // 09:00–11:00 is its two whole hours of summary_hours, and the same cut at 10:30.
    const hours = await db.selectFrom('summary_hours').selectAll().where('device_id', '=', deviceId).where('hour_start', '>=', T0 + 60 * MINUTE).where('hour_start', '<', T0 + 180 * MINUTE).orderBy('hour_start').execute();
    assert.equal(hours.length, 2);
    const aligned = await summary(T0 + 60 * MINUTE, T0 + 180 * MINUTE - 1);
    const ofHours = hours.map((hour) => ({ distance: Number(hour.distance), engineHours: Number(hour.engine_hours), spentFuel: Number(hour.spent_fuel), maxSpeed: Number(hour.max_speed), startOdometer: Number(hour.start_odometer), endOdometer: Number(hour.end_odometer) }));
    addsUp(aligned, ofHours, 'whole hours');
    addsUp(aligned, [await summary(T0 + 60 * MINUTE, T0 + 150 * MINUTE - 1), await summary(T0 + 150 * MINUTE, T0 + 180 * MINUTE - 1)], 'split at 10:30');
  });

  it('a replay of the simulator through a real socket segments as a rebuild does', async () => {
    const uniqueIds = simulatedIds('356307042440100', 3);
    // Thresholds at the simulator's pace: a lap of ~630 m in ~6 s, then a 2 s stop.
    const attributes = { minimalTripDistance: 100, minimalTripDuration: 2, minimalParkingDuration: 1, minimalNoDataDuration: 3600 };
    const deviceIds = [];
    for (const uniqueId of uniqueIds) deviceIds.push(await registerDevice(server, owner, uniqueId, attributes));
    const port = await server.tracking!.ingestion.listen('teltonika', 0);
    const stats = await runSimulation({ protocol: 'teltonika', host: '127.0.0.1', port, uniqueIds, rate: 5, route: generatedRoute(undefined, 100), speedKmh: 360, stopSeconds: 2, durationMs: 9_000 });
    assert.ok(stats.acknowledged > 100, `acknowledged ${stats.acknowledged}`);
    await settled();
    const live = await Promise.all(deviceIds.map((deviceId) => rowsOf(deviceId)));
    assert.ok(live.every((rows) => rows.trips.length >= 1 && rows.stops.length >= 1), JSON.stringify(live.map((rows) => [rows.trips.length, rows.stops.length])));
    await server.tracking!.segmentation.rebuild(deviceIds, undefined);
    assert.deepEqual(await Promise.all(deviceIds.map((deviceId) => rowsOf(deviceId))), live);
  });
});
