import { sql } from 'kysely';
import { pino } from 'pino';
import { request } from 'undici';
import type { FastifyBaseLogger } from 'fastify';
import { loadConfig } from '../src/config.ts';
import { EventBus } from '../src/platform/bus.ts';
import { openDatabase } from '../src/platform/db/database.ts';
import type { Database } from '../src/platform/db/database.ts';
import type { ModuleContext } from '../src/platform/module.ts';
import { Outbox } from '../src/platform/outbox/outbox.ts';
import { FACT_CONSUMERS } from '../src/modules.ts';
import { createAuthModule } from '../src/services/auth/module.ts';
import { createDevicesModule } from '../src/services/devices/module.ts';
import type { NewPosition, TrackingApi } from '../src/services/tracking/api.ts';
import { createTrackingModule } from '../src/services/tracking/module.ts';
import { HISTORY_LIMIT } from '../src/services/tracking/positions/service.ts';
import { measureThroughput } from './measure.ts';
import type { Figure } from './measure.ts';

/**
 * Tracking figures: a 100 000-position history served as JSON against the raw SELECT (plus
 * JSON.stringify) of the same rows in this process, and the latest positions of 1 000 devices.
 *
 * Seeding: the devices are created over HTTP by a user of their own (so other sections' figures
 * do not see them); the positions are stored through the tracking module's internal interface
 * (storePositions), by modules this process builds on the server's database, since ingestion has
 * no HTTP route. Timing that gives a third figure: stored positions per second in batches of 1 000.
 */
export interface TrackingBenchContext {
  baseUrl: string;
  /** An administrator's bearer token (unused: this section signs in a user of its own). */
  token: string;
  dataDir: string;
  databaseUrl: string;
}


const USER = { email: 'bench-tracking@example.com', password: 'Bench-Tracking-1' };
const DEVICES = 1_000;
const BATCH = 1_000;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const T0 = Date.parse('2025-01-01T00:00:00.000Z');

function positionAt(deviceId: number, index: number): NewPosition {
  const fixTime = T0 + index * 1000;
  return {
    deviceId,
    protocol: 'osmand',
    serverTime: fixTime + 700,
    deviceTime: fixTime,
    fixTime,
    valid: true,
    latitude: 52.52 + Math.sin(index / 500) / 100,
    longitude: 13.405 + Math.cos(index / 500) / 100,
    altitude: 34.5,
    speed: 12.3,
    course: index % 360,
    accuracy: 4,
    address: null,
    attributes: { sat: 9, ignition: true, odometer: index * 13 },
  };
}

async function signIn(baseUrl: string): Promise<string> {
  const response = await request(`${baseUrl}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(USER),
  });
  const body = (await response.body.json()) as { accessToken?: string };
  if (response.statusCode !== 200 || !body.accessToken) throw new Error(`tracking bench login failed: ${response.statusCode} ${JSON.stringify(body)}`);
  return body.accessToken;
}

async function createDevices(baseUrl: string, token: string): Promise<number[]> {
  const ids: number[] = [];
  const create = async (index: number) => {
    const response = await request(`${baseUrl}/api/devices/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ name: `Bench ${index}`, uniqueId: `bench-tracking-${index}` }),
    });
    const body = (await response.body.json()) as { id?: number };
    if (response.statusCode !== 201 || !body.id) throw new Error(`tracking bench: creating a device failed: ${response.statusCode} ${JSON.stringify(body)}`);
    ids[index] = body.id;
  };
  const concurrency = 16;
  for (let start = 0; start < DEVICES; start += concurrency) {
    await Promise.all(Array.from({ length: Math.min(concurrency, DEVICES - start) }, (_, offset) => create(start + offset)));
  }
  return ids;
}

/** Stores the history in batches and answers positions per second. */
async function seedHistory(tracking: TrackingApi, deviceId: number): Promise<number> {
  const started = performance.now();
  for (let start = 0; start < HISTORY_LIMIT; start += BATCH) {
    await tracking.storePositions(Array.from({ length: BATCH }, (_, offset) => positionAt(deviceId, start + offset)));
  }
  return HISTORY_LIMIT / ((performance.now() - started) / 1000);
}

/** The baseline: one SELECT of the history's rows and JSON.stringify of them, in this process. */
async function rawSelect(database: Database, deviceId: number): Promise<{ ms: number; rows: number }> {
  const started = performance.now();
  const result = await sql<Record<string, unknown>>`
    select * from positions where device_id = ${deviceId} and fix_time >= ${T0} and fix_time <= ${T0 + HISTORY_LIMIT * 1000}
    order by fix_time, id`.execute(database.db);
  JSON.stringify(result.rows);
  return { ms: performance.now() - started, rows: result.rows.length };
}

/** GET /api/positions/ of the whole history, downloaded to the last byte. */
async function download(baseUrl: string, token: string, deviceId: number): Promise<{ ms: number; bytes: number }> {
  const from = new Date(T0).toISOString();
  const to = new Date(T0 + HISTORY_LIMIT * 1000).toISOString();
  const started = performance.now();
  const response = await request(`${baseUrl}/api/positions/?deviceId=${deviceId}&from=${from}&to=${to}`, { headers: { authorization: `Bearer ${token}` } });
  let bytes = 0;
  for await (const chunk of response.body) bytes += (chunk as Buffer).length;
  if (response.statusCode !== 200) throw new Error(`tracking bench: history answered ${response.statusCode}`);
  return { ms: performance.now() - started, bytes };
}

export async function benchTracking(ctx: TrackingBenchContext): Promise<Figure[]> {
  const config = loadConfig({ DATA_DIR: ctx.dataDir, DATABASE_URL: ctx.databaseUrl, LOG_LEVEL: 'silent' });
  const database = openDatabase(config.database);
  try {
    const log = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;
    const bus = new EventBus(log);
    const outbox = new Outbox({ database, consumers: FACT_CONSUMERS, bus, log });
    const moduleContext: ModuleContext = { config, database, bus, outbox, log, internalToken: 'bench-tracking' };
    const auth = await createAuthModule(moduleContext);
    const devices = await createDevicesModule(moduleContext, { users: auth.api.users });
    const tracking = await createTrackingModule(moduleContext, { devices: devices.api, users: auth.api.users });

    if (!(await auth.api.users.findByEmail(USER.email))) await auth.api.accounts.create({ ...USER, emailVerified: true });
    const token = await signIn(ctx.baseUrl);
    const deviceIds = await createDevices(ctx.baseUrl, token);
    const [historyDevice] = deviceIds as [number];
    await tracking.api.storePositions(deviceIds.map((deviceId) => positionAt(deviceId, HISTORY_LIMIT + 1)));
    const storeRate = await seedHistory(tracking.api, historyDevice);

    let raw: { ms: number; rows: number } | undefined;
    let served: { ms: number; bytes: number } | undefined;
    for (let round = 0; round < Math.max(ROUNDS, 3); round++) {
      const a = await rawSelect(database, historyDevice);
      const b = await download(ctx.baseUrl, token, historyDevice);
      if (!raw || a.ms < raw.ms) raw = a;
      if (!served || b.ms < served.ms) served = b;
    }
    if (!raw || !served || raw.rows !== HISTORY_LIMIT) throw new Error(`tracking bench: expected ${HISTORY_LIMIT} rows, got ${raw?.rows}`);

    const latest = await measureThroughput({ url: `${ctx.baseUrl}/api/positions/`, headers: { authorization: `Bearer ${token}` }, connections: 10 });
    if (latest.non2xx > 0 || latest.errors > 0) throw new Error(`GET /api/positions/ failed during the run: ${latest.non2xx} non-2xx, ${latest.errors} errors`);

    return [
      { name: `storePositions, batches of ${BATCH}`, value: `${storeRate.toFixed(0)} positions/s` },
      { name: `(a) raw SELECT + JSON.stringify of ${HISTORY_LIMIT} positions`, value: `${raw.ms.toFixed(0)} ms` },
      { name: `(b) GET /api/positions/ history, ${HISTORY_LIMIT} positions`, value: `${served.ms.toFixed(0)} ms, ${(served.bytes / 1_048_576).toFixed(1)} MiB` },
      { name: 'ratio a/b (target >= 0.5)', value: (raw.ms / served.ms).toFixed(2) },
      { name: `GET /api/positions/, latest of ${DEVICES} devices`, value: `${latest.requestsPerSecond.toFixed(0)} req/s` },
    ];
  } finally {
    await database.close();
  }
}
