import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { pino } from 'pino';
import WebSocket from 'ws';
import { generatedRoute, registerDevices, runSimulation, simulatedIds } from '../src/cli/simulate.ts';
import type { SimulationStats } from '../src/cli/simulate.ts';
import type { DeviceProtocol } from '../src/services/tracking/protocols/registry.ts';
import type { DatabaseConfig } from '../src/config.ts';
import { openDatabase } from '../src/platform/db/database.ts';
import type { Database } from '../src/platform/db/database.ts';
import { migrateModules } from '../src/platform/db/migrations.ts';
import type { NewPosition } from '../src/services/tracking/api.ts';
import { unavailableDevices } from '../src/services/devices/access.ts';
import { unavailableUserDirectory } from '../src/services/auth/users/directory.ts';
import { trackingMigrations } from '../src/services/tracking/module.ts';
import { PositionService } from '../src/services/tracking/positions/service.ts';
import { HistoryCut } from '../src/services/tracking/history-cut.ts';
import { TrackingStore } from '../src/services/tracking/store.ts';
import type { TrackingTables } from '../src/services/tracking/tables.ts';
import { startProcess } from '../test/support/processes.ts';
import type { RunningProcess } from '../test/support/processes.ts';
import { processCpuMs } from './measure.ts';
import type { Figure } from './measure.ts';
import { BENCH_ADMIN, benchServerEnv, loginBenchAdmin } from './server.ts';
import { freePort } from '../test/support/ports.ts';

/**
 * End-to-end ingestion: DEVICES Teltonika trackers on their own TCP connections, each sending its
 * next record as soon as the previous one is acknowledged, against a server process; then the same
 * over JT808 (same connections, its 0x0200 report and 0x8001 answer) and over OsmAnd (HTTP). Beside it, in the same run, the ceiling: the batched insert the pipeline uses
 * (PositionService.storeRows, 1 000 rows per transaction) into the same table, from this process,
 * with no protocol, socket or engine in the way. Zero loss: every acknowledged record is stored,
 * and nothing else. The live delay: from a position's arrival at the server (its serverTime) to its
 * WebSocket message at a client of /api/socket watching every device, at saturation and at a steady
 * PACED_RATE positions per second spread over the devices (the load a deployment sees day to day).
 * The steady figure counts from the second second on: in the first, every device connects and
 * identifies itself at once, a reconnection storm that is reported on a line of its own.
 * The floor, beside them: a bare TCP echo server (bench/echo-server.ts) driven by the same trackers
 * over the same connections, and Teltonika's throughput as a share of its round trips. And the
 * server's CPU time per position at a steady STEADY_RATE, the figure that the machine's other load
 * moves least.
 *
 * SQLite always; PostgreSQL when BENCH_DATABASE_URL (or TEST_DATABASE_URL) names a server on which
 * a database may be created. The load comes from this process, which shares the machine's cores.
 */

const DEVICES = Number(process.env.BENCH_DEVICES ?? 1000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CEILING_SECONDS = 5;
const CEILING_BATCH = 1000;
const PACED_RATE = Number(process.env.BENCH_PACED_RATE ?? 2000);
/** The start of a paced run, when all devices connect at once, kept apart from its steady rate. */
const CONNECTING_MS = 1000;
/** Positions per second of the run that measures CPU per position: a rate the server keeps up with. */
const STEADY_RATE = Number(process.env.BENCH_STEADY_RATE ?? 3000);
/** Where that run's CPU window starts: after the connections' storm and the backlog it leaves. */
const STEADY_WINDOW_FROM_MS = 2000;

/** A fresh database of the engine for one use, and how to remove it. */
export interface BenchDatabase {
  url: string;
  config: DatabaseConfig;
  drop(): Promise<void>;
}

export async function freshDatabase(engine: 'sqlite' | 'postgres', dir: string, adminUrl: string | undefined): Promise<BenchDatabase> {
  if (engine === 'sqlite') {
    const file = path.join(dir, `bench-${randomBytes(4).toString('hex')}.db`);
    return { url: `sqlite:${file}`, config: { engine: 'sqlite', file }, drop: async () => undefined };
  }
  const name = `trackstack_bench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`).finally(() => admin.end());
  const url = new URL(adminUrl as string);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    config: { engine: 'postgres', url: url.toString() },
    async drop() {
      const dropper = new pg.Client({ connectionString: adminUrl });
      await dropper.connect();
      await dropper.query(`drop database if exists ${name} with (force)`).finally(() => dropper.end());
    },
  };
}

function benchPosition(deviceId: number, index: number): NewPosition {
  const time = Date.now();
  return {
    deviceId,
    protocol: 'teltonika',
    serverTime: time,
    deviceTime: time - 500,
    fixTime: time - 500,
    valid: true,
    latitude: 52.52 + (index % 1000) / 1e5,
    longitude: 13.4,
    altitude: 35,
    speed: 20,
    course: 90,
    accuracy: 0,
    attributes: { priority: 0, sat: 9, event: 0, ignition: true, motion: true, odometer: index * 10 },
  };
}

/** The ceiling: PositionService.storeRows of 1 000-row batches into a fresh positions table, rows per second. */
async function insertCeiling(database: BenchDatabase): Promise<number> {
  const opened: Database = openDatabase(database.config);
  try {
    await migrateModules(opened, [trackingMigrations]);
    const log = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;
    const positions = new PositionService(new TrackingStore(opened.db as Kysely<TrackingTables>), unavailableDevices, unavailableUserDirectory, new HistoryCut(undefined, unavailableDevices), log);
    return await storeRowsRate(positions, CEILING_SECONDS, DEVICES);
  } finally {
    await opened.close();
  }
}

/** Positions per second PositionService.storeRows writes in 1 000-row batches over `devices` devices for `seconds`. */
export async function storeRowsRate(positions: PositionService, seconds: number, devices: number): Promise<number> {
  let rows = 0;
  const started = performance.now();
  while (performance.now() - started < seconds * 1000) {
    await positions.storeRows(Array.from({ length: CEILING_BATCH }, (_, index) => benchPosition(1 + ((rows + index) % devices), rows + index)));
    rows += CEILING_BATCH;
  }
  return rows / ((performance.now() - started) / 1000);
}

/**
 * Simulated devices on 127.0.0.1:`port` for `seconds`, each sending `ratePerDevice` positions a second
 * (0: as fast as acknowledged); `onSecond` gets the counts so far once a second.
 */
export function simulateLoad(
  protocol: DeviceProtocol,
  port: number,
  uniqueIds: string[],
  ratePerDevice: number,
  seconds: number,
  onSecond?: (stats: SimulationStats) => void,
): Promise<SimulationStats> {
  return runSimulation({ protocol, host: '127.0.0.1', port, uniqueIds, rate: ratePerDevice, route: generatedRoute(), speedKmh: 50, stopSeconds: 60, durationMs: seconds * 1000 }, onSecond, 1000);
}

/** The bare TCP echo server, a process of its own as the server is. */
async function startEchoServer(): Promise<{ pid: number; port: number; stop(): Promise<void> }> {
  const child = fork(path.join(import.meta.dirname, 'echo-server.ts'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const [{ port }] = (await once(child, 'message')) as [{ port: number }];
  return {
    pid: child.pid as number,
    port,
    async stop() {
      const exited = once(child, 'exit');
      child.disconnect();
      await exited;
    },
  };
}

/**
 * Teltonika trackers paced at STEADY_RATE against the process `pid` listening on `port`: its CPU time
 * (user + system, every thread of it) per acknowledged position over the run from
 * STEADY_WINDOW_FROM_MS on, and the rate achieved in that window.
 */
export async function steadyCpu(pid: number, port: number, uniqueIds: string[]): Promise<{ perSecond: number; cpuMicrosPerPosition: number }> {
  const started = performance.now();
  const samples: { at: number; acknowledged: number; cpuMs: number }[] = [];
  await simulateLoad('teltonika', port, uniqueIds, STEADY_RATE / uniqueIds.length, SECONDS, (stats) => {
    samples.push({ at: performance.now() - started, acknowledged: stats.acknowledged, cpuMs: processCpuMs(pid) });
  });
  const first = samples.find((sample) => sample.at >= STEADY_WINDOW_FROM_MS);
  const last = samples.at(-1);
  if (!first || !last || last === first) throw new Error(`the steady run is too short for its CPU window: set BENCH_SECONDS above ${STEADY_WINDOW_FROM_MS / 1000 + 1}`);
  const positions = last.acknowledged - first.acknowledged;
  return {
    perSecond: positions / ((last.at - first.at) / 1000),
    cpuMicrosPerPosition: ((last.cpuMs - first.cpuMs) * 1000) / Math.max(1, positions),
  };
}

async function storedPositions(database: Database): Promise<number> {
  const row = await (database.db as Kysely<TrackingTables>).selectFrom('positions').select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow();
  return Number(row.count);
}

/** A position's arrival at the server (its serverTime, epoch ms) and the delay until its live message. */
export interface LiveDelay {
  arrivedAt: number;
  delayMs: number;
}

/**
 * A WebSocket client of /api/socket: the delay from each position's arrival at the server to its
 * message here. The latest positions sent on connect are not counted.
 */
export async function measureLiveDelay(socketUrl: string, token: string): Promise<{ stop(): LiveDelay[] }> {
  const delays: LiveDelay[] = [];
  const socket = new WebSocket(socketUrl, { headers: { authorization: `Bearer ${token}` } });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  let initial = true;
  socket.on('message', (data: Buffer) => {
    const now = Date.now();
    const message = JSON.parse(data.toString()) as { positions?: { serverTime: string }[] };
    if (!message.positions) return;
    if (initial) {
      initial = false;
      return;
    }
    for (const position of message.positions) {
      const arrivedAt = Date.parse(position.serverTime);
      delays.push({ arrivedAt, delayMs: now - arrivedAt });
    }
  });
  return {
    stop() {
      socket.close();
      return delays;
    },
  };
}

export function percentile(values: number[], share: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))] as number;
}

/** A CPU figure of a paced run, flagged when the process fell behind the rate (its batches grow, and the figure falls with them). */
export function steadyFigure(run: { perSecond: number; cpuMicrosPerPosition: number }): string {
  const behind = run.perSecond < 0.95 * STEADY_RATE ? ', behind the rate: not a steady-state figure' : '';
  return `${run.cpuMicrosPerPosition.toFixed(0)} µs (${run.perSecond.toFixed(0)}/s${behind})`;
}

function delayFigure(delays: LiveDelay[]): string {
  const millis = delays.map((delay) => delay.delayMs);
  return millis.length === 0 ? 'no messages' : `${percentile(millis, 0.5)} / ${percentile(millis, 0.99)} ms (${millis.length} positions)`;
}

async function benchEngine(engine: 'sqlite' | 'postgres', adminUrl: string | undefined): Promise<Figure[]> {
  const dir = mkdtempSync(path.join(tmpdir(), 'trackstack-bench-ingestion-'));
  const databases: BenchDatabase[] = [];
  let server: RunningProcess | undefined;
  let echoServer: Awaited<ReturnType<typeof startEchoServer>> | undefined;
  const label = engine === 'sqlite' ? 'SQLite' : 'PostgreSQL';
  try {
    const ceilingDatabase = await freshDatabase(engine, dir, adminUrl);
    databases.push(ceilingDatabase);
    const ceiling = await insertCeiling(ceilingDatabase);

    const serverDatabase = await freshDatabase(engine, dir, adminUrl);
    databases.push(serverDatabase);
    const ports = { teltonika: await freePort(), osmand: await freePort(), jt808: await freePort() };
    server = await startProcess(
      benchServerEnv(dir, {
        DATABASE_URL: serverDatabase.url,
        TELTONIKA_PORT: String(ports.teltonika),
        OSMAND_PORT: String(ports.osmand),
        JT808_PORT: String(ports.jt808),
      }),
    );
    const uniqueIds = simulatedIds('861000000000000', DEVICES);
    await registerDevices({ url: server.url, ...BENCH_ADMIN, protocol: 'teltonika', uniqueIds, speedKmh: 50, stopSeconds: 60 });
    const accessToken = await loginBenchAdmin(server.url);
    echoServer = await startEchoServer();

    const observer = openDatabase(serverDatabase.config);
    try {
      const run = async (protocol: DeviceProtocol, withLiveDelay: boolean, ratePerDevice = 0) => {
        const live = withLiveDelay ? await measureLiveDelay(`${server!.url.replace(/^http/, 'ws')}/api/socket`, accessToken) : undefined;
        const before = await storedPositions(observer);
        const started = performance.now();
        const startedAt = Date.now();
        const stats = await simulateLoad(protocol, ports[protocol as keyof typeof ports], uniqueIds, ratePerDevice, SECONDS);
        const seconds = (performance.now() - started) / 1000;
        // Everything acknowledged was stored before its acknowledgement; give the count a moment to be sure nothing more arrives.
        await new Promise((resolve) => setTimeout(resolve, 500));
        const stored = (await storedPositions(observer)) - before;
        const delays = live?.stop() ?? [];
        return { stats, seconds, stored, delays, startedAt };
      };

      // The floor right before the figure it is the floor of, so that both see the same machine; that
      // Teltonika run has no WebSocket client either, whose messages would cost the load generator.
      const echoStarted = performance.now();
      const echo = await simulateLoad('teltonika', echoServer.port, uniqueIds, 0, SECONDS);
      const echoPerSecond = echo.acknowledged / ((performance.now() - echoStarted) / 1000);
      const beside = await run('teltonika', false);
      const teltonika = await run('teltonika', true);
      const steady = await steadyCpu(server.child.pid as number, ports.teltonika, uniqueIds);
      const echoSteady = await steadyCpu(echoServer.pid, echoServer.port, uniqueIds);
      const paced = await run('teltonika', true, PACED_RATE / DEVICES);
      const jt808 = await run('jt808', false);
      const osmand = await run('osmand', false);
      const perSecond = (result: { stats: SimulationStats; seconds: number }) => result.stats.acknowledged / result.seconds;
      const connecting = (delay: LiveDelay) => delay.arrivedAt < paced.startedAt + CONNECTING_MS;
      return [
        { name: `${label}: ceiling, storeRows of ${CEILING_BATCH}-row batches`, value: `${ceiling.toFixed(0)} positions/s` },
        { name: `${label}: Teltonika, ${DEVICES} connections, stored and acknowledged`, value: `${perSecond(teltonika).toFixed(0)} positions/s` },
        { name: `${label}: Teltonika / ceiling (target >= 0.3)`, value: (perSecond(teltonika) / ceiling).toFixed(2) },
        { name: `${label}: bare TCP echo, the same ${DEVICES} connections and frames`, value: `${echoPerSecond.toFixed(0)} round trips/s` },
        { name: `${label}: Teltonika right after it, no WebSocket client`, value: `${perSecond(beside).toFixed(0)} positions/s` },
        { name: `${label}: Teltonika / bare TCP echo`, value: (perSecond(beside) / echoPerSecond).toFixed(2) },
        { name: `${label}: server CPU per position, steady ${STEADY_RATE}/s (achieved)`, value: steadyFigure(steady) },
        { name: `${label}: echo process CPU per round trip, steady ${STEADY_RATE}/s (achieved)`, value: steadyFigure(echoSteady) },
        { name: `${label}: Teltonika loss (stored - acknowledged, target 0)`, value: `${teltonika.stored - teltonika.stats.acknowledged} (${teltonika.stored} stored)` },
        { name: `${label}: live delay arrival -> WebSocket at saturation, p50 / p99`, value: delayFigure(teltonika.delays) },
        { name: `${label}: Teltonika paced at ${PACED_RATE}/s (achieved)`, value: `${perSecond(paced).toFixed(0)} positions/s` },
        { name: `${label}: live delay at ${PACED_RATE}/s, p50 / p99 (target p99 < 50 ms)`, value: delayFigure(paced.delays.filter((delay) => !connecting(delay))) },
        { name: `${label}: the same, first second (${DEVICES} devices connecting), p50 / p99`, value: delayFigure(paced.delays.filter(connecting)) },
        { name: `${label}: JT808, ${DEVICES} connections, stored and acknowledged`, value: `${perSecond(jt808).toFixed(0)} positions/s` },
        { name: `${label}: JT808 / Teltonika (target >= 0.8)`, value: (perSecond(jt808) / perSecond(teltonika)).toFixed(2) },
        { name: `${label}: JT808 loss (stored - acknowledged, target 0)`, value: `${jt808.stored - jt808.stats.acknowledged} (${jt808.stored} stored)` },
        { name: `${label}: OsmAnd HTTP, ${DEVICES} devices, stored and answered 200`, value: `${perSecond(osmand).toFixed(0)} positions/s` },
        { name: `${label}: OsmAnd loss (stored - acknowledged, target 0)`, value: `${osmand.stored - osmand.stats.acknowledged} (${osmand.stored} stored)` },
      ];
    } finally {
      await observer.close();
    }
  } finally {
    await echoServer?.stop();
    await server?.stop();
    for (const database of databases) await database.drop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A section's figures on SQLite, then on PostgreSQL when BENCH_DATABASE_URL (or TEST_DATABASE_URL) names a server. */
export async function onBenchEngines(benchOne: (engine: 'sqlite' | 'postgres', adminUrl: string | undefined) => Promise<Figure[]>): Promise<Figure[]> {
  const figures = await benchOne('sqlite', undefined);
  const postgresUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  if (postgresUrl) figures.push(...(await benchOne('postgres', postgresUrl)));
  else figures.push({ name: 'PostgreSQL', value: 'skipped: set BENCH_DATABASE_URL (or TEST_DATABASE_URL) to a server where a database may be created' });
  return figures;
}

export function benchIngestion(): Promise<Figure[]> {
  return onBenchEngines(benchEngine);
}

if (import.meta.main) {
  console.log('\nIngestion');
  for (const figure of await benchIngestion()) console.log(`  ${figure.name.padEnd(64)} ${figure.value}`);
}
