import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { tmpdir } from 'node:os';
import { after, before, it } from 'node:test';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { request } from 'undici';
import { WebSocket } from 'ws';
import { generatedRoute, runSimulation, simulatedIds } from '../src/cli/simulate.ts';
import { describeEachEngine } from './support/engines.ts';
import type { TestDatabase } from './support/engines.ts';
import { eventually } from './support/eventually.ts';
import { freePort } from './support/ports.ts';
import { callProcess, startProcess } from './support/processes.ts';
import type { RunningProcess } from './support/processes.ts';
import { NO_DEVICE_LISTENERS } from './support/server.ts';
import { acknowledgedLog, assertStoredOnce } from './support/acknowledged.ts';

const ADMIN = { email: 'drain-admin@example.com', password: 'Drain-Password-1' };
/** Kysely's PostgreSQL migration lock (pg_advisory_xact_lock), held by the test to keep a process migrating. */
const KYSELY_MIGRATION_LOCK = '3853314791062309107';

describeEachEngine('graceful drain and readiness', (engine) => {
  let dataDir: string;
  let database: TestDatabase | undefined;
  let env: Record<string, string>;
  let running: RunningProcess | undefined;

  before(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'trackstack-drain-'));
    let databaseUrl = `sqlite:${path.join(dataDir, 'trackstack.db')}`;
    if (engine.name === 'postgres') {
      database = await engine.createDatabase();
      databaseUrl = database.url;
      await database.database.close();
    }
    env = {
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      RATE_LIMITS: 'off',
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      DRAIN_DELAY: '2',
      ...NO_DEVICE_LISTENERS,
      TELTONIKA_PORT: String(await freePort()),
      OSMAND_PORT: String(await freePort()),
    };
  });
  after(async () => {
    await running?.stop();
    if (database) await database.dispose().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers ready: false on PORT while the database migrates, 503 STARTING elsewhere', async () => {
    const release = await holdMigrations(env['DATABASE_URL'] as string, path.join(dataDir, 'trackstack.db'));
    const port = await freePort();
    const started = startProcess({ ...env, PORT: String(port) }, { timeoutMs: 90_000 });
    // Ended whatever happens below, so a failure leaves no process holding the ports.
    started.then((process) => (running = process)).catch(() => undefined);
    try {
      const health = await answerOnceListening(`http://127.0.0.1:${port}/api/auth/health`);
      assert.equal(health.statusCode, 200);
      assert.deepEqual(await health.body.json(), { status: 'healthy', service: 'auth', ready: false, database: 'connected' });
      const tracking = await callProcess(`http://127.0.0.1:${port}`, 'GET', '/api/tracking/health');
      assert.equal(tracking.body.ready, false);
      const other = await callProcess(`http://127.0.0.1:${port}`, 'GET', '/api/devices');
      assert.equal(other.status, 503);
      assert.equal(other.body.code, 'STARTING');
    } finally {
      await release();
    }
    await started;
    const ready = await callProcess(running!.url, 'GET', '/api/auth/health');
    assert.equal(ready.body.ready, true);
    assert.equal(await running!.stop(), 0);
    running = undefined;
  });

  it('on SIGTERM: not ready at once, every acknowledged position stored once, live clients told to reconnect, exit 0', async () => {
    running = await startProcess(env, { timeoutMs: 90_000 });
    const base = running.url;
    const token = (await callProcess(base, 'POST', '/api/auth/login', undefined, ADMIN)).body.accessToken as string;
    const trackers: Record<'teltonika' | 'osmand', string[]> = {
      teltonika: simulatedIds('356307042460000', 4),
      osmand: simulatedIds('356307042470000', 4),
    };
    for (const uniqueId of Object.values(trackers).flat()) {
      assert.equal((await callProcess(base, 'POST', '/api/devices/', token, { name: uniqueId, uniqueId })).status, 201);
    }
    const live = new WebSocket(`${base.replace('http', 'ws')}/api/socket?token=${token}`);
    const closed = new Promise<number>((resolve) => live.on('close', (code) => resolve(code)));
    await new Promise((resolve, reject) => live.once('open', resolve).once('error', reject));

    const acknowledged = acknowledgedLog();
    const stop = new AbortController();
    const simulations = (['teltonika', 'osmand'] as const).map((protocol) =>
      runSimulation({
        protocol,
        host: '127.0.0.1',
        port: Number(env[protocol === 'teltonika' ? 'TELTONIKA_PORT' : 'OSMAND_PORT']),
        uniqueIds: trackers[protocol],
        rate: protocol === 'teltonika' ? 20 : 1,
        route: generatedRoute(),
        speedKmh: 50,
        stopSeconds: 0,
        reconnectDelayMs: 100,
        signal: stop.signal,
        onAcknowledged: acknowledged.record,
      }),
    );
    try {
      await eventually(() => acknowledged.count() >= 100, 'positions acknowledged before SIGTERM', 30_000);
      const stopped = running.stop();
      // DRAIN_DELAY keeps the listeners open meanwhile, so health answers.
      await eventually(async () => (await callProcess(base, 'GET', '/api/auth/health')).body.ready === false, 'auth health not ready', 1500);
      assert.equal((await callProcess(base, 'GET', '/api/tracking/health')).body.ready, false);
      assert.equal(await stopped, 0, running.output());
      assert.equal(await closed, 1001);
    } finally {
      stop.abort();
      live.terminate();
      await Promise.all(simulations);
    }

    running = await startProcess(env, { timeoutMs: 90_000 });
    const reader = (await callProcess(running.url, 'POST', '/api/auth/login', undefined, ADMIN)).body.accessToken as string;
    await assertStoredOnce(running.url, reader, acknowledged);
  });
});

/** The first answer of a listener about to open. */
async function answerOnceListening(url: string): Promise<Awaited<ReturnType<typeof request>>> {
  const deadline = Date.now() + 45_000;
  for (;;) {
    try {
      return await request(url);
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** Keeps the migrations of a process about to start waiting, until the answered function is called. */
async function holdMigrations(databaseUrl: string, sqliteFile: string): Promise<() => Promise<void>> {
  if (databaseUrl.startsWith('sqlite:')) {
    const connection = new SqliteDatabase(sqliteFile);
    connection.pragma('journal_mode = WAL');
    connection.exec('begin immediate');
    return async () => {
      connection.exec('commit');
      connection.close();
    };
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query('begin');
  await client.query(`select pg_advisory_xact_lock(${KYSELY_MIGRATION_LOCK})`);
  return async () => {
    await client.query('commit');
    await client.end();
  };
}
