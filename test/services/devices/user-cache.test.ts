import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { EventBus } from '../../../src/platform/bus.ts';
import { DeviceCaches } from '../../../src/services/devices/caches.ts';
import type { VisibleDevices } from '../../../src/services/devices/caches.ts';
import type { GrantRow, VisibleDeviceRow } from '../../../src/services/devices/repository.ts';

/**
 * The module's caches on a bus of their own, over `stored` (each user's device ids), with loaders
 * that record which users they read.
 */
function setup() {
  const bus = new EventBus(pino({ level: 'silent' }) as unknown as FastifyBaseLogger);
  const caches = new DeviceCaches(bus);
  const stored = new Map<number, number[]>();
  const loads: string[] = [];
  const idsOf = (userId: number) => stored.get(userId) ?? [];
  const listOf = async (userId: number): Promise<VisibleDevices> => {
    loads.push(`list ${userId}`);
    return new Map(idsOf(userId).map((id) => [id, { id } as VisibleDeviceRow]));
  };
  const grantsOf = async (userId: number): Promise<GrantRow[]> => {
    loads.push(`grants ${userId}`);
    return idsOf(userId).map((id) => ({ device_id: id }) as GrantRow);
  };
  /** Reads every user's list and grants (through the caches); answers what was loaded. */
  const readAll = async (...userIds: number[]) => {
    loads.length = 0;
    for (const userId of userIds) {
      await caches.lists.get(userId, listOf);
      await caches.grants.get(userId, grantsOf);
    }
    return [...loads];
  };
  return { bus, caches, stored, listOf, readAll };
}

describe('DeviceCaches', () => {
  it('loads a user once, then answers from memory', async () => {
    const { stored, readAll } = setup();
    stored.set(1, [10, 11]);
    assert.deepEqual(await readAll(1), ['list 1', 'grants 1']);
    assert.deepEqual(await readAll(1), []);
  });

  it('on devices.access.changed, drops the users named and every user who sees a device named, and nobody else', async () => {
    const { bus, stored, readAll } = setup();
    stored.set(1, [10, 11]);
    stored.set(2, [11]);
    stored.set(3, [12]);
    stored.set(4, []);
    await readAll(1, 2, 3, 4);

    await bus.publish('devices.access.changed', { userIds: [], deviceIds: [11] });
    assert.deepEqual(await readAll(1, 2, 3, 4), ['list 1', 'grants 1', 'list 2', 'grants 2'], 'owner and sharee of device 11');

    await bus.publish('devices.access.changed', { userIds: [4], deviceIds: [99] });
    assert.deepEqual(await readAll(1, 2, 3, 4), ['list 4', 'grants 4']);
  });

  it('on devices.device.deleted, drops every user who saw the device from both caches', async () => {
    const { bus, stored, readAll } = setup();
    stored.set(1, [10]);
    stored.set(2, [10, 20]);
    stored.set(3, [20]);
    await readAll(1, 2, 3);
    await bus.publish('devices.device.deleted', { deviceId: 10 });
    assert.deepEqual(await readAll(1, 2, 3), ['list 1', 'grants 1', 'list 2', 'grants 2']);
  });

  it('on devices.device.updated, drops the lists that show the devices and keeps the grants', async () => {
    const { bus, stored, readAll } = setup();
    stored.set(1, [10]);
    stored.set(2, [20]);
    await readAll(1, 2);
    await bus.publish('devices.device.updated', { deviceIds: [10] });
    assert.deepEqual(await readAll(1, 2), ['list 1']);
  });

  it('answers a load that overlapped a change but does not keep it (it may predate the write)', async () => {
    const { bus, caches, stored, listOf } = setup();
    stored.set(1, [10]);
    const gate = Promise.withResolvers<void>();
    const slow = caches.lists.get(1, async (userId) => {
      const answer = await listOf(userId);
      await gate.promise;
      return answer;
    });
    // The write commits and is announced while the load above is still running.
    stored.set(1, [10, 11]);
    await bus.publish('devices.access.changed', { userIds: [], deviceIds: [11] });
    gate.resolve();
    assert.deepEqual([...(await slow).keys()], [10]);
    assert.deepEqual([...(await caches.lists.get(1, listOf)).keys()], [10, 11], 'read afresh');
  });

  it('bounds each cache by the devices its entries hold: a user seeing more than a cache holds is not kept', async () => {
    const { stored, readAll } = setup();
    stored.set(1, Array.from({ length: 100_001 }, (_, index) => index + 1));
    await readAll(1);
    assert.deepEqual(await readAll(1), ['list 1'], 'the grants (up to 500 000) kept it; the lists (up to 100 000) did not');
  });
});
