import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { Kysely } from 'kysely';
import { CommandDelivery } from '../../../../src/services/tracking/commands/delivery.ts';
import type { DeviceLink } from '../../../../src/services/tracking/ingest/device-link.ts';
import { CommandRepository } from '../../../../src/services/tracking/commands/repository.ts';
import type { CommandRow, NewCommand } from '../../../../src/services/tracking/commands/repository.ts';
import { gt06Protocol } from '../../../../src/services/tracking/protocols/gt06/decoder.ts';
import type { TrackingTables } from '../../../../src/services/tracking/tables.ts';
import { describeEachEngine } from '../../../support/engines.ts';
import { eventually } from '../../../support/eventually.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestServer } from '../../../support/server.ts';

const TTL_MS = 60_000;

/** CommandDelivery on a real database, with links whose writes a test decides; the clock is the test's. */
describeEachEngine('command delivery', (engine) => {
  let server: TestServer;
  let repository: CommandRepository;
  let delivery: CommandDelivery;
  let now = 1_750_000_000_000;
  let nextDevice = 1000;

  before(async () => {
    server = await startTestServer(engine);
    repository = new CommandRepository(server.database!.db as Kysely<TrackingTables>);
    delivery = new CommandDelivery({ repository, bus: server.bus, redis: undefined, keyPrefix: 'unused', ttlMs: TTL_MS, maxQueuedPerDevice: 100, log: server.app.log, now: () => now });
  });
  after(() => server.dispose());

  const command = (deviceId: number, data: string, createdAt = now) => ({ deviceId, userId: 1, type: 'custom', attributes: { data }, createdAt });
  const stored = (row: CommandRow | undefined): CommandRow => {
    assert.ok(row, 'stored');
    return row;
  };
  /** A row queued as another instance queues it (no connection there, nothing routed here). */
  const queue = async (deviceId: number, data: string, createdAt = now) => stored(await repository.insert(command(deviceId, data, createdAt), { since: 0, max: Infinity }));
  const deliver = async (newCommand: NewCommand) => stored(await delivery.deliver(newCommand));
  const link = (write: (frame: Buffer) => boolean): DeviceLink => ({ protocol: gt06Protocol, uniqueId: '359710049090001', write });
  const statusOf = async (id: number) => (await repository.findById(id))?.status;
  const textOf = (frame: Buffer) => frame.subarray(9, frame.length - 6).toString('latin1');

  it('a command whose write finds the connection closed goes back to the queue and out on the next connection, in order', async () => {
    const deviceId = nextDevice++;
    const first = await queue(deviceId, 'FIRST#');
    const second = await queue(deviceId, 'SECOND#');
    delivery.attach(deviceId, link(() => false));
    await eventually(async () => (await statusOf(first.id)) === 'queued' && (await repository.findById(first.id))?.sent_at === null, 'the command back in the queue');
    assert.equal(await statusOf(second.id), 'queued');
    const retried = await deliver(command(deviceId, 'THIRD#'));
    assert.equal(retried.status, 'queued', 'the dead connection was let go');

    const written: string[] = [];
    delivery.attach(deviceId, link((frame) => written.push(textOf(frame)) > 0));
    await eventually(async () => written.length === 3, 'the queue sent on the next connection');
    assert.deepEqual(written, ['FIRST#', 'SECOND#', 'THIRD#']);
  });

  it('a send to a device connected here is stored sent and written; a command queued ahead of it goes first', async () => {
    const deviceId = nextDevice++;
    const written: string[] = [];
    delivery.attach(deviceId, link((frame) => written.push(textOf(frame)) > 0));
    const alone = await deliver(command(deviceId, 'ALONE#'));
    assert.deepEqual([alone.status, alone.sent_at], ['sent', now]);
    assert.deepEqual(written, ['ALONE#']);

    const ahead = await queue(deviceId, 'AHEAD#');
    const behind = await deliver(command(deviceId, 'BEHIND#'));
    assert.equal(behind.status, 'sent');
    assert.deepEqual(written, ['ALONE#', 'AHEAD#', 'BEHIND#']);
    assert.equal(await statusOf(ahead.id), 'sent');
  });

  it('a send to a device connected here that would wait behind a full queue is refused, storing and writing nothing', async () => {
    const small = new CommandDelivery({ repository, bus: server.bus, redis: undefined, keyPrefix: 'unused', ttlMs: TTL_MS, maxQueuedPerDevice: 2, log: server.app.log, now: () => now });
    const deviceId = nextDevice++;
    const written: string[] = [];
    small.attach(deviceId, link((frame) => written.push(textOf(frame)) > 0));
    // The connection's own flush runs first (it found nothing); the rows below wait, as those of another instance would.
    await new Promise((resolve) => setImmediate(resolve));
    await small.flush(deviceId);
    await queue(deviceId, 'ONE#');
    await queue(deviceId, 'TWO#');
    assert.equal(await small.deliver(command(deviceId, 'THREE#')), undefined);
    assert.deepEqual(written, []);
    const rows = await repository.history(deviceId, 0, now, 10);
    assert.deepEqual(rows.map((row) => [JSON.parse(row.attributes).data, row.status]), [['ONE#', 'queued'], ['TWO#', 'queued']]);
  });

  it('a send whose write finds the connection closed is answered queued and goes out on the next connection', async () => {
    const deviceId = nextDevice++;
    let open = true;
    delivery.attach(deviceId, link(() => open));
    assert.equal((await deliver(command(deviceId, 'BEFORE#'))).status, 'sent');
    open = false;
    const lost = await deliver(command(deviceId, 'AFTER#'));
    assert.deepEqual([lost.status, lost.sent_at], ['queued', null]);
    const written: string[] = [];
    delivery.attach(deviceId, link((frame) => written.push(textOf(frame)) > 0));
    await eventually(async () => (await statusOf(lost.id)) === 'sent', 'the command sent on the next connection');
    assert.deepEqual(written, ['AFTER#']);
  });

  it('sends racing to one connected device go out in id order; a command past the TTL holds none back', async () => {
    const deviceId = nextDevice++;
    const written: string[] = [];
    delivery.attach(deviceId, link((frame) => written.push(textOf(frame)) > 0));
    const stale = await queue(deviceId, 'STALE#', now - TTL_MS - 1);
    const sent = await Promise.all(['1#', '2#', '3#', '4#', '5#'].map((data) => deliver(command(deviceId, data))));
    assert.deepEqual(sent.map((row) => row.status), ['sent', 'sent', 'sent', 'sent', 'sent']);
    const inIdOrder = [...sent].sort((a, b) => a.id - b.id).map((row) => JSON.parse(row.attributes).data);
    assert.deepEqual(written, inIdOrder, 'the stale command was neither written nor waited for');
    assert.notEqual(await statusOf(stale.id), 'sent');
  });

  it('a command the protocol cannot express fails without a sentAt, and the next one still goes out', async () => {
    const deviceId = nextDevice++;
    const doomed = await queue(deviceId, 'x'.repeat(300));
    const written: Buffer[] = [];
    delivery.attach(deviceId, link((frame) => written.push(frame) > 0));
    await eventually(async () => (await statusOf(doomed.id)) === 'failed', 'the failure');
    assert.equal((await repository.findById(doomed.id))?.sent_at, null, 'nothing went out');
    const next = await deliver(command(deviceId, 'NEXT#'));
    assert.equal(next.status, 'sent');
    assert.equal(written.length, 1);
  });

  it('failed is final: no answer, expiry or new connection moves it', async () => {
    const deviceId = nextDevice++;
    const doomed = await queue(deviceId, 'x'.repeat(300));
    const written: Buffer[] = [];
    const first = link((frame) => written.push(frame) > 0);
    delivery.attach(deviceId, first);
    await eventually(async () => (await statusOf(doomed.id)) === 'failed', 'the failure');
    assert.equal(await delivery.answered(deviceId, doomed.id), undefined, 'an answer naming it finds no command awaiting one');
    assert.equal(await delivery.answered(deviceId, undefined), undefined);
    now += TTL_MS + 1;
    await delivery.sweep();
    delivery.detach(deviceId, first);
    delivery.attach(deviceId, link((frame) => written.push(frame) > 0));
    await delivery.flush(deviceId, { expire: true });
    assert.equal(await statusOf(doomed.id), 'failed');
    assert.equal(written.length, 0);
  });

  it('queued commands expire after the TTL, by the sweep or when the device connects; a detached device keeps its queue', async () => {
    const deviceId = nextDevice++;
    const old = await queue(deviceId, 'OLD#');
    now += TTL_MS + 1;
    const fresh = await queue(deviceId, 'FRESH#');
    await delivery.sweep();
    assert.deepEqual([await statusOf(old.id), await statusOf(fresh.id)], ['expired', 'queued']);

    const other = nextDevice++;
    const stale = await queue(other, 'STALE#');
    now += TTL_MS + 1;
    const written: Buffer[] = [];
    const connection = link((frame) => written.push(frame) > 0);
    delivery.attach(other, connection);
    await eventually(async () => (await statusOf(stale.id)) === 'expired', 'the expiry on connection');
    assert.equal(written.length, 0);

    delivery.detach(other, connection);
    const later = await deliver(command(other, 'LATER#'));
    assert.equal(later.status, 'queued');
  });

  it('an answer is tied to the command its sequence names, else to the oldest sent; each only once', async () => {
    const deviceId = nextDevice++;
    delivery.attach(deviceId, link(() => true));
    const first = await deliver(command(deviceId, 'A#'));
    const second = await deliver(command(deviceId, 'B#'));
    const third = await deliver(command(deviceId, 'C#'));
    assert.equal(await delivery.answered(deviceId, second.id), second.id);
    assert.equal(await delivery.answered(deviceId, second.id), first.id, 'already delivered: the oldest sent takes it');
    assert.equal(await delivery.answered(deviceId, undefined), third.id);
    assert.equal(await delivery.answered(deviceId, undefined), undefined);
    assert.equal(await delivery.answered(nextDevice++, first.id), undefined, "another device's command is never taken");
    assert.deepEqual([await statusOf(first.id), await statusOf(second.id), await statusOf(third.id)], ['delivered', 'delivered', 'delivered']);
  });

  it('removing a device removes its commands and protocol', async () => {
    const deviceId = nextDevice++;
    const command = await queue(deviceId, 'X#');
    await repository.setProtocol(deviceId, 'gt06', now);
    await repository.removeDevice(deviceId);
    assert.equal(await repository.findById(command.id), undefined);
    assert.equal(await repository.protocolOf(deviceId), undefined);
  });
});
