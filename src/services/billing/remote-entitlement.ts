import type { EventBus } from '../../platform/bus.ts';
import type { InternalClient } from '../../platform/http/internal-client.ts';
import { CachedEntitlement } from './entitlement.ts';
import type { Entitlement, EntitlementRecord } from './entitlement.ts';
import type { BillingProvider, SubscriptionStatus } from './providers/index.ts';

export interface RemoteEntitlementOptions {
  /** Reaches a process running the billing module (BILLING_URL); its owner closes it. */
  client: InternalClient;
  /** Change notices evict cached answers; they reach this process when the bus is connected to Redis. */
  bus: EventBus;
  /** Bounds staleness when no change notice can arrive (no Redis). */
  ttlMs?: number;
  maxEntries?: number;
}

const STATUSES: ReadonlySet<string> = new Set(['ACTIVE', 'EXPIRED', 'GRACE_PERIOD', 'CANCELED', 'PAST_DUE']);
const PROVIDERS: ReadonlySet<string> = new Set(['stripe', 'apple', 'google']);

/**
 * The entitlement API for a process without the billing module (split mode): GET /api/subscriptions/check/{id}
 * with X-Internal-Token, cached like the in-process one. The cached answer is the chosen record, so a
 * cancelled subscription still stops entitling when its period ends.
 */
export function createRemoteEntitlement(options: RemoteEntitlementOptions): Entitlement {
  const cache = new CachedEntitlement({
    ttlMs: options.ttlMs ?? 30_000,
    maxEntries: options.maxEntries ?? 100_000,
    load: async (userId) => recordsOf(await options.client.json(`/api/subscriptions/check/${userId}`)),
  });
  options.bus.on('billing.subscription.changed', ({ userId }) => cache.invalidate(userId));
  return cache;
}

function recordsOf(body: unknown): EntitlementRecord[] {
  if (typeof body !== 'object' || body === null) throw new Error('billing check answered a non-object');
  const { status, provider, plan_id: planId, expires_at: expiresAt } = body as Record<string, unknown>;
  if (status === null) return [];
  const expiry = typeof expiresAt === 'string' ? Date.parse(expiresAt) : null;
  if (
    typeof status !== 'string' || !STATUSES.has(status) ||
    typeof provider !== 'string' || !PROVIDERS.has(provider) ||
    (expiresAt !== null && (expiry === null || Number.isNaN(expiry)))
  ) {
    throw new Error('billing check answered an unexpected body');
  }
  return [{
    status: status as SubscriptionStatus,
    provider: provider as BillingProvider,
    planId: typeof planId === 'string' ? planId : '',
    currentPeriodEnd: expiry,
    lastEventAt: 0,
  }];
}
