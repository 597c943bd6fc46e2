import assert from 'node:assert/strict';
import { after, afterEach, before, it } from 'node:test';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { EventBus } from '../../src/platform/bus.ts';
import { migrateModules } from '../../src/platform/db/migrations.ts';
import { Outbox } from '../../src/platform/outbox/outbox.ts';
import type { OutboxOptions } from '../../src/platform/outbox/outbox.ts';
import { OutboxRepository } from '../../src/platform/outbox/repository.ts';
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
  });
  after(() => testDatabase.dispose());

  function outbox(options: Partial<OutboxOptions> = {}): Outbox {
    const created = new Outbox({ database: testDatabase.database, consumers: CONSUMERS, bus: new EventBus(log), log, pollMs: 20, ...options });
    running.push(created);
    return created;
  }

  const pending = () => new OutboxRepository(testDatabase.database).pending();

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

  it('lets another instance take over the facts of one that stopped mid-handler, after the lease', async () => {
    const crashed = outbox({ leaseMs: 200 });
    let started = false;
    crashed.consume('devices', 'auth.user.deleted', () => {
      started = true;
      return new Promise<void>(() => {}); // never finishes, as if the process died here
    });
    await crashed.record(testDatabase.database.db, 'auth.user.deleted', { userId: 9 });
    crashed.start();
    await eventually(() => started, 'the first instance claimed the fact');
    running.splice(running.indexOf(crashed), 1); // its handler never returns: nothing to wait for

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

  it('refuses to start a process whose module declares a fact it does not handle', () => {
    const consumer = outbox();
    consumer.consume('devices', 'auth.user.deleted', () => {});
    assert.throws(() => consumer.assertHandled(['devices', 'tracking']), /tracking consumes auth.user.deleted but registered no handler for it/);
    consumer.assertHandled(['devices', 'billing']);
  });

  it('refuses a handler of a module not declared as the topic’s consumer', () => {
    assert.throws(() => outbox().consume('billing', 'auth.user.deleted', () => {}), /billing is not declared as a consumer of auth.user.deleted/);
  });
});
