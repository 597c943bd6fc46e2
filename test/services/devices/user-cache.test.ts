import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PerUserCache } from '../../../src/services/devices/user-cache.ts';

/** A cache of device-id lists, with a loader that counts its calls and answers from `stored`. */
function setup(maxDevices = 100) {
  const stored = new Map<number, number[]>();
  const loads: number[] = [];
  const cache = new PerUserCache<number[]>((ids) => ids, maxDevices);
  const get = (userId: number) =>
    cache.get(userId, async () => {
      loads.push(userId);
      return [...(stored.get(userId) ?? [])];
    });
  return { stored, loads, cache, get };
}

describe('PerUserCache', () => {
  it('loads a user once, then answers from memory', async () => {
    const { stored, loads, get } = setup();
    stored.set(1, [10, 11]);
    assert.deepEqual(await get(1), [10, 11]);
    stored.set(1, [10, 11, 12]);
    assert.deepEqual(await get(1), [10, 11], 'no change was announced');
    assert.deepEqual(loads, [1]);
  });

  it('drops the users named and every user who sees a device named, and nobody else', async () => {
    const { stored, loads, cache, get } = setup();
    stored.set(1, [10, 11]);
    stored.set(2, [11]);
    stored.set(3, [12]);
    stored.set(4, []);
    for (const userId of [1, 2, 3, 4]) await get(userId);
    loads.length = 0;

    cache.forget({ userIds: [], deviceIds: [11] });
    for (const userId of [1, 2, 3, 4]) await get(userId);
    assert.deepEqual(loads, [1, 2], 'owner and sharee of device 11');

    loads.length = 0;
    cache.forget({ userIds: [4], deviceIds: [99] });
    for (const userId of [1, 2, 3, 4]) await get(userId);
    assert.deepEqual(loads, [4]);
  });

  it('keeps the device index in step: a user who no longer sees a device is not dropped for it', async () => {
    const { stored, loads, cache, get } = setup();
    stored.set(1, [10]);
    await get(1);
    stored.set(1, [20]);
    cache.forget({ userIds: [1], deviceIds: [] });
    assert.deepEqual(await get(1), [20]);
    loads.length = 0;
    cache.forget({ userIds: [], deviceIds: [10] });
    await get(1);
    assert.deepEqual(loads, [], 'device 10 is no longer in its entry');
  });

  it('answers a load that overlapped a change but does not keep it (it may predate the write)', async () => {
    const { stored, loads, cache } = setup();
    stored.set(1, [10]);
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow = cache.get(1, async () => {
      loads.push(1);
      const answer = [...(stored.get(1) ?? [])];
      await gate;
      return answer;
    });
    // The write commits and is announced while the load above is still running.
    stored.set(1, [10, 11]);
    cache.forget({ userIds: [], deviceIds: [11] });
    release();
    assert.deepEqual(await slow, [10]);
    assert.deepEqual(await cache.get(1, async () => [...(stored.get(1) ?? [])]), [10, 11], 'read afresh');
  });

  it('holds at most maxDevices devices, dropping the oldest entries first', async () => {
    const { stored, loads, get } = setup(5);
    stored.set(1, [1, 2]);
    stored.set(2, [3, 4]);
    stored.set(3, []);
    stored.set(4, [5, 6]);
    for (const userId of [1, 2, 3, 4]) await get(userId);
    loads.length = 0;
    for (const userId of [4, 3, 2]) await get(userId);
    assert.deepEqual(loads, [], '2 + 1 + 2 devices fit');
    await get(1);
    assert.deepEqual(loads, [1], 'the oldest entry went');
  });

  it('does not keep an entry larger than the whole cache', async () => {
    const { stored, loads, get } = setup(2);
    stored.set(1, [1, 2, 3]);
    await get(1);
    await get(1);
    assert.deepEqual(loads, [1, 1]);
  });
});
