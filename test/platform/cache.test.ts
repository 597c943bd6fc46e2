import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { EventBus } from '../../src/platform/bus.ts';
import { ReadThroughCache } from '../../src/platform/cache.ts';
import type { ReadThroughCacheOptions } from '../../src/platform/cache.ts';

/**
 * A cache over `stored` on a clock the test moves. `load` counts its calls; while `hold` is on, each
 * load reads `stored` at once and answers only when the test releases it, so a load can overlap a change.
 */
function setup<V = string, I = never>(options: ReadThroughCacheOptions<V, I> = {}) {
  const state = { now: 1_000, hold: false, loads: [] as number[], stored: new Map<number, V>() };
  const held: (() => void)[] = [];
  const cache = new ReadThroughCache<number, V, I>({ ...options, now: () => state.now });
  const load = async (key: number): Promise<V> => {
    state.loads.push(key);
    const value = state.stored.get(key) as V;
    if (state.hold) await new Promise<void>((resolve) => held.push(resolve));
    return value;
  };
  const releaseAll = () => held.splice(0).forEach((release) => release());
  return { cache, state, load, releaseAll, get: (key: number) => cache.get(key, load) };
}

describe('ReadThroughCache', () => {
  it('loads a key once, then answers from memory, by get and by peek', async () => {
    const { cache, state, get } = setup();
    state.stored.set(1, 'one');
    assert.equal(cache.peek(1), undefined, 'nothing before the first load');
    assert.equal(await get(1), 'one');
    state.stored.set(1, 'changed');
    assert.equal(await get(1), 'one');
    assert.equal(cache.peek(1), 'one');
    assert.deepEqual(state.loads, [1]);
  });

  it('shares one load between concurrent gets of a key (single flight)', async () => {
    const { state, get, releaseAll } = setup();
    state.stored.set(1, 'one');
    state.stored.set(2, 'two');
    state.hold = true;
    const answers = Promise.all([get(1), get(1), get(2), get(1)]);
    releaseAll();
    assert.deepEqual(await answers, ['one', 'one', 'two', 'one']);
    assert.deepEqual(state.loads, [1, 2]);
  });

  it('answers a load that overlapped an invalidation of its key but does not keep it; later gets load afresh', async () => {
    const { cache, state, get, releaseAll } = setup();
    state.stored.set(1, 'before');
    state.hold = true;
    const early = get(1);
    // The write commits and is announced while the load above is still reading.
    state.stored.set(1, 'after');
    cache.invalidate(1);
    const late = get(1);
    releaseAll();
    assert.equal(await early, 'before');
    assert.equal(await late, 'after', 'a get after the invalidation did not join the stale load');
    state.hold = false;
    assert.equal(cache.peek(1), 'after');
    assert.equal(await get(1), 'after');
    assert.deepEqual(state.loads, [1, 1]);
  });

  it('keeps a load that overlapped an invalidation of another key', async () => {
    const { cache, state, get, releaseAll } = setup();
    state.stored.set(1, 'one');
    state.hold = true;
    const loading = get(1);
    cache.invalidate(2);
    releaseAll();
    await loading;
    assert.equal(cache.peek(1), 'one');
  });

  it('passes a failed load on to every caller and keeps nothing, so the next get tries again', async () => {
    const cache = new ReadThroughCache<number, string>();
    let failing = true;
    const load = async () => {
      if (failing) throw new Error('database unavailable');
      return 'one';
    };
    await Promise.all([assert.rejects(cache.get(1, load), /database unavailable/), assert.rejects(cache.get(1, load), /database unavailable/)]);
    failing = false;
    assert.equal(await cache.get(1, load), 'one');
  });

  it('does not keep undefined (nothing found), so what appears later is found at once', async () => {
    const { cache, state, get } = setup<string | undefined>();
    assert.equal(await get(1), undefined);
    state.stored.set(1, 'new');
    assert.equal(await get(1), 'new');
    assert.equal(cache.size, 1);
  });

  it('loads again once ttlMs has passed since the load started', async () => {
    const { cache, state, get } = setup({ ttlMs: 2_000 });
    state.stored.set(1, 'one');
    await get(1);
    state.stored.set(1, 'changed');
    state.now += 1_999;
    assert.equal(cache.peek(1), 'one');
    assert.equal(await get(1), 'one');
    state.now += 1;
    assert.equal(cache.peek(1), undefined, 'expired');
    assert.equal(await get(1), 'changed');
    assert.deepEqual(state.loads, [1, 1]);
  });

  it('invalidateAll drops every entry and sets aside every load in flight', async () => {
    const { cache, state, get, releaseAll } = setup();
    for (const key of [1, 2, 3]) state.stored.set(key, `v${key}`);
    await get(1);
    await get(2);
    state.hold = true;
    const loading = get(3);
    cache.invalidateAll();
    releaseAll();
    await loading;
    assert.deepEqual([cache.peek(1), cache.peek(2), cache.peek(3)], [undefined, undefined, undefined]);
    assert.equal(cache.size, 0);
  });

  describe('maxEntries', () => {
    it('evicts the least recently used entry (got or peeked) beyond the bound', async () => {
      const { cache, state, get } = setup({ maxEntries: 2 });
      for (const key of [1, 2, 3, 4]) state.stored.set(key, `v${key}`);
      await get(1);
      await get(2);
      await get(1);
      await get(3);
      assert.equal(cache.size, 2);
      assert.equal(cache.peek(2), undefined, '2 was used least recently');
      assert.equal(cache.peek(1), 'v1');
      await get(4);
      assert.equal(cache.peek(3), undefined, '1 was peeked since 3 was loaded');
      assert.equal(cache.peek(1), 'v1');
      assert.deepEqual(state.loads, [1, 2, 3, 4]);
    });

    it('counts each entry by weightOf, and does not keep an entry heavier than the bound', async () => {
      const { cache, state, get } = setup<number[]>({ maxEntries: 5, weightOf: (ids) => Math.max(ids.length, 1) });
      state.stored.set(1, [1, 2]);
      state.stored.set(2, [3, 4]);
      state.stored.set(3, []);
      state.stored.set(4, [5, 6]);
      state.stored.set(5, [1, 2, 3, 4, 5, 6]);
      for (const key of [1, 2, 3]) await get(key);
      await get(4);
      assert.deepEqual([cache.peek(1), cache.peek(2), cache.peek(3), cache.peek(4)], [undefined, [3, 4], [], [5, 6]], '2 + 1 + 2 fit');
      await get(5);
      await get(5);
      assert.deepEqual(state.loads, [1, 2, 3, 4, 5, 5], 'six weigh more than the whole cache');
      assert.equal(cache.size, 3);
    });
  });

  describe('index keys', () => {
    const lists = () => setup<number[], number>({ indexBy: (ids) => ids });

    it('invalidateBy drops every entry holding the index key, and nothing else', async () => {
      const { cache, state, get } = lists();
      state.stored.set(1, [10, 11]);
      state.stored.set(2, [11]);
      state.stored.set(3, [12]);
      for (const key of [1, 2, 3]) await get(key);
      cache.invalidateBy(11);
      assert.deepEqual([cache.peek(1), cache.peek(2), cache.peek(3)], [undefined, undefined, [12]]);
    });

    it('keeps the index in step with the entries: a key no longer held drops nothing', async () => {
      const { cache, state, get } = lists();
      state.stored.set(1, [10]);
      await get(1);
      state.stored.set(1, [20]);
      cache.invalidate(1);
      await get(1);
      cache.invalidateBy(10);
      assert.deepEqual(cache.peek(1), [20]);
      cache.invalidateBy(20);
      assert.equal(cache.peek(1), undefined);
    });

    it('invalidateBy sets aside every load in flight: none can tell yet what it will hold', async () => {
      const { cache, state, get, releaseAll } = lists();
      state.stored.set(1, [10]);
      state.hold = true;
      const early = get(1);
      state.stored.set(1, [10, 11]);
      cache.invalidateBy(11);
      const late = get(1);
      releaseAll();
      assert.deepEqual(await early, [10]);
      assert.deepEqual(await late, [10, 11]);
      assert.deepEqual(cache.peek(1), [10, 11]);
    });

    it('getBy answers by index key from memory, else reads and keeps the value under its key', async () => {
      const { cache, state, get } = lists();
      state.stored.set(1, [10, 11]);
      let reads = 0;
      const read = async (deviceId: number) => (reads++, [...state.stored.values()].find((ids) => ids.includes(deviceId)) as number[]);
      const keyOf = (ids: number[]) => [...state.stored].find(([, stored]) => stored === ids)?.[0] as number;
      assert.deepEqual(await cache.getBy(11, read, keyOf), [10, 11]);
      assert.deepEqual(await cache.getBy(10, read, keyOf), [10, 11]);
      assert.deepEqual(await get(1), [10, 11]);
      assert.equal(reads, 1);
      assert.deepEqual(state.loads, [], 'kept under key 1');
    });

    it('getBy does not keep a read that overlapped an invalidation', async () => {
      const { cache, state } = lists();
      state.stored.set(1, [10]);
      const gate = Promise.withResolvers<void>();
      const reading = cache.getBy(10, async () => {
        const before = [...(state.stored.get(1) as number[])];
        await gate.promise;
        return before;
      }, () => 1);
      state.stored.set(1, [10, 11]);
      cache.invalidate(1);
      gate.resolve();
      assert.deepEqual(await reading, [10]);
      assert.equal(cache.peek(1), undefined);
    });
  });

  it('invalidateOn drops the key each event of a topic names', async () => {
    const { cache, state, get } = setup();
    const bus = new EventBus(pino({ level: 'silent' }) as unknown as FastifyBaseLogger);
    cache.invalidateOn(bus, 'auth.user.changed', ({ userId }) => userId);
    state.stored.set(1, 'one');
    state.stored.set(2, 'two');
    await get(1);
    await get(2);
    await bus.publish('auth.user.changed', { userId: 1 });
    assert.deepEqual([cache.peek(1), cache.peek(2)], [undefined, 'two']);
  });
});
