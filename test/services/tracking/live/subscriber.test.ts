import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import type { DeviceAccess, DeviceView } from '../../../../src/services/devices/access.ts';
import type { LiveConnection } from '../../../../src/services/tracking/live/connection.ts';
import { Subscriber } from '../../../../src/services/tracking/live/subscriber.ts';
import { FakeClock } from '../support/fake-clock.ts';

const INTERVAL_MS = 1_000;

/** A subscriber over a fake device access (the user sees `visible`) and one recording socket. */
function subscriberOf(clock: FakeClock, visible: number[]) {
  const sent: unknown[] = [];
  const reads: number[][] = [];
  let finishRead: (() => void) | undefined;
  let accessReads = 0;
  const access = { userId: 1, grants: visible.map((deviceId) => ({ deviceId })) } as unknown as DeviceAccess;
  const subscriber = new Subscriber(1, {
    devices: {
      accessFor: () => {
        accessReads++;
        return Promise.resolve(access);
      },
      viewsFor: (_access, ids) => {
        reads.push([...ids]);
        return new Promise<DeviceView[]>((resolve) => {
          finishRead = () => resolve(ids.map((id) => ({ id }) as unknown as DeviceView));
        });
      },
    },
    log: pino({ level: 'silent' }),
    clock,
    accessRefreshMs: 60_000,
    deviceUpdateIntervalMs: INTERVAL_MS,
    applyAccess: (target, fresh) => {
      target.access = fresh;
      for (const { deviceId } of fresh.grants) target.devices.devices.add(deviceId);
      return [];
    },
  });
  subscriber.access = access;
  for (const deviceId of visible) subscriber.devices.devices.add(deviceId);
  subscriber.connections.add({ send: (data: Buffer) => sent.push(JSON.parse(data.toString())) } as unknown as LiveConnection);
  const change = (...deviceIds: number[]) => {
    for (const deviceId of deviceIds) subscriber.deviceChanged(deviceId);
    subscriber.sendChangedDevices();
  };
  const finish = async () => {
    finishRead?.();
    finishRead = undefined;
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { subscriber, change, finish, sent, reads, accessReads: () => accessReads };
}

describe('live subscriber: devices messages', () => {
  it('sends a change at once, then merges the changes of the next second into one message (one read), without devices not visible', async () => {
    const clock = new FakeClock();
    const { change, finish, sent, reads } = subscriberOf(clock, [1, 2, 3]);
    change(1);
    await finish();
    assert.deepEqual(sent, [{ devices: [{ id: 1 }] }]);

    clock.advance(200);
    change(2);
    change(3, 2, 99);
    clock.advance(799);
    assert.deepEqual(reads, [[1]], 'nothing read within the second');
    clock.advance(1);
    await finish();
    assert.deepEqual(reads, [[1], [2, 3]]);
    assert.deepEqual(sent, [{ devices: [{ id: 1 }] }, { devices: [{ id: 2 }, { id: 3 }] }]);
  });

  it('a change that arrives while the devices are being read goes in the next message', async () => {
    const clock = new FakeClock();
    const { change, finish, reads } = subscriberOf(clock, [1, 2]);
    change(1);
    clock.advance(INTERVAL_MS * 3);
    change(2);
    assert.deepEqual(reads, [[1]], 'reads never overlap');
    await finish();
    assert.deepEqual(reads, [[1], [2]], 'read when the first ended, its second long past');
  });

  it('reads the access again every accessRefreshMs, and stops with its last socket', async () => {
    const clock = new FakeClock();
    const { subscriber, change, accessReads, reads } = subscriberOf(clock, [1]);
    clock.advance(60_000);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(accessReads(), 1);
    subscriber.close();
    change(1);
    clock.advance(120_000);
    assert.equal(accessReads(), 1);
    assert.deepEqual(reads, []);
    assert.equal(clock.pending, 0, 'no timer left');
  });
});
