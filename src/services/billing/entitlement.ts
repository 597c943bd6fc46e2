import { ReadThroughCache } from '../../platform/cache.ts';
import type { BillingProvider, SubscriptionStatus } from './providers/index.ts';

/** The part of a subscription record that decides entitlement. */
export interface EntitlementRecord {
  provider: BillingProvider;
  planId: string;
  status: SubscriptionStatus;
  /** Epoch milliseconds, or null when the provider never told us (Google notifications carry no period). */
  currentPeriodEnd: number | null;
  lastEventAt: number;
}

/** What "is user U subscribed" answers: the entitled record with the latest end, else the newest record. */
export interface SubscriptionCheck {
  userId: number;
  isSubscribed: boolean;
  status: SubscriptionStatus | null;
  provider: BillingProvider | null;
  planId: string | null;
  /** The chosen record's current_period_end. */
  expiresAt: Date | null;
}

/** The billing module's answer to other modules (plan limits): in-process, or over HTTP in split mode. */
export interface Entitlement {
  isSubscribed(userId: number): Promise<boolean>;
  check(userId: number): Promise<SubscriptionCheck>;
}

/**
 * DESIGN §5.5: ACTIVE and GRACE_PERIOD are entitled; CANCELED means "will not renew" and stays entitled until
 * current_period_end. A CANCELED record without a known end (Google) stays entitled until the provider's
 * EXPIRED notification, which Google always sends when access ends.
 */
export function isEntitled(record: Pick<EntitlementRecord, 'status' | 'currentPeriodEnd'>, now: number): boolean {
  switch (record.status) {
    case 'ACTIVE':
    case 'GRACE_PERIOD':
      return true;
    case 'CANCELED':
      return record.currentPeriodEnd === null || record.currentPeriodEnd > now;
    case 'PAST_DUE':
    case 'EXPIRED':
      return false;
  }
}

export function checkOf(userId: number, records: readonly EntitlementRecord[], now: number): SubscriptionCheck {
  const chosen = chooseRecord(records, now);
  return {
    userId,
    isSubscribed: chosen !== undefined && isEntitled(chosen, now),
    status: chosen?.status ?? null,
    provider: chosen?.provider ?? null,
    planId: chosen?.planId ?? null,
    expiresAt: chosen === undefined || chosen.currentPeriodEnd === null ? null : new Date(chosen.currentPeriodEnd),
  };
}

function chooseRecord(records: readonly EntitlementRecord[], now: number): EntitlementRecord | undefined {
  const entitled = records.filter((record) => isEntitled(record, now));
  // An entitled record without a known end is open-ended, so it outlasts any dated one.
  const endOf = (record: EntitlementRecord) => record.currentPeriodEnd ?? Number.POSITIVE_INFINITY;
  if (entitled.length > 0) return entitled.reduce((best, record) => (endOf(record) > endOf(best) ? record : best));
  return records.reduce<EntitlementRecord | undefined>((newest, record) => (newest === undefined || record.lastEventAt > newest.lastEventAt ? record : newest), undefined);
}

export interface EntitlementCacheOptions {
  /** Reads a user's records (one indexed query). */
  load(userId: number): Promise<EntitlementRecord[]>;
  /** Entries older than this are read again: a safety net should a change notice from another instance be lost. */
  ttlMs: number;
  maxEntries: number;
  now?: () => number;
}

/**
 * Per-user records in memory, so a check is a map lookup. Entries hold records rather than answers because
 * a CANCELED subscription stops entitling when its period ends, without any event.
 */
export class CachedEntitlement implements Entitlement {
  readonly #cache: ReadThroughCache<number, EntitlementRecord[]>;
  readonly #load: (userId: number) => Promise<EntitlementRecord[]>;
  readonly #now: () => number;

  constructor(options: EntitlementCacheOptions) {
    this.#now = options.now ?? Date.now;
    this.#cache = new ReadThroughCache({ ttlMs: options.ttlMs, maxEntries: options.maxEntries, now: this.#now });
    this.#load = (userId) => options.load(userId);
  }

  async isSubscribed(userId: number): Promise<boolean> {
    return (await this.check(userId)).isSubscribed;
  }

  async check(userId: number): Promise<SubscriptionCheck> {
    return checkOf(userId, await this.#cache.get(userId, this.#load), this.#now());
  }

  /** Forgets the user, including a load already under way, so the next check reads the database. */
  invalidate(userId: number): void {
    this.#cache.invalidate(userId);
  }

  get size(): number {
    return this.#cache.size;
  }
}
