import { tmpdir } from 'node:os';
import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import { openDatabase } from '../src/platform/db/database.ts';
import type { Database, Engine } from '../src/platform/db/database.ts';
import { migrateModules } from '../src/platform/db/migrations.ts';
import { unavailableUserDirectory } from '../src/services/auth/users/directory.ts';
import { unavailableDevices } from '../src/services/devices/access.ts';
import { HistoryCut } from '../src/services/tracking/history-cut.ts';
import { trackingMigrations } from '../src/services/tracking/module.ts';
import { ReportQueryRepository } from '../src/services/tracking/reports/query-repository.ts';
import { ReportService } from '../src/services/tracking/reports/service.ts';
import type { ReportScope } from '../src/services/tracking/reports/service.ts';
import { ZoneClock } from '../src/services/tracking/reports/time-zone.ts';
import { TrackingStore } from '../src/services/tracking/store.ts';
import type { TrackingTables } from '../src/services/tracking/tables.ts';
import { freshDatabase } from './ingestion.ts';
import type { BenchDatabase } from './ingestion.ts';
import type { Figure } from './measure.ts';

/**
 * Reports at scale (docs/reports.md, "Figures"), on PostgreSQL (BENCH_DATABASE_URL or
 * TEST_DATABASE_URL) and SQLite, the reports tables seeded directly as segmentation would leave them:
 *
 * - Summary of every device over a year from summary_hours: DEVICES devices × DAYS days ×
 *   ACTIVE_HOURS hours a day that hold positions (the 20M positions of 1 000 devices over
 *   365 days are 55 a device-day, which a vehicle sends in a few hours of driving: 4 active hours
 *   stand for them). Compared with reading the same number of rows, summed, from a plain table of
 *   the same width, in the same run.
 * - A month of one device's trips, with the trips table SMALL_TRIPS then LARGE_TRIPS rows (a fleet's
 *   trips for 30 days and for 600 days of history, 20× the rows): the read must not grow with the table
 *   (target ≤ 1.3×). It never reads positions, so the positions table's size cannot matter to it.
 */
const DEVICES = Number(process.env.BENCH_REPORT_DEVICES ?? 1000);
const DAYS = Number(process.env.BENCH_REPORT_DAYS ?? 365);
const ACTIVE_HOURS = Number(process.env.BENCH_REPORT_ACTIVE_HOURS ?? 4);
const TRIPS_PER_DAY = 20;
const SMALL_TRIP_DAYS = Number(process.env.BENCH_REPORT_SMALL_TRIP_DAYS ?? 30);
const LARGE_TRIP_DAYS = Number(process.env.BENCH_REPORT_LARGE_TRIP_DAYS ?? 600);
const TRIP_DEVICES = Number(process.env.BENCH_REPORT_TRIP_DEVICES ?? 100);
const SAMPLES = Number(process.env.BENCH_REPORT_SAMPLES ?? 5);
const TRIP_SAMPLES = Number(process.env.BENCH_REPORT_TRIP_SAMPLES ?? 50);

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const UNTIL = Date.parse('2026-01-01T00:00:00.000Z');

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

async function timed(samples: number, run: () => Promise<unknown>): Promise<number> {
  await run();
  const times: number[] = [];
  for (let sample = 0; sample < samples; sample++) {
    const started = performance.now();
    await run();
    times.push(performance.now() - started);
  }
  return median(times);
}

/** Numbers 0..count-1 as a row source: generate_series on PostgreSQL, a recursive CTE on SQLite. */
function series(engine: Engine, count: number) {
  return engine === 'postgres'
    ? sql`(select n from generate_series(0::bigint, ${sql.lit(count - 1)}::bigint) as g(n))`
    : sql`(with recursive g(n) as (select 0 union all select n + 1 from g where n < ${sql.lit(count - 1)}) select n from g)`;
}

/** One row per device and active hour of DAYS days before UNTIL; devices 1..DEVICES. Answers the rows. */
async function seedSummaryHours(db: Kysely<TrackingTables>, engine: Engine): Promise<number> {
  const start = UNTIL - DAYS * DAY_MS;
  for (let device = 1; device <= DEVICES; device += 100) {
    const last = Math.min(device + 99, DEVICES);
    await sql`
      insert into summary_hours (device_id, hour_start, first_time, last_time, positions, distance, max_speed, speed_sum, start_odometer, end_odometer, engine_hours, spent_fuel)
      select ${sql.lit(device)} + dn.n, h.hour_start, h.hour_start + 60000, h.hour_start + 3540000, 14, 25000, 60, 420, h.hour_start / 1000, h.hour_start / 1000 + 25000, 3300000, 2.5
      from ${series(engine, last - device + 1)} as dn
      cross join (select ${sql.lit(start)} + (day.n * ${sql.lit(DAY_MS)}) + ((8 + hour.n) * ${sql.lit(HOUR_MS)}) as hour_start
                  from ${series(engine, DAYS)} as day cross join ${series(engine, ACTIVE_HOURS)} as hour) as h`.execute(db);
  }
  return DEVICES * DAYS * ACTIVE_HOURS;
}

/** Trips of TRIP_DEVICES devices over `days` days before UNTIL, TRIPS_PER_DAY a day each, 20 minutes long. */
async function seedTrips(db: Kysely<TrackingTables>, engine: Engine, days: number): Promise<number> {
  const start = UNTIL - days * DAY_MS;
  const perDay = TRIPS_PER_DAY;
  for (let day = 0; day < days; day += 10) {
    const span = Math.min(10, days - day);
    await sql`
      insert into trips (device_id, start_time, end_time, start_position_id, end_position_id, start_lat, start_lon, end_lat, end_lon, distance,
                         average_speed, max_speed, start_odometer, end_odometer, spent_fuel, driver_unique_id, start_address, end_address, ongoing)
      select d.n + 1, t.at, t.at + 1200000, 1, 2, 52.5, 13.4, 52.6, 13.5, 8000, 20, 45, 1000, 9000, null, null, null, null, 0
      from ${series(engine, TRIP_DEVICES)} as d
      cross join (select ${sql.lit(start + day * DAY_MS)} + k.n * ${sql.lit(Math.floor(DAY_MS / perDay))} as at from ${series(engine, span * perDay)} as k) as t`.execute(db);
  }
  return TRIP_DEVICES * days * perDay;
}

function reportService(db: Kysely<TrackingTables>): ReportService {
  return new ReportService({
    store: new TrackingStore(db),
    reports: new ReportQueryRepository(db),
    devices: unavailableDevices,
    users: unavailableUserDirectory,
    historyCut: new HistoryCut(undefined, unavailableDevices),
    plans: undefined,
    limits: { maxDevices: 1000, maxDays: 366 },
  });
}

function scopeOf(deviceIds: number[], from: number, to: number): ReportScope {
  return {
    deviceIds,
    range: { from, to },
    servedFrom: new Map(deviceIds.map((deviceId) => [deviceId, null])),
    deviceNames: new Map(),
    clock: new ZoneClock('UTC'),
    daily: false,
  };
}

async function drain(pages: AsyncIterable<unknown[]>): Promise<number> {
  let rows = 0;
  for await (const page of pages) rows += page.length;
  return rows;
}

async function opened(engine: Engine, adminUrl: string | undefined): Promise<{ bench: BenchDatabase; database: Database }> {
  const bench = await freshDatabase(engine, tmpdir(), adminUrl);
  const database = openDatabase(bench.config);
  await migrateModules(database, [trackingMigrations]);
  return { bench, database };
}

async function benchEngine(engine: Engine, adminUrl: string | undefined): Promise<Figure[]> {
  const figures: Figure[] = [];
  const label = engine === 'postgres' ? 'PostgreSQL' : 'SQLite';
  const summaryDb = await opened(engine, adminUrl);
  try {
    const db = summaryDb.database.db as Kysely<TrackingTables>;
    const started = performance.now();
    const hours = await seedSummaryHours(db, engine);
    if (engine === 'postgres') await sql`vacuum analyze summary_hours`.execute(db);
    else await sql`analyze`.execute(db);
    const seedSeconds = (performance.now() - started) / 1000;
    // The same number of rows, as wide, in a table without keys: what reading them costs at least.
    await sql`create table plain_rows as select * from summary_hours`.execute(db);
    if (engine === 'postgres') await sql`vacuum analyze plain_rows`.execute(db);
    const reports = reportService(db);
    const devices = Array.from({ length: DEVICES }, (_, index) => index + 1);
    const scope = scopeOf(devices, UNTIL - DAYS * DAY_MS, UNTIL - 1);
    let rows = 0;
    const summaryMs = await timed(SAMPLES, async () => {
      rows = await drain(reports.summary(scope));
    });
    if (rows !== DEVICES) throw new Error(`reports bench: the summary answered ${rows} rows, not ${DEVICES}`);
    const plainMs = await timed(SAMPLES, () =>
      sql`select device_id, sum(distance), max(max_speed), sum(speed_sum), sum(positions), min(first_time), max(last_time) from plain_rows group by device_id`.execute(db),
    );
    figures.push(
      { name: `${label}: summary_hours rows (${DEVICES} devices × ${DAYS} days × ${ACTIVE_HOURS} h), seeded in`, value: `${hours.toLocaleString('en')} rows, ${seedSeconds.toFixed(0)} s` },
      { name: `${label}: (a) summary of every device over ${DAYS} days`, value: `${summaryMs.toFixed(0)} ms` },
      { name: `${label}: (b) the same rows summed from a plain table`, value: `${plainMs.toFixed(0)} ms` },
      { name: `${label}: ratio a/b`, value: (summaryMs / plainMs).toFixed(2) },
    );
  } finally {
    await summaryDb.database.close();
    await summaryDb.bench.drop();
  }

  const monthOfTrips: Record<'small' | 'large', number> = { small: 0, large: 0 };
  for (const [size, days] of [['small', SMALL_TRIP_DAYS], ['large', LARGE_TRIP_DAYS]] as const) {
    const tripsDb = await opened(engine, adminUrl);
    try {
      const db = tripsDb.database.db as Kysely<TrackingTables>;
      const count = await seedTrips(db, engine, days);
      if (engine === 'postgres') await sql`vacuum analyze trips`.execute(db);
      else await sql`analyze`.execute(db);
      const reports = reportService(db);
      let device = 0;
      let rows = 0;
      // The last month of the history, a different device each time: the same trips in both tables.
      const from = UNTIL - 30 * DAY_MS;
      monthOfTrips[size] = await timed(TRIP_SAMPLES, async () => {
        device = (device % TRIP_DEVICES) + 1;
        rows = await drain(reports.trips(scopeOf([device], from, UNTIL - 1)));
      });
      if (rows === 0) throw new Error('reports bench: the trips read found nothing');
      figures.push({ name: `${label}: a month of one device's trips, trips table of ${count.toLocaleString('en')} rows`, value: `${monthOfTrips[size].toFixed(1)} ms (${rows} trips)` });
    } finally {
      await tripsDb.database.close();
      await tripsDb.bench.drop();
    }
  }
  figures.push({ name: `${label}: month of trips, large table / small (target ≤ 1.3)`, value: (monthOfTrips.large / monthOfTrips.small).toFixed(2) });
  return figures;
}

export async function benchReports(): Promise<Figure[]> {
  const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  const figures: Figure[] = [];
  if (adminUrl) figures.push(...(await benchEngine('postgres', adminUrl)));
  else figures.push({ name: 'PostgreSQL', value: 'skipped: set BENCH_DATABASE_URL (or TEST_DATABASE_URL)' });
  figures.push(...(await benchEngine('sqlite', undefined)));
  return figures;
}
