import { tmpdir } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import { pino } from 'pino';
import { openDatabase } from '../src/platform/db/database.ts';
import type { Database } from '../src/platform/db/database.ts';
import { migrateModules } from '../src/platform/db/migrations.ts';
import { unavailableDevices } from '../src/services/devices/access.ts';
import { unavailableUserDirectory } from '../src/services/auth/users/directory.ts';
import { trackingMigrations } from '../src/services/tracking/module.ts';
import { HistoryCut } from '../src/services/tracking/history-cut.ts';
import { PositionService } from '../src/services/tracking/positions/service.ts';
import { RetentionJob } from '../src/services/tracking/retention/job.ts';
import { TrackingStore } from '../src/services/tracking/store.ts';
import type { TrackingTables } from '../src/services/tracking/tables.ts';
import { systemClock } from '../src/services/tracking/throttled-writer.ts';
import { freshDatabase, percentile, storeRowsRate } from './ingestion.ts';
import type { Figure } from './measure.ts';
import { historyStart, loadFleetHistory } from './scale-data.ts';
import type { BenchDatabase } from './ingestion.ts';
import type { FleetHistory } from './scale-data.ts';

/**
 * Storage at scale, PostgreSQL only: the reads that must not slow down as history grows, in two
 * databases holding SMALL and LARGE positions of the same fleet (1 000 devices reporting every 15
 * minutes until now, so the larger table is a longer history in more monthly partitions, as it is
 * in use), measured in turn ROUNDS times so the machine's noise falls on both, best median kept.
 * Loaded server-side with INSERT … SELECT over generate_series (no COPY driver beyond pg, no rows
 * written out as text first; docs/tracking.md compares it with COPY). Then ingestion into the
 * larger one (PositionService.storeRows, 1 000-row batches, as the pipeline writes) alone, while
 * the retention job deletes the oldest month in chunks (the case partitions cannot help: some owner
 * keeps more, so no partition is past every cutoff), alternately, PURGE_ROUNDS times.
 */
const SMALL = Number(process.env.BENCH_SCALE_SMALL ?? 1_000_000);
const LARGE = Number(process.env.BENCH_SCALE_LARGE ?? 20_000_000);
const DEVICES = 1000;
const STEP_MS = 15 * 60_000;
const DAY_MS = 86_400_000;
const SAMPLES = Number(process.env.BENCH_SCALE_SAMPLES ?? 300);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const INGEST_SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
/** Stretches of ingestion during the purge, each between two of ingestion alone, so the machine's drift falls on both. */
const PURGE_ROUNDS = Number(process.env.BENCH_PURGE_ROUNDS ?? 3);

interface ReadTimes {
  history: number;
  latest: number;
  events: number;
}

/** A fixed sequence of pseudo-random numbers in [0, 1), so both sizes read the same devices and days. */
function sequence(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let value = Math.imul(state ^ (state >>> 15), 1 | state);
    value ^= value + Math.imul(value ^ (value >>> 7), 61 | value);
    return ((value ^ (value >>> 14)) >>> 0) / 2 ** 32;
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/** Median milliseconds of each read over SAMPLES random devices and days among the last `days` (at most seven) before `until`. */
async function measureReads(store: TrackingStore, until: number, days: number): Promise<ReadTimes> {
  const random = sequence(16);
  const allDevices = Array.from({ length: DEVICES }, (_, index) => index + 1);
  const times: Record<keyof ReadTimes, number[]> = { history: [], latest: [], events: [] };
  const timed = async (key: keyof ReadTimes, read: () => Promise<unknown[]>, expectRows: boolean) => {
    const started = performance.now();
    const rows = await read();
    times[key].push(performance.now() - started);
    if (expectRows && rows.length === 0) throw new Error(`scale bench: the ${key} read found nothing`);
  };
  for (let sample = -20; sample < SAMPLES; sample++) {
    const deviceId = 1 + Math.floor(random() * DEVICES);
    const dayStart = until - (1 + Math.floor(random() * Math.min(7, days))) * DAY_MS;
    const day = { from: dayStart, to: dayStart + DAY_MS - 1 };
    await timed('history', () => store.positions.historyPage(deviceId, day, undefined, 5000), true);
    await timed('latest', () => store.positions.latestOf(allDevices), true);
    await timed('events', () => store.events.list({ deviceIds: [deviceId], range: day, types: [], limit: 1000 }), true);
    // The first twenty warm the caches and are not counted.
    if (sample < 0) for (const key of Object.keys(times) as (keyof ReadTimes)[]) times[key].pop();
  }
  return { history: median(times.history), latest: median(times.latest), events: median(times.events) };
}

const ingest = (positions: PositionService) => storeRowsRate(positions, INGEST_SECONDS, DEVICES);

/** Where the server's WAL has got to, in bytes: what a stretch of work wrote is the difference. */
async function walPosition(db: Kysely<TrackingTables>): Promise<number> {
  const { rows } = await sql<{ bytes: string }>`select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0') as bytes`.execute(db);
  return Number(rows[0]?.bytes);
}

/** A fresh database holding the fleet's history, and how long loading it took. */
async function loaded(adminUrl: string, fleet: FleetHistory): Promise<{ bench: BenchDatabase; database: Database; rows: number; seconds: number }> {
  const bench = await freshDatabase('postgres', tmpdir(), adminUrl);
  const database = openDatabase({ engine: 'postgres', url: bench.url });
  await migrateModules(database, [trackingMigrations]);
  const started = performance.now();
  const rows = await loadFleetHistory(database.db as Kysely<TrackingTables>, fleet, true);
  return { bench, database, rows, seconds: (performance.now() - started) / 1000 };
}

/** Each read's best median over ROUNDS, the two databases measured in turn so that the machine's noise falls on both. */
async function compareReads(small: TrackingStore, large: TrackingStore, until: number, days: number): Promise<{ small: ReadTimes; large: ReadTimes }> {
  const best = (a: ReadTimes | undefined, b: ReadTimes): ReadTimes =>
    a ? { history: Math.min(a.history, b.history), latest: Math.min(a.latest, b.latest), events: Math.min(a.events, b.events) } : b;
  let smallBest: ReadTimes | undefined;
  let largeBest: ReadTimes | undefined;
  for (let round = 0; round < ROUNDS; round++) {
    smallBest = best(smallBest, await measureReads(small, until, days));
    largeBest = best(largeBest, await measureReads(large, until, days));
  }
  return { small: smallBest as ReadTimes, large: largeBest as ReadTimes };
}

const ms = (value: number) => `${value.toFixed(2)} ms`;
const millions = (rows: number) => `${(rows / 1e6).toFixed(1)}M`;

export async function benchScale(): Promise<Figure[]> {
  const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  if (!adminUrl) return [{ name: 'PostgreSQL', value: 'skipped: set BENCH_DATABASE_URL (or TEST_DATABASE_URL) to a server where a database may be created' }];
  const until = Date.now();
  const recent: FleetHistory = { devices: DEVICES, stepMs: STEP_MS, reportsPerDevice: Math.round(SMALL / DEVICES), until, eventEvery: 10 };
  const whole: FleetHistory = { ...recent, reportsPerDevice: Math.round(LARGE / DEVICES) };
  const small = await loaded(adminUrl, recent);
  const large = await loaded(adminUrl, whole).catch(async (error: unknown) => {
    await small.database.close();
    await small.bench.drop();
    throw error;
  });
  try {
    const db = large.database.db as Kysely<TrackingTables>;
    const store = new TrackingStore(db);
    const days = Math.max(1, Math.floor((recent.reportsPerDevice * STEP_MS) / DAY_MS));
    const reads = await compareReads(new TrackingStore(small.database.db as Kysely<TrackingTables>), store, until, days);

    const log = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;
    const positions = new PositionService(store, unavailableDevices, unavailableUserDirectory, new HistoryCut(undefined, unavailableDevices), log);
    const cutoff = historyStart(whole) + 30 * DAY_MS;
    const purgeOldestMonth = () =>
      new RetentionJob({
        db,
        // The first device's owner keeps everything, so no partition is past every cutoff: the month goes in windows.
        policy: { cutoffOf: (ownerId) => Promise.resolve(ownerId === 1 ? null : cutoff) },
        ownersOf: (ids) => Promise.resolve(new Map(ids.map((id) => [id, id]))),
        chunkSize: 5000,
        clock: systemClock,
        log,
      });
    const walBeforeAlone = await walPosition(db);
    const alone = [await ingest(positions)];
    const walPerPosition = ((await walPosition(db)) - walBeforeAlone) / ((alone[0] as number) * INGEST_SECONDS);
    const during: number[] = [];
    const ratios: number[] = [];
    let purged = 0;
    let purgeSeconds = 0;
    let purgeWal = 0;
    let purgeEnded = false;
    for (let round = 0; round < PURGE_ROUNDS; round++) {
      // Each stretch takes up the purge where the last one stopped it.
      const job = purgeOldestMonth();
      const walBeforePurge = await walPosition(db);
      const purgeStarted = performance.now();
      let finished = false;
      const purge = job.run().then((run) => {
        finished = true;
        return run;
      });
      const rate = await ingest(positions);
      purgeEnded ||= finished;
      await job.stop();
      const run = await purge;
      purgeSeconds += (performance.now() - purgeStarted) / 1000;
      purged += (run?.positionsDeleted ?? 0) + (run?.eventsDeleted ?? 0);
      // What the purge wrote: the WAL of the stretch less what as many positions wrote alone.
      purgeWal += (await walPosition(db)) - walBeforePurge - rate * INGEST_SECONDS * walPerPosition;
      const after = await ingest(positions);
      ratios.push(rate / (((alone.at(-1) as number) + after) / 2));
      during.push(rate);
      alone.push(after);
    }

    const sizes = `${millions(small.rows)} / ${millions(large.rows)}`;
    const readFigures = (key: keyof ReadTimes, title: string): Figure[] => [
      { name: `${title}, best median at ${sizes}`, value: `${ms(reads.small[key])} / ${ms(reads.large[key])}` },
      { name: 'ratio (target <= 1.3)', value: (reads.large[key] / reads.small[key]).toFixed(2) },
    ];
    return [
      { name: 'positions loaded server-side (generate_series)', value: `${millions(small.rows)} in ${small.seconds.toFixed(0)} s, ${millions(large.rows)} in ${large.seconds.toFixed(0)} s` },
      ...readFigures('history', 'one device-day of history'),
      ...readFigures('latest', `latest positions of ${DEVICES} devices`),
      ...readFigures('events', "one device's events for a day"),
      { name: 'ingestion alone, before and after each purge, storeRows of 1 000', value: `${alone.map((rate) => rate.toFixed(0)).join(' / ')} positions/s` },
      { name: 'ingestion while the job purges the oldest month in chunks', value: `${during.map((rate) => rate.toFixed(0)).join(' / ')} positions/s${purgeEnded ? ' (the purge ended within a stretch)' : ''}` },
      { name: `ratio during / alone either side, median of ${PURGE_ROUNDS} (target >= 0.8)`, value: `${percentile(ratios, 0.5).toFixed(2)} (${ratios.map((ratio) => ratio.toFixed(2)).join(', ')})` },
      { name: 'rows the job purged meanwhile', value: `${purged} in ${purgeSeconds.toFixed(1)} s (${(purged / purgeSeconds).toFixed(0)} rows/s)` },
      { name: 'WAL per row purged (per position stored alone)', value: `${(purgeWal / Math.max(1, purged)).toFixed(0)} B (${walPerPosition.toFixed(0)} B)` },
    ];
  } finally {
    for (const { database, bench } of [small, large]) {
      await database.close();
      await bench.drop();
    }
  }
}

if (import.meta.main) {
  console.log('\nScale');
  for (const figure of await benchScale()) console.log(`  ${figure.name.padEnd(64)} ${figure.value}`);
}
