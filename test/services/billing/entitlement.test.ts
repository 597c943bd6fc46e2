import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { CachedEntitlement } from '../../../src/services/billing/entitlement.ts';
import { PlanCatalog } from '../../../src/services/billing/plans/catalog.ts';
import { checkOf, isEntitled } from '../../../src/services/billing/subscription-check.ts';
import type { EntitlementRecord } from '../../../src/services/billing/subscription-check.ts';
import type { SubscriptionStatus } from '../../../src/services/billing/providers/index.ts';

const NOW = 1_800_000_000_000;
const HOUR = 3_600_000;

function record(status: SubscriptionStatus, currentPeriodEnd: number | null, overrides: Partial<EntitlementRecord> = {}): EntitlementRecord {
  return { provider: 'stripe', planId: 'plan', status, currentPeriodEnd, lastEventAt: NOW - HOUR, ...overrides };
}

describe('billing entitlement rule', () => {
  const rows: [SubscriptionStatus, number | null, boolean][] = [
    ['ACTIVE', NOW + HOUR, true],
    ['ACTIVE', NOW - HOUR, true],
    ['ACTIVE', null, true],
    ['GRACE_PERIOD', NOW - HOUR, true],
    ['CANCELED', NOW + HOUR, true],
    ['CANCELED', NOW, false],
    ['CANCELED', NOW - HOUR, false],
    ['CANCELED', null, true],
    ['PAST_DUE', NOW + HOUR, false],
    ['EXPIRED', NOW + HOUR, false],
    ['EXPIRED', null, false],
  ];
  for (const [status, end, entitled] of rows) {
    const label = end === null ? 'no known end' : end > NOW ? 'end ahead' : end === NOW ? 'end now' : 'end passed';
    it(`${status} with ${label} -> ${entitled}`, () => {
      assert.equal(isEntitled(record(status, end), NOW), entitled);
    });
  }

  it('reports the entitled record with the latest end, an open-ended one before any dated one', () => {
    const stripe = record('ACTIVE', NOW + 10 * HOUR);
    const apple = record('CANCELED', NOW + 20 * HOUR, { provider: 'apple', planId: 'apple-plan' });
    const expiredNewest = record('EXPIRED', NOW + 99 * HOUR, { provider: 'google', lastEventAt: NOW });
    assert.deepEqual(checkOf(7, [stripe, apple, expiredNewest], NOW), {
      userId: 7, isSubscribed: true, status: 'CANCELED', provider: 'apple', planId: 'apple-plan', expiresAt: new Date(NOW + 20 * HOUR),
    });
    const google = record('ACTIVE', null, { provider: 'google' });
    assert.equal(checkOf(7, [stripe, google, apple], NOW).provider, 'google');
  });

  it('reports the newest record when none entitles, and nulls when there is none', () => {
    const older = record('EXPIRED', NOW - HOUR, { lastEventAt: NOW - 2 * HOUR });
    const newer = record('PAST_DUE', NOW + HOUR, { provider: 'apple', lastEventAt: NOW - HOUR });
    assert.deepEqual(checkOf(3, [older, newer], NOW), {
      userId: 3, isSubscribed: false, status: 'PAST_DUE', provider: 'apple', planId: 'plan', expiresAt: new Date(NOW + HOUR),
    });
    assert.deepEqual(checkOf(3, [], NOW), { userId: 3, isSubscribed: false, status: null, provider: null, planId: null, expiresAt: null });
  });

  it('is subscribed exactly when some record entitles, and then reports an entitled record', () => {
    const statuses: SubscriptionStatus[] = ['ACTIVE', 'EXPIRED', 'GRACE_PERIOD', 'CANCELED', 'PAST_DUE'];
    const arbitraryRecord = fc.record({
      provider: fc.constantFrom('stripe' as const, 'apple' as const, 'google' as const),
      planId: fc.string({ maxLength: 8 }),
      status: fc.constantFrom(...statuses),
      currentPeriodEnd: fc.option(fc.integer({ min: NOW - 100 * HOUR, max: NOW + 100 * HOUR }), { nil: null }),
      lastEventAt: fc.integer({ min: NOW - 100 * HOUR, max: NOW }),
    });
    fc.assert(fc.property(fc.array(arbitraryRecord, { maxLength: 3 }), (records) => {
      const check = checkOf(1, records, NOW);
      assert.equal(check.isSubscribed, records.some((candidate) => isEntitled(candidate, NOW)));
      if (records.length === 0) assert.equal(check.status, null);
      else assert.ok(records.some((candidate) => candidate.status === check.status && candidate.provider === check.provider));
    }));
  });
});

describe('billing entitlement cache', () => {
  function harness(initial: Record<number, EntitlementRecord[]> = {}, options: { ttlMs?: number; maxEntries?: number } = {}) {
    const state = { now: NOW, loads: 0, records: { ...initial } as Record<number, EntitlementRecord[]>, gate: undefined as Promise<void> | undefined };
    const cache = new CachedEntitlement({
      ttlMs: options.ttlMs ?? 60_000,
      maxEntries: options.maxEntries ?? 100,
      now: () => state.now,
      catalog: PlanCatalog.unlimited(),
      graceDays: 30,
      async load(userId) {
        state.loads += 1;
        const snapshot = state.records[userId] ?? [];
        if (state.gate) await state.gate;
        return { records: snapshot, override: undefined, administrator: false };
      },
    });
    return { cache, state };
  }

  it('reads a user once, then answers from memory until invalidated', async () => {
    const { cache, state } = harness({ 1: [record('ACTIVE', null)] });
    assert.equal(await cache.isSubscribed(1), true);
    state.records[1] = [record('EXPIRED', null)];
    assert.equal(await cache.isSubscribed(1), true);
    assert.equal(state.loads, 1);
    cache.invalidate(1);
    assert.equal(await cache.isSubscribed(1), false);
    assert.equal(state.loads, 2);
  });

  it('stops entitling a cancelled subscription when its period ends, without a reload', async () => {
    const { cache, state } = harness({ 1: [record('CANCELED', NOW + 1000)] }, { ttlMs: 10 * HOUR });
    assert.equal(await cache.isSubscribed(1), true);
    state.now = NOW + 1001;
    assert.equal(await cache.isSubscribed(1), false);
    assert.equal(state.loads, 1);
  });

  it('reads again after the time to live', async () => {
    const { cache, state } = harness({ 1: [] }, { ttlMs: 1000 });
    await cache.check(1);
    state.now += 999;
    await cache.check(1);
    assert.equal(state.loads, 1);
    state.now += 1;
    await cache.check(1);
    assert.equal(state.loads, 2);
  });

  it('shares one read between concurrent checks', async () => {
    const { cache, state } = harness({ 1: [record('ACTIVE', null)] });
    let open!: () => void;
    state.gate = new Promise((resolve) => (open = resolve));
    const checks = [cache.isSubscribed(1), cache.isSubscribed(1), cache.check(1)];
    open();
    await Promise.all(checks);
    assert.equal(state.loads, 1);
  });

  it('does not keep a read that raced with a change', async () => {
    const { cache, state } = harness({ 1: [record('EXPIRED', null)] });
    let open!: () => void;
    state.gate = new Promise((resolve) => (open = resolve));
    const racing = cache.isSubscribed(1);
    // The change commits and is announced while the read is under way; its result predates the change.
    state.records[1] = [record('ACTIVE', null)];
    cache.invalidate(1);
    open();
    assert.equal(await racing, false);
    state.gate = undefined;
    assert.equal(await cache.isSubscribed(1), true);
    assert.equal(state.loads, 2);
  });

  it('evicts the least recently used user beyond its size', async () => {
    const { cache, state } = harness({}, { maxEntries: 2 });
    await cache.check(1);
    await cache.check(2);
    await cache.check(1);
    await cache.check(3);
    assert.equal(cache.size, 2);
    assert.equal(state.loads, 3);
    await cache.check(1);
    assert.equal(state.loads, 3, 'user 1 stayed');
    await cache.check(2);
    assert.equal(state.loads, 4, 'user 2 was evicted');
  });

  it('passes a failed read on to the caller and keeps nothing', async () => {
    let fail = true;
    const cache = new CachedEntitlement({
      ttlMs: 60_000,
      maxEntries: 10,
      catalog: PlanCatalog.unlimited(),
      graceDays: 30,
      async load() {
        if (fail) throw new Error('database unavailable');
        return { records: [], override: undefined, administrator: false };
      },
    });
    await assert.rejects(cache.isSubscribed(1), /database unavailable/);
    fail = false;
    assert.equal(await cache.isSubscribed(1), false);
  });
});
