import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import { EventBus } from '../src/platform/bus.ts';
import { openDatabase } from '../src/platform/db/database.ts';
import type { Database } from '../src/platform/db/database.ts';
import { migrateModules } from '../src/platform/db/migrations.ts';
import { OUTBOX_CLAIM_SIZE, Outbox } from '../src/platform/outbox/outbox.ts';
import { OutboxRepository } from '../src/platform/outbox/repository.ts';
import { freshDatabase } from './ingestion.ts';
import type { Figure } from './measure.ts';

/**
 * The outbox draining a burst of FACTS facts (one consuming module, a handler that does nothing),
 * against a baseline in the same run: the same facts claimed alike and deleted one statement per
 * fact, as the outbox did before it deleted a claim's handled facts together. Best of ROUNDS each,
 * alternating; SQLite always, PostgreSQL when BENCH_DATABASE_URL (or TEST_DATABASE_URL) is set.
 */
const FACTS = 2000;
const ROUNDS = 3;
const CONSUMERS = { 'auth.user.deleted': ['devices'] } as const;

const log = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;

async function recordBurst(database: Database, outbox: Outbox): Promise<void> {
  for (let first = 0; first < FACTS; first += 100) {
    await database.db.transaction().execute(async (trx) => {
      for (let userId = first; userId < first + 100; userId++) await outbox.record(trx, 'auth.user.deleted', { userId });
    });
  }
}

/** Milliseconds the outbox takes to handle and delete the burst. */
async function drainBatched(database: Database): Promise<number> {
  const outbox = new Outbox({ database, consumers: CONSUMERS, bus: new EventBus(log), log, pollMs: 60_000 });
  outbox.consume('devices', 'auth.user.deleted', () => undefined);
  await recordBurst(database, outbox);
  const started = performance.now();
  outbox.start();
  await outbox.drainNow();
  const elapsed = performance.now() - started;
  await outbox.stop();
  return elapsed;
}

/** Milliseconds to claim the burst as the outbox does and delete each fact by its own statement. */
async function drainOneByOne(database: Database): Promise<number> {
  const outbox = new Outbox({ database, consumers: CONSUMERS, bus: new EventBus(log), log });
  await recordBurst(database, outbox);
  const repository = new OutboxRepository(database);
  const started = performance.now();
  for (;;) {
    const claimed = await repository.claim(['devices'], Date.now(), 10_000, OUTBOX_CLAIM_SIZE, 'bench');
    for (const row of claimed) await repository.complete([row.id], 'bench');
    if (claimed.length < OUTBOX_CLAIM_SIZE) break;
  }
  return performance.now() - started;
}

async function benchEngine(engine: 'sqlite' | 'postgres', dir: string, adminUrl: string | undefined): Promise<Figure[]> {
  const bench = await freshDatabase(engine, dir, adminUrl);
  const database = openDatabase(bench.config);
  try {
    await migrateModules(database, []);
    const batched: number[] = [];
    const oneByOne: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      batched.push(await drainBatched(database));
      oneByOne.push(await drainOneByOne(database));
    }
    const rate = (times: number[]) => FACTS / (Math.min(...times) / 1000);
    const label = engine === 'sqlite' ? 'SQLite' : 'PostgreSQL';
    return [
      { name: `${label}: a burst of ${FACTS} facts drained, facts/s (best of ${ROUNDS})`, value: rate(batched).toFixed(0) },
      { name: `${label}: baseline, each fact deleted by its own statement, facts/s`, value: rate(oneByOne).toFixed(0) },
      { name: `${label}: ratio`, value: (rate(batched) / rate(oneByOne)).toFixed(2) },
    ];
  } finally {
    await database.close();
    await bench.drop();
  }
}

export async function benchOutbox(): Promise<Figure[]> {
  const dir = mkdtempSync(path.join(tmpdir(), 'trackstack-bench-outbox-'));
  try {
    const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
    const figures = await benchEngine('sqlite', dir, undefined);
    if (adminUrl) figures.push(...(await benchEngine('postgres', dir, adminUrl)));
    else figures.push({ name: 'PostgreSQL', value: 'skipped: set BENCH_DATABASE_URL (or TEST_DATABASE_URL) to a server where a database may be created' });
    return figures;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
