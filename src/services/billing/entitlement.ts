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

interface CacheEntry {
  records: EntitlementRecord[];
  loadedAt: number;
}

interface PendingLoad {
  promise: Promise<EntitlementRecord[]>;
  /** Set when the user's records changed while the load ran: its result may predate the change. */
  invalidated: boolean;
}

/**
 * Per-user records in memory, so a check is a map lookup. Entries hold records rather than answers because
 * a CANCELED subscription stops entitling when its period ends, without any event.
 */
export class CachedEntitlement implements Entitlement {
  readonly #options: EntitlementCacheOptions;
  readonly #now: () => number;
  readonly #entries = new Map<number, CacheEntry>();
  readonly #pending = new Map<number, PendingLoad>();

  constructor(options: EntitlementCacheOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  async isSubscribed(userId: number): Promise<boolean> {
    return (await this.check(userId)).isSubscribed;
  }

  async check(userId: number): Promise<SubscriptionCheck> {
    return checkOf(userId, await this.#records(userId), this.#now());
  }

  /** Forgets the user, including a load already under way, so the next check reads the database. */
  invalidate(userId: number): void {
    this.#entries.delete(userId);
    const pending = this.#pending.get(userId);
    if (pending) pending.invalidated = true;
  }

  get size(): number {
    return this.#entries.size;
  }

  async #records(userId: number): Promise<EntitlementRecord[]> {
    const entry = this.#entries.get(userId);
    if (entry && this.#now() - entry.loadedAt < this.#options.ttlMs) {
      // Re-inserting keeps the map in least-recently-used order for eviction.
      this.#entries.delete(userId);
      this.#entries.set(userId, entry);
      return entry.records;
    }
    const running = this.#pending.get(userId);
    if (running && !running.invalidated) return running.promise;
    return this.#load(userId);
  }

  async #load(userId: number): Promise<EntitlementRecord[]> {
    const loadedAt = this.#now();
    const pending: PendingLoad = { promise: this.#options.load(userId), invalidated: false };
    this.#pending.set(userId, pending);
    try {
      const records = await pending.promise;
      if (!pending.invalidated) this.#store(userId, { records, loadedAt });
      return records;
    } finally {
      if (this.#pending.get(userId) === pending) this.#pending.delete(userId);
    }
  }

  #store(userId: number, entry: CacheEntry): void {
    this.#entries.delete(userId);
    this.#entries.set(userId, entry);
    if (this.#entries.size > this.#options.maxEntries) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
  }
}
