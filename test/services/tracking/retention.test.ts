import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import { Migrator } from 'kysely/migration';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { openDatabase } from '../../../src/platform/db/database.ts';
import { migrateModules } from '../../../src/platform/db/migrations.ts';
import { trackingMigrations } from '../../../src/services/tracking/module.ts';
import type { NewEventRow } from '../../../src/services/tracking/events/repository.ts';
import type { NewPositionRow } from '../../../src/services/tracking/positions/repository.ts';
import { RetentionJob } from '../../../src/services/tracking/retention/job.ts';
import type { RetentionJobOptions } from '../../../src/services/tracking/retention/job.ts';
import { monthStart, nextMonth, partitionName, PartitionRepository } from '../../../src/services/tracking/retention/partitions.ts';
import { RetentionRepository } from '../../../src/services/tracking/retention/repository.ts';
import { keepEverything } from '../../../src/services/tracking/retention/policy.ts';
import type { RetentionPolicy } from '../../../src/services/tracking/retention/policy.ts';
import { SegmentationRepository } from '../../../src/services/tracking/reports/segmentation/repository.ts';
import { TrackingStore } from '../../../src/services/tracking/store.ts';
import type { TrackingTables } from '../../../src/services/tracking/tables.ts';
import { describeEachEngine } from '../../support/engines.ts';
import type { TestDatabase } from '../../support/engines.ts';
import { eventually } from '../../support/eventually.ts';
import { FakeClock } from './support/fake-clock.ts';

const DAY = 86_400_000;
const NOW = Date.UTC(2030, 5, 15, 12);

function position(deviceId: number, fixTime: number): NewPositionRow {
  return {
    device_id: deviceId,
    protocol: 'osmand',
    server_time: fixTime,
    device_time: fixTime,
    fix_time: fixTime,
    valid: 1,
    latitude: 1,
    longitude: 2,
    altitude: 0,
    speed: 0,
    course: 0,
    accuracy: 0,
    address: null,
    attributes: '{}',
  };
}

function event(deviceId: number, eventTime: number, positionId: number | null = null): NewEventRow {
  return { type: 'deviceMoving', event_time: eventTime, device_id: deviceId, position_id: positionId, geofence_id: null, maintenance_id: null, attributes: '{}' };
}

/** Stores positions as ingestion does: the newest of each device becomes its latest. */
async function store(db: Kysely<TrackingTables>, rows: NewPositionRow[]): Promise<number[]> {
  return new TrackingStore(db).transaction(async (repositories) => {
    const ids = await repositories.positions.insertMany(rows);
    const newest = new Map<number, { device_id: number; position_id: number; fix_time: number }>();
    rows.forEach((row, index) => {
      const known = newest.get(row.device_id);
      if (!known || row.fix_time >= known.fix_time) newest.set(row.device_id, { device_id: row.device_id, position_id: ids[index]!, fix_time: row.fix_time });
    });
    await repositories.positions.advanceLatest([...newest.values()]);
    return ids;
  });
}

/** Each owner's history lasts this many days (absent or null: for ever, so no partition is past everyone's cutoff); owner = device id * 10. */
function policyOf(days: Record<number, number | null>): RetentionPolicy {
  const cutoffOf = (ownerId: number) => {
    const kept = days[ownerId];
    return kept === undefined || kept === null ? null : NOW - kept * DAY;
  };
  return { cutoffOf: (ownerId) => Promise.resolve(cutoffOf(ownerId)) };
}

/** A pause between chunks that holds the run until released, and tells when the run has reached it. */
function pauseGate(): { pause: () => Promise<void>; reached: Promise<void>; release(): void } {
  const released = Promise.withResolvers<void>();
  const reached = Promise.withResolvers<void>();
  return {
    pause: () => {
      reached.resolve();
      return released.promise;
    },
    reached: reached.promise,
    release: () => released.resolve(),
  };
}

describeEachEngine('history retention', (engine) => {
  let test: TestDatabase;
  let db: Kysely<TrackingTables>;

  before(async () => {
    test = await engine.createDatabase();
    db = test.database.db as Kysely<TrackingTables>;
    await migrateModules(test.database, [trackingMigrations]);
  });
  after(() => test.dispose());

  function job(options: Partial<RetentionJobOptions> = {}): RetentionJob {
    return new RetentionJob({
      db,
      policy: keepEverything,
      ownersOf: (ids) => Promise.resolve(new Map(ids.map((id) => [id, id * 10]))),
      chunkSize: 3,
      clock: new FakeClock(NOW),
      pause: () => Promise.resolve(),
      log: pino({ level: 'silent' }),
      ...options,
    });
  }

  async function timesOf(table: 'positions' | 'events', deviceId: number): Promise<number[]> {
    const column = table === 'positions' ? 'fix_time' : 'event_time';
    const rows = await db.selectFrom(table).select(`${column} as time`).where('device_id', '=', deviceId).orderBy('time').execute();
    return rows.map((row) => Number(row.time));
  }

  it('deletes in chunks what is past each owner’s cutoff, keeps the rest and every latest position', async () => {
    // Device 1 (10 days), 2 (40 days), 3 (for ever): a position and an event a day for 60 days. Device 4 (10 days) stopped
    // reporting 30 days ago: its latest position stays although it is past the cutoff.
    const days = Array.from({ length: 60 }, (_, day) => NOW - (day + 0.5) * DAY);
    for (const deviceId of [1, 2, 3]) await store(db, days.map((time) => position(deviceId, time)));
    await store(db, [position(4, NOW - 31 * DAY), position(4, NOW - 30 * DAY)]);
    await new TrackingStore(db).transaction((repositories) =>
      repositories.events.insertMany([1, 2, 3, 4].flatMap((deviceId) => days.map((time) => event(deviceId, time)))),
    );
    const latestBefore = await db.selectFrom('latest_positions').selectAll().orderBy('device_id').execute();

    let pauses = 0;
    const metrics = new Registry();
    const run = await job({
      policy: policyOf({ 10: 10, 20: 40, 30: null, 40: 10 }),
      pause: () => {
        pauses++;
        return Promise.resolve();
      },
      metrics,
    }).run();

    assert.ok(run);
    assert.deepEqual(await timesOf('positions', 1), days.filter((time) => time >= NOW - 10 * DAY).reverse());
    assert.deepEqual(await timesOf('positions', 2), days.filter((time) => time >= NOW - 40 * DAY).reverse());
    assert.equal((await timesOf('positions', 3)).length, 60);
    assert.deepEqual(await timesOf('positions', 4), [NOW - 30 * DAY]);
    assert.deepEqual(await timesOf('events', 1), days.filter((time) => time >= NOW - 10 * DAY).reverse());
    assert.deepEqual(await timesOf('events', 2), days.filter((time) => time >= NOW - 40 * DAY).reverse());
    assert.equal((await timesOf('events', 3)).length, 60);
    assert.deepEqual(await timesOf('events', 4), days.filter((time) => time >= NOW - 10 * DAY).reverse());
    assert.deepEqual(await db.selectFrom('latest_positions').selectAll().orderBy('device_id').execute(), latestBefore);

    // 50 + 20 + 1 positions and 50 + 20 + 50 events, 3 rows a statement: a pause after every statement that deleted
    // any (17 for 50 rows, 7 for 20, 1 for 1).
    assert.equal(run.positionsDeleted, 71);
    assert.equal(run.eventsDeleted, 120);
    assert.equal(pauses, 17 + 7 + 1 + 17 + 7 + 17);
    assert.match(await metrics.metrics(), /trackstack_retention_deleted_rows_total\{table="positions"\} 71/);
    assert.match(await metrics.metrics(), /trackstack_retention_deleted_rows_total\{table="events"\} 120/);
    assert.match(await metrics.metrics(), new RegExp(`trackstack_retention_last_run_timestamp_seconds ${NOW / 1000}`));

    // A second run finds nothing more.
    const again = await job({ policy: policyOf({ 10: 10, 20: 40, 30: null, 40: 10 }) }).run();
    assert.deepEqual([again?.positionsDeleted, again?.eventsDeleted], [0, 0]);
  });

  it('deletes the trips, stops and hours that end before the cutoff, keeping those after it and those in progress', async () => {
    // Device 31 (owner 310, 10 days): a trip and a stop a day for 20 days, the last stop still going on, and its hours.
    const deviceId = 31;
    await store(db, [position(deviceId, NOW - 20 * DAY), position(deviceId, NOW - DAY)]);
    const day = (ago: number) => NOW - ago * DAY;
    const segment = (ago: number, ongoing = 0) => ({ device_id: deviceId, start_time: day(ago), end_time: ongoing ? NOW : day(ago) + 3_600_000, ongoing });
    const trip = (ago: number) => ({
      ...segment(ago), start_position_id: 1, end_position_id: 2, start_lat: 0, start_lon: 0, end_lat: 0, end_lon: 0, distance: 1, average_speed: 1, max_speed: 1, start_odometer: 0, end_odometer: 1,
    });
    const stop = (ago: number, ongoing = 0) => ({ ...segment(ago, ongoing), position_id: 1, lat: 0, lon: 0 });
    const hour = (ago: number) => ({
      device_id: deviceId, hour_start: day(ago), first_time: day(ago), last_time: day(ago), positions: 1, distance: 0, max_speed: 0, speed_sum: 0, start_odometer: 0, end_odometer: 0, engine_hours: 0, spent_fuel: 0,
    });
    const agos = Array.from({ length: 20 }, (_, index) => index + 1);
    await db.insertInto('trips').values(agos.map(trip)).execute();
    await db.insertInto('stops').values([...agos.slice(1).map((ago) => stop(ago)), stop(1, 1), stop(25, 1)]).execute();
    await db.insertInto('summary_hours').values(agos.map(hour)).execute();

    await job({ policy: policyOf({ 310: 10 }), reports: new SegmentationRepository(db) }).run();

    const startsOf = async (table: 'trips' | 'stops' | 'summary_hours') =>
      (await db.selectFrom(table).select(table === 'summary_hours' ? 'hour_start as start' : 'start_time as start').where('device_id', '=', deviceId).orderBy('start').execute()).map((row) => Number(row.start));
    const kept = agos.filter((ago) => ago <= 10).map(day).reverse();
    assert.deepEqual(await startsOf('trips'), kept);
    // The stops in progress stay, however long ago they began.
    assert.deepEqual(await startsOf('stops'), [day(25), ...agos.filter((ago) => ago <= 10 && ago > 1).map(day).reverse(), day(1)]);
    assert.deepEqual(await startsOf('summary_hours'), kept);
  });

  it('keeps everything under the unlimited default plan', async () => {
    const before = await db.selectFrom('positions').select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow();
    const run = await job().run();
    assert.deepEqual([run?.positionsDeleted, run?.eventsDeleted, run?.partitionsDropped], [0, 0, []]);
    const afterRun = await db.selectFrom('positions').select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow();
    assert.equal(Number(afterRun.count), Number(before.count));
  });

  it('skips devices that no longer exist (their deletion removes their data)', async () => {
    await store(db, [position(5, NOW - 50 * DAY), position(5, NOW - 1 * DAY)]);
    const run = await job({ policy: policyOf({ 50: 10 }), ownersOf: () => Promise.resolve(new Map()) }).run();
    assert.equal(run?.positionsDeleted, 0);
    assert.equal((await timesOf('positions', 5)).length, 2);
  });

  it('walks devices with positions, events or both, in batches that skip none', async () => {
    await store(db, [1001, 1003, 1005].map((deviceId) => position(deviceId, NOW - 100 * DAY)));
    await new TrackingStore(db).transaction((repositories) => repositories.events.insertMany([1002, 1003, 1006].map((deviceId) => event(deviceId, NOW - 100 * DAY))));
    const repository = new RetentionRepository(db);
    // Both lists full at two: the walk goes no further than 1003, where both are complete.
    assert.deepEqual(await repository.nextDevices(1000, 2, ['positions', 'events']), [1001, 1002, 1003]);
    assert.deepEqual(await repository.nextDevices(1003, 2, ['positions', 'events']), [1005, 1006]);
    assert.deepEqual(await repository.nextDevices(1006, 2, ['positions', 'events']), []);

    const run = await job({ policy: policyOf({ 10020: 10, 10060: 10 }) }).run();
    assert.equal(run?.eventsDeleted, 2);
    assert.deepEqual([await timesOf('events', 1002), await timesOf('events', 1006), await timesOf('events', 1003)], [[], [], [NOW - 100 * DAY]]);
  });

  it('prunes commands past COMMAND_HISTORY_DAYS, or sooner past their owner’s cutoff, never a queued one', async () => {
    // Devices with commands only (3001: a 10-day plan; 3002: unlimited) and one with positions too (3003: unlimited).
    const ages = [5, 20, 40, 100];
    const rows = [3001, 3002, 3003].flatMap((deviceId) => [
      ...ages.map((age) => ({ device_id: deviceId, user_id: 1, type: 'custom', attributes: '{"data":"x"}', status: 'delivered', created_at: NOW - age * DAY, sent_at: NOW - age * DAY })),
      { device_id: deviceId, user_id: 1, type: 'custom', attributes: '{"data":"x"}', status: 'queued', created_at: NOW - 100 * DAY, sent_at: null },
    ]);
    await db.insertInto('commands').values(rows).execute();
    await store(db, [position(3003, NOW - DAY)]);
    const commandAges = async (deviceId: number) =>
      (await db.selectFrom('commands').select(['created_at', 'status']).where('device_id', '=', deviceId).orderBy('created_at').orderBy('id').execute()).map(
        (row) => `${(NOW - Number(row.created_at)) / DAY} ${row.status}`,
      );

    const unpruned = await job({ policy: policyOf({ 30010: 10 }) }).run();
    assert.equal(unpruned?.commandsDeleted, 3, 'without COMMAND_HISTORY_DAYS, only the owner’s cutoff');
    const run = await job({ policy: policyOf({ 30010: 10 }), commandHistoryMs: 30 * DAY }).run();
    assert.equal(run?.commandsDeleted, 4);
    assert.deepEqual(await commandAges(3001), ['100 queued', '5 delivered']);
    assert.deepEqual(await commandAges(3002), ['100 queued', '20 delivered', '5 delivered']);
    assert.deepEqual(await commandAges(3003), ['100 queued', '20 delivered', '5 delivered']);
    assert.deepEqual(await timesOf('positions', 3003), [NOW - DAY]);
  });

  it('runs once at a time in a process: a run asked for meanwhile does nothing', async () => {
    await store(db, Array.from({ length: 9 }, (_, index) => position(6, NOW - (100 + index) * DAY)).concat(position(6, NOW)));
    const gate = pauseGate();
    const retention = job({ policy: policyOf({ 60: 10 }), pause: gate.pause });
    const first = retention.run();
    await gate.reached;
    assert.equal(await retention.run(), undefined);
    gate.release();
    assert.equal((await first)?.positionsDeleted, 9);
  });

  it('stops between chunks when stopped', async () => {
    await store(db, Array.from({ length: 9 }, (_, index) => position(7, NOW - (100 + index) * DAY)).concat(position(7, NOW)));
    const retention: RetentionJob = job({
      policy: policyOf({ 70: 10 }),
      pause: () => {
        void retention.stop();
        return Promise.resolve();
      },
    });
    const run = await retention.run();
    assert.equal(run?.interrupted, true);
    assert.equal(run?.positionsDeleted, 3);
    assert.equal((await timesOf('positions', 7)).length, 7);
  });

  it('deletes a fleet whose reports interleave, each device to its own owner’s cutoff, in windows of ids', async () => {
    // Devices 21 (10 days), 22 (40 days) and 23 (for ever) report once a day for 60 days, stored together as they arrive:
    // a window of three ids holds one report of each.
    const days = Array.from({ length: 60 }, (_, day) => NOW - (59 - day + 0.5) * DAY);
    for (const time of days) await store(db, [21, 22, 23].map((deviceId) => position(deviceId, time)));
    const windows: number[] = [];
    const run = await job({
      policy: policyOf({ 210: 10, 220: 40, 230: null }),
      pause: () => {
        windows.push(windows.length);
        return Promise.resolve();
      },
    }).run();
    assert.deepEqual([run?.positionsDeleted, windows.length], [50 + 20, 50 + 20]);
    assert.deepEqual(await timesOf('positions', 21), days.filter((time) => time >= NOW - 10 * DAY));
    assert.deepEqual(await timesOf('positions', 22), days.filter((time) => time >= NOW - 40 * DAY));
    assert.deepEqual(await timesOf('positions', 23), days);
  });

  it('deletes the oldest reports of the whole fleet first, not one device after another', async () => {
    // Devices 24 and 25 of one owner: a report each a day for 20 days, interleaved. Stopped after the first window of
    // four ids, both have lost their two oldest days.
    const days = Array.from({ length: 20 }, (_, day) => NOW - (119 - day) * DAY);
    for (const time of days) await store(db, [24, 25].map((deviceId) => position(deviceId, time)));
    const retention: RetentionJob = job({
      chunkSize: 4,
      ownersOf: (ids) => Promise.resolve(new Map(ids.filter((id) => id === 24 || id === 25).map((id) => [id, 240]))),
      policy: policyOf({ 240: 10 }),
      pause: () => {
        void retention.stop();
        return Promise.resolve();
      },
    });
    const run = await retention.run();
    assert.deepEqual([run?.interrupted, run?.positionsDeleted], [true, 4]);
    assert.deepEqual(await timesOf('positions', 24), days.slice(2));
    assert.deepEqual(await timesOf('positions', 25), days.slice(2));
  });

  it('deletes an old fix uploaded late, after its neighbours in time, by the next run at the latest', async () => {
    // Device 26 (10 days) reported daily for 60 days, then uploaded a fix of 50 days ago it had kept: the newest id.
    const days = Array.from({ length: 60 }, (_, day) => NOW - (59 - day + 0.5) * DAY);
    for (const time of days) await store(db, [position(26, time)]);
    await store(db, [position(26, NOW - 50 * DAY)]);
    const kept = days.filter((time) => time >= NOW - 10 * DAY);
    const first = await job({ policy: policyOf({ 260: 10 }) }).run();
    // Its id lies past the newest row before the cutoff, so this run's span ends before it.
    assert.equal(first?.positionsDeleted, 50);
    assert.deepEqual(await timesOf('positions', 26), [NOW - 50 * DAY, ...kept]);
    const second = await job({ policy: policyOf({ 260: 10 }) }).run();
    assert.equal(second?.positionsDeleted, 1);
    assert.deepEqual(await timesOf('positions', 26), kept);
  });

  it('runs on its schedule: first a minute after the start, then every interval, until stopped', async () => {
    await store(db, [position(13, NOW - 100 * DAY), position(13, NOW - 99 * DAY), position(13, NOW)]);
    const clock = new FakeClock(NOW);
    const retention = job({ clock, policy: policyOf({ 130: 10 }) });
    retention.start(3_600_000);
    clock.advance(59_999);
    assert.equal((await timesOf('positions', 13)).length, 3);
    clock.advance(1);
    const onlyLatest = async () => (await timesOf('positions', 13)).join() === String(NOW);
    await eventually(onlyLatest, 'the first run deleted what was past the cutoff');
    await eventually(() => clock.pending === 1, 'the next run is scheduled');
    await store(db, [position(13, NOW - 50 * DAY)]);
    clock.advance(3_600_000);
    await eventually(onlyLatest, 'the second run deleted what was stored since');
    await retention.stop();
    assert.equal(clock.pending, 0);
  });

  it('carries a populated table across the partition migration: rows, ids, and what reads answer', async () => {
    const old = await engine.createDatabase();
    try {
      const oldDb = old.database.db as Kysely<TrackingTables>;
      await migrateModules(old.database, []);
      const migrator = new Migrator({
        db: oldDb,
        provider: { getMigrations: async () => trackingMigrations.migrations },
        migrationTableName: 'tracking_migrations',
        migrationLockTableName: 'tracking_migrations_lock',
      });
      assert.equal((await migrator.migrateTo('0002-geofence-points')).error, undefined);
      const now = Date.now();
      // Three months of history, a report before any fix (time 0), and one dated years ahead.
      const times = [now - 70 * DAY, now - 35 * DAY, now - DAY, 0, now + 3000 * DAY];
      const positionIds = await store(oldDb, times.map((time) => position(1, time)));
      const last = await store(oldDb, [position(2, now)]);
      await oldDb.deleteFrom('positions').where('id', '=', last[0]!).execute();
      await oldDb.deleteFrom('latest_positions').where('device_id', '=', 2).execute();
      const eventIds = await new TrackingStore(oldDb).transaction((repositories) =>
        repositories.events.insertMany(times.map((time, index) => event(1, time, positionIds[index]!))),
      );
      const positionsBefore = await oldDb.selectFrom('positions').selectAll().orderBy('id').execute();
      const eventsBefore = await oldDb.selectFrom('events').selectAll().orderBy('id').execute();

      await migrateModules(old.database, [trackingMigrations]);

      assert.deepEqual(await oldDb.selectFrom('positions').selectAll().orderBy('id').execute(), positionsBefore);
      assert.deepEqual(await oldDb.selectFrom('events').selectAll().orderBy('id').execute(), eventsBefore);
      const reads = new TrackingStore(oldDb);
      assert.deepEqual((await reads.positions.latestOf([1])).map((row) => row.id), [positionIds[4]]);
      assert.deepEqual((await reads.positions.historyPage(1, { from: now - 40 * DAY, to: now }, undefined, 10)).map((row) => row.id), [positionIds[1], positionIds[2]]);
      assert.deepEqual((await reads.events.findById(eventIds[2]!))?.position_id, positionIds[2]);
      // Ids go on after the highest ever given, the deleted one included.
      const [next] = await store(oldDb, [position(1, now)]);
      assert.ok(next! > last[0]!, `${next} after ${last[0]}`);
      const [nextEvent] = await reads.transaction((repositories) => repositories.events.insertMany([event(1, now)]));
      assert.ok(nextEvent! > eventIds.at(-1)!);

      if (engine.name === 'postgres') {
        const partitions = new PartitionRepository(oldDb);
        assert.ok(await partitions.isPartitioned('positions'));
        assert.ok(await partitions.isPartitioned('events'));
        const homes = await sql<{ id: number; home: string }>`select id, tableoid::regclass::text as home from positions order by id`.execute(oldDb);
        assert.deepEqual(
          homes.rows.map((row) => row.home),
          [...times.map((time) => (time === 0 || time > now + 100 * DAY ? 'positions_default' : partitionName('positions', monthStart(time)))), partitionName('positions', monthStart(now))],
        );
        const names = (await partitions.list('positions')).map((partition) => partition.name);
        for (let month = monthStart(now), ahead = 0; ahead <= 2; month = nextMonth(month), ahead++) assert.ok(names.includes(partitionName('positions', month)), names.join());
      }
    } finally {
      await old.dispose();
    }
  });

  if (engine.name !== 'postgres') return;

  it('creates partitions ahead, leaves strays in the default partition and moves them into a month made later', async () => {
    const partitions = new PartitionRepository(db);
    const far = Date.UTC(2031, 2, 10);
    const [stray] = await store(db, [position(8, far)]);
    const homeOf = async (id: number) => (await sql<{ home: string }>`select tableoid::regclass::text as home from positions where id = ${id}`.execute(db)).rows[0]?.home;
    assert.equal(await homeOf(stray!), 'positions_default');

    // Earlier runs at NOW (June 2030) made June to August.
    const october = Date.UTC(2030, 9, 15);
    const created = await job({ clock: new FakeClock(october) }).preparePartitions();
    assert.deepEqual(created.sort(), ['events_2030_10', 'events_2030_11', 'events_2030_12', 'positions_2030_10', 'positions_2030_11', 'positions_2030_12']);
    for (const month of [Date.UTC(2030, 9, 1), Date.UTC(2030, 10, 1), Date.UTC(2030, 11, 1)]) {
      assert.ok((await partitions.list('positions')).some((partition) => partition.from === month));
      assert.ok((await partitions.list('events')).some((partition) => partition.from === month));
    }
    assert.deepEqual(await job({ clock: new FakeClock(october) }).preparePartitions(), []);
    assert.equal(await homeOf(stray!), 'positions_default');

    await job({ clock: new FakeClock(Date.UTC(2031, 1, 20)) }).preparePartitions();
    assert.equal(await homeOf(stray!), 'positions_2031_03');
    assert.deepEqual(await timesOf('positions', 8), [far]);
  });

  it('drops whole months past every owner’s cutoff, keeping the latest positions they held', async () => {
    const partitions = new PartitionRepository(db);
    await job({ clock: new FakeClock(Date.UTC(2029, 11, 15)) }).preparePartitions();
    await job({ clock: new FakeClock(Date.UTC(2030, 1, 15)) }).preparePartitions();
    // Device 9 reported in December 2029 and January 2030 only; device 11 in January and February.
    const december = Date.UTC(2029, 11, 10);
    const january = Date.UTC(2030, 0, 10);
    const february = Date.UTC(2030, 1, 10);
    const [, latestOf9] = await store(db, [position(9, december), position(9, january)]);
    await store(db, [position(11, january), position(11, january + DAY), position(11, february)]);
    await new TrackingStore(db).transaction((repositories) => repositories.events.insertMany([event(9, december), event(9, january), event(11, february)]));

    // Every owner with data keeps from February: December and January (ending 2030-02-01) lie wholly before every cutoff.
    const policy: RetentionPolicy = { cutoffOf: () => Promise.resolve(Date.UTC(2030, 1, 1)) };
    const run = await job({ policy }).run();
    assert.ok(run);
    // (Months made by the migration, at today's date, are older still and go too.)
    assert.deepEqual(run.partitionsDropped.filter((name) => /_20(29|30)_/.test(name)).sort(), ['events_2029_12', 'events_2030_01', 'positions_2029_12', 'positions_2030_01']);
    const names = [...(await partitions.list('positions')), ...(await partitions.list('events'))].map((partition) => partition.name);
    for (const dropped of run.partitionsDropped) assert.ok(!names.includes(dropped));
    assert.ok(names.includes('positions_2030_02'));
    assert.deepEqual(await timesOf('positions', 9), [january]);
    assert.deepEqual((await new TrackingStore(db).positions.latestOf([9])).map((row) => row.id), [latestOf9]);
    assert.deepEqual(await timesOf('positions', 11), [february]);
    assert.deepEqual(await timesOf('events', 9), []);
    assert.deepEqual(await timesOf('events', 11), [february]);
  });

  it('runs on one instance at a time: a second runner against the same database does nothing meanwhile', async () => {
    await store(db, Array.from({ length: 9 }, (_, index) => position(12, NOW - (100 + index) * DAY)).concat(position(12, NOW)));
    const other = openDatabase({ engine: 'postgres', url: test.url });
    try {
      const gate = pauseGate();
      const first = job({ policy: policyOf({ 120: 10 }), pause: gate.pause }).run();
      await gate.reached;
      const second = job({ db: other.db as Kysely<TrackingTables>, policy: policyOf({ 120: 10 }) });
      assert.equal(await second.run(), undefined);
      gate.release();
      assert.equal((await first)?.positionsDeleted, 9);
      // The lock went with the first run: the second runner now runs (and finds nothing left).
      assert.equal((await second.run())?.positionsDeleted, 0);
    } finally {
      await other.close();
    }
  });
});
