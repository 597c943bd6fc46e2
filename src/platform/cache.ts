import type { DomainEvents, EventBus, Topic } from './bus.ts';

/** A load answering undefined (nothing found) is passed on but never kept, so what appears later is found at once. */
type Kept<V> = Exclude<V, undefined>;

export interface ReadThroughCacheOptions<V, I> {
  /** How long an entry is answered, counted from when its load started. Without it, until invalidated. */
  ttlMs?: number;
  /** The most the entries may weigh together; beyond it the least recently used go first. */
  maxEntries?: number;
  /** What an entry weighs against maxEntries, 1 by default. An entry heavier than maxEntries is not kept. */
  weightOf?: (value: Kept<V>) => number;
  /** Secondary keys of a value (a user's address, the devices in a list), for getBy and invalidateBy. */
  indexBy?: (value: Kept<V>) => Iterable<I>;
  now?: () => number;
}

interface Entry<V, I> {
  value: V;
  /** Resolves to value: a hit hands out this promise rather than a new one. */
  answer: Promise<V>;
  until: number;
  weight: number;
  indexKeys: I[] | undefined;
  /** Read since eviction last passed it: it gets a second chance. */
  used: boolean;
}

/**
 * Values by key, loaded on a miss and kept until invalidated (and, optionally, a TTL or a bound).
 * Built for data that other processes may change, so invalidations come from the event bus.
 *
 * - Single flight: while a key loads, every get of that key shares the load.
 * - Stale reads: a load that started before an invalidation of its key is answered to its callers but
 *   not kept, and gets after the invalidation load afresh. An invalidation by index key cannot know
 *   what loads in flight will contain, so it sets every one of them aside.
 * - Hot paths: a hit is a map lookup and a clock read; get hands out the promise kept with the entry
 *   and peek answers without one, so neither allocates.
 * - The bound evicts in insertion order, skipping (once) entries read since eviction last passed them:
 *   least recently used first, near enough, without reordering the map on every read.
 */
export class ReadThroughCache<K, V, I = never> {
  readonly #entries = new Map<K, Entry<V, I>>();
  readonly #loading = new Map<K, Promise<V>>();
  readonly #index = new Map<I, Set<K>>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #weightOf: ((value: Kept<V>) => number) | undefined;
  readonly #indexBy: ((value: Kept<V>) => Iterable<I>) | undefined;
  readonly #now: () => number;
  #weight = 0;
  /** Counts invalidations: a read by index key (getBy) is kept only if none came while it ran. */
  #epoch = 0;

  constructor(options: ReadThroughCacheOptions<V, I> = {}) {
    this.#ttlMs = options.ttlMs ?? Number.POSITIVE_INFINITY;
    this.#maxEntries = options.maxEntries ?? Number.POSITIVE_INFINITY;
    this.#weightOf = options.weightOf;
    this.#indexBy = options.indexBy;
    // Read at each use, so a clock mocked after construction is seen.
    this.#now = options.now ?? (() => Date.now());
  }

  /** The value of `key`, from memory or from `load` (pass a function made once: a hit then allocates nothing). */
  get(key: K, load: (key: K) => Promise<V>): Promise<V> {
    const entry = this.#entries.get(key);
    if (entry !== undefined && entry.until > this.#now()) {
      entry.used = true;
      return entry.answer;
    }
    return this.#loading.get(key) ?? this.#load(key, load);
  }

  /** The value of `key` if it is in memory now, without a promise; undefined otherwise (then call get). */
  peek(key: K): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined || entry.until <= this.#now()) return undefined;
    entry.used = true;
    return entry.value;
  }

  /**
   * The value whose index keys hold `indexKey`, from memory or from `read`, which finds it by that
   * index key; what it finds is kept under keyOf(value).
   */
  getBy(indexKey: I, read: (indexKey: I) => Promise<V>, keyOf: (value: Kept<V>) => K): Promise<V> {
    for (const key of this.#index.get(indexKey) ?? []) {
      const entry = this.#entries.get(key) as Entry<V, I>;
      if (entry.until > this.#now()) {
        entry.used = true;
        return entry.answer;
      }
    }
    return this.#readBy(indexKey, read, keyOf);
  }

  /** Drops `key`, and sets aside a load of it in flight. */
  invalidate(key: K): void {
    this.#epoch += 1;
    this.#loading.delete(key);
    this.#drop(key);
  }

  /** Drops every entry whose index keys hold `indexKey`, and sets aside every load in flight. */
  invalidateBy(indexKey: I): void {
    this.#epoch += 1;
    this.#loading.clear();
    const keys = this.#index.get(indexKey);
    if (keys) for (const key of [...keys]) this.#drop(key);
  }

  invalidateAll(): void {
    this.#epoch += 1;
    this.#loading.clear();
    this.#entries.clear();
    this.#index.clear();
    this.#weight = 0;
  }

  /** Drops the key each `topic` event names: the bus brings them from other processes too when Redis connects them. */
  invalidateOn<T extends Topic>(bus: EventBus, topic: T, keyOf: (payload: DomainEvents[T]) => K): void {
    bus.on(topic, (payload) => this.invalidate(keyOf(payload)));
  }

  /** Entries held, expired ones included until they are replaced or evicted. */
  get size(): number {
    return this.#entries.size;
  }

  #load(key: K, load: (key: K) => Promise<V>): Promise<V> {
    const startedAt = this.#now();
    const loading: Promise<V> = load(key).then(
      (value) => {
        if (this.#loading.get(key) === loading) {
          this.#loading.delete(key);
          this.#keep(key, value, loading, startedAt);
        }
        return value;
      },
      (error: unknown) => {
        if (this.#loading.get(key) === loading) this.#loading.delete(key);
        throw error;
      },
    );
    this.#loading.set(key, loading);
    return loading;
  }

  async #readBy(indexKey: I, read: (indexKey: I) => Promise<V>, keyOf: (value: Kept<V>) => K): Promise<V> {
    const epoch = this.#epoch;
    const startedAt = this.#now();
    const value = await read(indexKey);
    if (value !== undefined && epoch === this.#epoch) this.#keep(keyOf(value as Kept<V>), value, Promise.resolve(value), startedAt);
    return value;
  }

  #keep(key: K, value: V, answer: Promise<V>, startedAt: number): void {
    this.#drop(key);
    if (value === undefined) return;
    const kept = value as Kept<V>;
    const weight = this.#weightOf?.(kept) ?? 1;
    if (weight > this.#maxEntries) return;
    while (this.#weight + weight > this.#maxEntries) this.#evictOne();
    const indexKeys = this.#indexBy && [...this.#indexBy(kept)];
    this.#entries.set(key, { value, answer, until: startedAt + this.#ttlMs, weight, indexKeys, used: false });
    this.#weight += weight;
    for (const indexKey of indexKeys ?? []) {
      let keys = this.#index.get(indexKey);
      if (!keys) this.#index.set(indexKey, (keys = new Set()));
      keys.add(key);
    }
  }

  /** The oldest entry not read since eviction last passed it; those read go to the back, once. */
  #evictOne(): void {
    for (const [key, entry] of this.#entries) {
      this.#entries.delete(key);
      if (!entry.used) {
        this.#unindex(key, entry);
        return;
      }
      entry.used = false;
      this.#entries.set(key, entry);
    }
  }

  #drop(key: K): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    this.#unindex(key, entry);
  }

  #unindex(key: K, entry: Entry<V, I>): void {
    this.#weight -= entry.weight;
    for (const indexKey of entry.indexKeys ?? []) {
      const keys = this.#index.get(indexKey);
      keys?.delete(key);
      if (keys?.size === 0) this.#index.delete(indexKey);
    }
  }
}
