import assert from 'node:assert/strict';
import { after, afterEach, before, it } from 'node:test';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { migrateModules } from '../../src/platform/db/migrations.ts';
import { OutboxRepository } from '../../src/platform/outbox/repository.ts';
import type { OutboxRow } from '../../src/platform/outbox/repository.ts';
import { postponeUntil, WorkQueue } from '../../src/platform/work/queue.ts';
import type { Postponed, WorkQueueOptions } from '../../src/platform/work/queue.ts';
import { describeEachEngine } from '../support/engines.ts';
import type { TestDatabase } from '../support/engines.ts';
import { eventually } from '../support/eventually.ts';

const log = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;

/** The queue itself, over a real table (the outbox's) on each engine: concurrency, postponement, a hung handler. */
describeEachEngine('work queue', (engine) => {
  let testDatabase: TestDatabase;
  const running: WorkQueue<OutboxRow>[] = [];

  before(async () => {
    testDatabase = await engine.createDatabase();
    await migrateModules(testDatabase.database, []);
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((queue) => queue.stop()));
    await testDatabase.database.db.deleteFrom('outbox').execute();
  });
  after(() => testDatabase.dispose());

  function queue(handle: (row: OutboxRow, signal: AbortSignal) => Promise<void | Postponed>, options: Partial<WorkQueueOptions<OutboxRow>> = {}): WorkQueue<OutboxRow> {
    const created = new WorkQueue<OutboxRow>({ name: 'test', store: new OutboxRepository(testDatabase.database), consumers: () => ['work'], handle, log, pollMs: 60_000, ...options });
    running.push(created);
    return created;
  }
  const add = async (count: number) => {
    for (let n = 1; n <= count; n++) await OutboxRepository.insert(testDatabase.database.db, ['work'], 'test', JSON.stringify({ n }), Date.now());
  };
  const numberOf = (row: OutboxRow) => (JSON.parse(row.payload) as { n: number }).n;
  const rows = () => testDatabase.database.db.selectFrom('outbox').select(['payload', 'attempts', 'available_at', 'lease']).orderBy('id').execute();

  it('runs up to `concurrency` handlers at once, and claims again as a slot frees', async () => {
    let inFlight = 0;
    let most = 0;
    const handled: number[] = [];
    const work = queue(
      async (row) => {
        inFlight += 1;
        most = Math.max(most, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 20));
        inFlight -= 1;
        handled.push(numberOf(row));
      },
      { concurrency: 3, claimSize: 2 },
    );
    await add(10);
    work.start();
    await eventually(() => handled.length === 10, 'all handled', 5000);
    assert.equal(most, 3, 'three at once, never more, though a claim takes two');
    await eventually(async () => (await rows()).length === 0, 'and completed');
  });

  it('goes on past a handler that never resolves: it holds one slot until its timeout, then is retried', async () => {
    const handled: number[] = [];
    const work = queue(
      (row) => {
        if (numberOf(row) === 1) return new Promise<void>(() => {}); // never resolves, ignores its signal
        handled.push(numberOf(row));
        return Promise.resolve();
      },
      { concurrency: 2, claimSize: 2, handlerTimeoutMs: 1500, firstRetryMs: 60_000 },
    );
    await add(6);
    const started = Date.now();
    work.start();
    await eventually(() => handled.length === 5, 'the others handled through the free slot', 5000);
    assert.ok(Date.now() - started < 1500, 'before the hung handler timed out');
    await eventually(async () => (await rows()).length === 1, 'the hung one timed out', 5000);
    const [hung] = await rows();
    assert.deepEqual([JSON.parse(hung!.payload).n, Number(hung!.attempts)], [1, 1]);
    assert.ok(Number(hung!.available_at) > Date.now() + 30_000, 'due again after its backoff');
  });

  it('releases a postponed item due at the time its handler named, its attempt not counted, and does not claim it before then', async () => {
    const until = Date.now() + 60_000;
    let calls = 0;
    const work = queue(async () => {
      calls += 1;
      return postponeUntil(until);
    });
    await add(1);
    await work.drainNow();
    await work.drainNow();
    assert.equal(calls, 1, 'not claimed again before its time');
    const [row] = await rows();
    assert.deepEqual([Number(row!.attempts), Number(row!.available_at), row!.lease], [0, until, null]);
  });
});
