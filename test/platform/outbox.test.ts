import assert from 'node:assert/strict';
import { after, afterEach, before, it } from 'node:test';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { EventBus } from '../../src/platform/bus.ts';
import { migrateModules } from '../../src/platform/db/migrations.ts';
import { Outbox } from '../../src/platform/outbox/outbox.ts';
import type { OutboxOptions } from '../../src/platform/outbox/outbox.ts';
import { OutboxRepository } from '../../src/platform/outbox/repository.ts';
import type { AppError } from '../../src/platform/http/errors.ts';
import { DeadLetterService } from '../../src/platform/work/dead-letter-service.ts';
import { describeEachEngine } from '../support/engines.ts';
import type { TestDatabase } from '../support/engines.ts';
import { eventually } from '../support/eventually.ts';

const log = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;
const CONSUMERS = { 'auth.user.deleted': ['devices', 'tracking'] } as const;

describeEachEngine('outbox', (engine) => {
  let testDatabase: TestDatabase;
  const running: Outbox[] = [];

  before(async () => {
    testDatabase = await engine.createDatabase();
    await migrateModules(testDatabase.database, []);
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((outbox) => outbox.stop()));
    await testDatabase.database.db.deleteFrom('outbox').execute();
    await testDatabase.database.db.deleteFrom('dead_letters').execute();
  });
  after(() => testDatabase.dispose());

  function outbox(options: Partial<OutboxOptions> = {}): Outbox {
    const created = new Outbox({ database: testDatabase.database, consumers: CONSUMERS, bus: new EventBus(log), log, pollMs: 20, ...options });
    running.push(created);
    return created;
  }

  const pending = () => new OutboxRepository(testDatabase.database).pending();
  const deadLetters = () => testDatabase.database.db.selectFrom('dead_letters').selectAll().orderBy('id').execute();
  const record = (instance: Outbox, userId: number) => instance.record(testDatabase.database.db, 'auth.user.deleted', { userId });

  it('records a fact only with the transaction that commits it, once per consuming module', async () => {
    const writer = outbox();
    await assert.rejects(
      testDatabase.database.db.transaction().execute(async (trx) => {
        await writer.record(trx, 'auth.user.deleted', { userId: 1 });
        throw new Error('the change failed');
      }),
    );
    assert.deepEqual(await pending(), []);
    await testDatabase.database.db.transaction().execute((trx) => writer.record(trx, 'auth.user.deleted', { userId: 2 }));
    assert.deepEqual(
      (await pending()).map((row) => [row.consumer, row.topic]),
      [
        ['devices', 'auth.user.deleted'],
        ['tracking', 'auth.user.deleted'],
      ],
    );
  });

  it('hands each fact to each consuming module once, and forgets it after the handler succeeded', async () => {
    const consumer = outbox();
    const handled: string[] = [];
    consumer.consume('devices', 'auth.user.deleted', ({ userId }) => void handled.push(`devices ${userId}`));
    consumer.consume('tracking', 'auth.user.deleted', ({ userId }) => void handled.push(`tracking ${userId}`));
    await consumer.record(testDatabase.database.db, 'auth.user.deleted', { userId: 7 });
    consumer.start();
    await eventually(async () => (await pending()).length === 0, 'both handled');
    assert.deepEqual(handled.sort(), ['devices 7', 'tracking 7']);
  });

  it('drainNow returns only after the facts a wake-up during its pass brought: that pass runs them, no second one', async () => {
    const consumer = outbox({ pollMs: 60_000 });
    const handled: number[] = [];
    consumer.consume('devices', 'auth.user.deleted', async ({ userId }) => {
      // The first fact's handler records another and wakes the consumers, as its commit's hint would.
      if (userId === 1) {
        await consumer.record(testDatabase.database.db, 'auth.user.deleted', { userId: 2 });
        consumer.wake();
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
      handled.push(userId);
    });
    consumer.consume('tracking', 'auth.user.deleted', () => undefined);
    consumer.start();
    await consumer.record(testDatabase.database.db, 'auth.user.deleted', { userId: 1 });
    await consumer.drainNow();
    assert.deepEqual(handled, [1, 2]);
  });

  it('deletes the facts of a claim whose handlers succeeded together once the claim is through; a failed one stays for its retry', async () => {
    const consumer = outbox({ pollMs: 60_000, firstRetryMs: 60_000 });
    const devicesRowsDuringLast: number[] = [];
    consumer.consume('devices', 'auth.user.deleted', async ({ userId }) => {
      if (userId === 2) throw new Error('refused');
      if (userId === 3) devicesRowsDuringLast.push((await pending()).filter((row) => row.consumer === 'devices').length);
    });
    consumer.consume('tracking', 'auth.user.deleted', () => undefined);
    for (const userId of [1, 2, 3]) await consumer.record(testDatabase.database.db, 'auth.user.deleted', { userId });
    await consumer.drainNow();
    assert.deepEqual(devicesRowsDuringLast, [3], 'the first fact, handled earlier in the same claim, is deleted with the others, not alone');
    assert.deepEqual(
      (await pending()).map((row) => [row.consumer, row.attempts, row.last_error]),
      [['devices', 1, 'refused']],
    );
  });

  it('retries a throwing handler with backoff, delaying only that module', async () => {
    const consumer = outbox({ firstRetryMs: 20 });
    let healthy = false;
    let failures = 0;
    const tracking: number[] = [];
    const devices: number[] = [];
    consumer.consume('devices', 'auth.user.deleted', ({ userId }) => {
      if (!healthy) {
        failures++;
        throw new Error('database briefly unavailable');
      }
      devices.push(userId);
    });
    consumer.consume('tracking', 'auth.user.deleted', ({ userId }) => void tracking.push(userId));
    for (const userId of [1, 2, 3]) await consumer.record(testDatabase.database.db, 'auth.user.deleted', { userId });
    consumer.start();

    await eventually(() => tracking.length === 3 && failures >= 6, 'the other module went on while this one was retried', 5000);
    const stuck = (await pending()).filter((row) => row.consumer === 'devices');
    assert.equal(stuck.length, 3);
    for (const row of stuck) assert.equal(row.last_error, 'database briefly unavailable', 'the failure is kept with the fact');
    healthy = true;
    await eventually(async () => (await pending()).length === 0, 'the failing module caught up after its retries', 5000);
    assert.deepEqual(devices.sort(), [1, 2, 3]);
  });

  it('lets another instance take over the facts of one that died mid-handler, after the lease', async () => {
    const crashed = outbox({ leaseMs: 200 });
    let started = false;
    crashed.consume('devices', 'auth.user.deleted', () => {
      started = true;
      return new Promise<void>(() => {}); // never finishes, as if the process died here
    });
    await crashed.record(testDatabase.database.db, 'auth.user.deleted', { userId: 9 });
    crashed.start();
    await eventually(() => started, 'the first instance claimed the fact');
    // What the table sees of a process that died: its lease no longer renewed, no outcome written.
    await crashed.stop();

    const survivor = outbox({ leaseMs: 200 });
    const handled: number[] = [];
    survivor.consume('devices', 'auth.user.deleted', ({ userId }) => void handled.push(userId));
    survivor.start();
    await eventually(() => handled.length === 1, 'the survivor handled the fact once the lease ran out');
    assert.deepEqual(handled, [9]);
  });

  it('with several instances, each module handles each fact exactly once', async () => {
    const counts = new Map<string, number>();
    const instances = [outbox(), outbox(), outbox()];
    for (const instance of instances) {
      for (const module of ['devices', 'tracking'] as const) {
        instance.consume(module, 'auth.user.deleted', async ({ userId }) => {
          counts.set(`${module} ${userId}`, (counts.get(`${module} ${userId}`) ?? 0) + 1);
          await new Promise((resolve) => setImmediate(resolve));
        });
      }
    }
    const facts = 120;
    await testDatabase.database.db.transaction().execute(async (trx) => {
      for (let userId = 1; userId <= facts; userId++) await instances[0]!.record(trx, 'auth.user.deleted', { userId });
    });
    for (const instance of instances) instance.start();
    await eventually(async () => (await pending()).length === 0, 'every fact handled', 10_000);
    assert.equal(counts.size, facts * 2);
    assert.deepEqual([...new Set(counts.values())], [1]);
  });

  it('moves a fact whose handler always fails to the dead letters after the cap, and the module goes on with later facts', async () => {
    const consumer = outbox({ maxAttempts: 3, firstRetryMs: 10 });
    const handled: number[] = [];
    let failures = 0;
    consumer.consume('devices', 'auth.user.deleted', ({ userId }) => {
      if (userId === 1) {
        failures++;
        throw new Error(`refused ${userId}`);
      }
      handled.push(userId);
    });
    consumer.consume('tracking', 'auth.user.deleted', () => undefined);
    for (const userId of [1, 2, 3]) await record(consumer, userId);
    consumer.start();
    await eventually(async () => (await deadLetters()).length === 1, 'the failing fact reached the dead letters', 5000);
    await record(consumer, 4);
    await eventually(() => handled.length === 3, 'the later facts were handled', 5000);

    assert.deepEqual(handled, [2, 3, 4], 'in order');
    assert.equal(failures, 3, 'three attempts, no more');
    // Deleted once their claim is through, a moment after the last handler returned.
    await eventually(async () => (await pending()).length === 0, 'nothing left in the outbox');
    const [letter] = await deadLetters();
    assert.equal(letter!.queue, 'outbox');
    assert.equal(letter!.consumer, 'devices');
    assert.equal(letter!.topic, 'auth.user.deleted');
    assert.deepEqual(JSON.parse(letter!.payload), { userId: 1 });
    assert.equal(Number(letter!.attempts), 3);
    assert.equal(letter!.last_error, 'refused 1');
    assert.equal(letter!.retry_requested_at, null);
  });

  it('puts a dead letter back when an administrator asked for it, attempts from zero, and the fixed handler runs it', async () => {
    const consumer = outbox({ maxAttempts: 1, pollMs: 60_000 });
    let fixed = false;
    const handled: number[] = [];
    consumer.consume('devices', 'auth.user.deleted', ({ userId }) => {
      if (!fixed) throw new Error('refused');
      handled.push(userId);
    });
    consumer.consume('tracking', 'auth.user.deleted', () => undefined);
    consumer.start();
    await record(consumer, 5);
    await consumer.drainNow();
    const [letter] = await deadLetters();
    assert.ok(letter, 'dead-lettered at the first failure with a cap of 1');

    const service = new DeadLetterService(testDatabase.database, new EventBus(log));
    fixed = true;
    const requested = await service.retry(Number(letter.id));
    assert.ok(requested.retryRequestedAt, 'the request is on the letter');
    assert.equal((await service.list({ page: 1, limit: 10 })).deadLetters[0]?.retryRequestedAt, requested.retryRequestedAt, 'and listed');
    assert.deepEqual(handled, [], 'nothing runs before the owner’s pass');
    await consumer.drainNow();
    assert.deepEqual(handled, [5]);
    assert.deepEqual(await deadLetters(), []);
    assert.deepEqual(await pending(), []);
    await assert.rejects(service.retry(Number(letter.id)), (error: AppError) => error.code === 'DEAD_LETTER_NOT_FOUND');
  });

  it('times out a handler that never settles, aborts its signal, and the queue goes on; past the cap it is a dead letter', async () => {
    const consumer = outbox({ maxAttempts: 2, handlerTimeoutMs: 100, firstRetryMs: 10 });
    const handled: number[] = [];
    const aborted: string[] = [];
    consumer.consume('devices', 'auth.user.deleted', ({ userId }, signal) => {
      if (userId !== 1) return void handled.push(userId);
      signal.addEventListener('abort', () => aborted.push(String((signal.reason as Error).message)));
      return new Promise<void>(() => {}); // never settles
    });
    consumer.consume('tracking', 'auth.user.deleted', () => undefined);
    for (const userId of [1, 2, 3]) await record(consumer, userId);
    consumer.start();
    await eventually(async () => (await deadLetters()).length === 1, 'the hung fact reached the dead letters', 5000);
    await eventually(() => handled.length === 2, 'the facts behind it were handled', 5000);
    assert.deepEqual(handled, [2, 3]);
    assert.deepEqual(aborted, ['the handler did not finish within 100 ms', 'the handler did not finish within 100 ms']);
    const [letter] = await deadLetters();
    assert.equal(letter!.last_error, 'the handler did not finish within 100 ms');
    assert.equal(Number(letter!.attempts), 2);
    assert.deepEqual(await pending(), []);
  });

  it('renews the lease of a slow but live handler, so a second instance never takes its fact', async () => {
    const handled: string[] = [];
    // A lease long enough that a loaded machine's scheduling stalls never outlast two renewals (one a third of a lease).
    const slow = outbox({ leaseMs: 500 });
    slow.consume('devices', 'auth.user.deleted', async ({ userId }) => {
      handled.push(`slow ${userId}`);
      await new Promise((resolve) => setTimeout(resolve, 2500));
    });
    await record(slow, 1);
    slow.start();
    await eventually(() => handled.length === 1, 'the first instance claimed the fact');
    const other = outbox({ leaseMs: 500 });
    other.consume('devices', 'auth.user.deleted', ({ userId }) => void handled.push(`other ${userId}`));
    other.start();
    await eventually(async () => (await pending()).every((row) => row.consumer !== 'devices'), 'the slow handler finished', 10_000);
    await other.drainNow();
    assert.deepEqual(handled, ['slow 1'], 'five leases long, taken once');
  });

  it('dead-letters without running a fact claimed past the cap without an outcome (its handler ends the process every time)', async () => {
    const consumer = outbox({ maxAttempts: 3, pollMs: 60_000 });
    const handled: number[] = [];
    consumer.consume('devices', 'auth.user.deleted', ({ userId }) => void handled.push(userId));
    consumer.consume('tracking', 'auth.user.deleted', () => undefined);
    await record(consumer, 8);
    // Three claims that never came back, as after three crashes mid-handler.
    await testDatabase.database.db.updateTable('outbox').set({ attempts: 3 }).where('consumer', '=', 'devices').execute();
    consumer.start();
    await consumer.drainNow();
    assert.deepEqual(handled, []);
    const [letter] = await deadLetters();
    assert.equal(letter!.last_error, 'claimed 3 times without an outcome');
    assert.equal(Number(letter!.attempts), 4);
  });

  it('stops without waiting for a handler that ignores its signal; the fact comes back after the lease, the rest of the claim at once', async () => {
    const stopping = outbox({ leaseMs: 200 });
    let started = false;
    stopping.consume('devices', 'auth.user.deleted', () => {
      started = true;
      return new Promise<void>(() => {});
    });
    stopping.consume('tracking', 'auth.user.deleted', () => undefined);
    for (const userId of [1, 2]) await record(stopping, userId);
    stopping.start();
    await eventually(() => started, 'the handler runs');
    await stopping.stop();
    const rows = await testDatabase.database.db.selectFrom('outbox').selectAll().where('consumer', '=', 'devices').orderBy('id').execute();
    assert.deepEqual(
      rows.map((row) => [JSON.parse(row.payload).userId, Number(row.attempts), Number(row.available_at) > Date.now()]),
      [
        [1, 1, true],
        [2, 0, false],
      ],
      'the abandoned fact waits for its lease; the one never run is due again, its attempt not counted',
    );
  });

  it('refuses a handler of a module not declared as the topic’s consumer', () => {
    assert.throws(() => outbox().consume('billing', 'auth.user.deleted', () => {}), /billing is not declared as a consumer of auth.user.deleted/);
  });
});
