import type { FastifyBaseLogger } from 'fastify';
import type { UserCount, UserCounts } from '../../../platform/http/user-counts.ts';
import { COUNTED_LIMITS } from './catalog.ts';
import type { CountedLimit } from './catalog.ts';

/** How many of one kind of thing a user holds, counted by the module that owns them. */
export type UsageCounter = UserCount;

/**
 * A user's usage per limit; null where no module counts that kind for the billing process (neither running in it
 * nor reachable through its *_URL), or where the module's process did not answer.
 */
export type Usage = Record<CountedLimit, number | null>;

function isCountedLimit(name: string): name is CountedLimit {
  return (COUNTED_LIMITS as readonly string[]).includes(name);
}

/**
 * Where the modules owning limited things contribute their counters (devices: devices and shares; tracking:
 * geofences; notifications: notification rules), so billing reports usage without knowing their tables: in
 * process, or over HTTP from the module's own process in split mode.
 */
export class UsageRegistry {
  readonly #counters = new Map<CountedLimit, UsageCounter>();
  readonly #log: FastifyBaseLogger;

  constructor(log: FastifyBaseLogger) {
    this.#log = log;
  }

  /** One counter per kind: a second contribution is a wiring mistake. */
  contribute(counters: Partial<Record<CountedLimit, UsageCounter>>): void {
    for (const [limit, counter] of Object.entries(counters) as [CountedLimit, UsageCounter][]) {
      if (this.#counters.has(limit)) throw new Error(`usage of ${limit} is counted twice`);
      this.#counters.set(limit, counter);
    }
  }

  /** The counts of modules in other processes; those that are no plan limit are not usage. */
  contributeRemote(counts: UserCounts): void {
    this.contribute(Object.fromEntries(Object.entries(counts).filter(([name]) => isCountedLimit(name))));
  }

  async of(userId: number): Promise<Usage> {
    const counts = await Promise.all(COUNTED_LIMITS.map((limit) => this.#count(limit, userId)));
    return Object.fromEntries(COUNTED_LIMITS.map((limit, index) => [limit, counts[index]])) as Usage;
  }

  /** A count that cannot be read (its module's process is down) is null rather than failing the subscription answer. */
  async #count(limit: CountedLimit, userId: number): Promise<number | null> {
    const counter = this.#counters.get(limit);
    if (!counter) return null;
    try {
      return await counter(userId);
    } catch (error) {
      this.#log.warn({ err: error, limit }, 'billing: a usage count could not be read');
      return null;
    }
  }
}
