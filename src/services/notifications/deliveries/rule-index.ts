import { alarmsOf } from '../rules.ts';
import type { NotificationsRepository, RuleRow } from '../repository.ts';

/** A rule as matching needs it, its attributes read once. */
export interface IndexedRule {
  row: RuleRow;
  /** The alarms an alarm rule is narrowed to; undefined for every alarm. */
  alarms: Set<string> | undefined;
  /** The host (host:port) of its webhook URL, which per-host concurrency counts; null without one. */
  webhookHost: string | null;
}

interface TypeIndex {
  always: IndexedRule[];
  byDevice: Map<number, IndexedRule[]>;
  loadedAt: number;
}

/**
 * The rules of each event type, in memory, so matching an event costs a map lookup instead of a
 * query per fact. Dropped whenever a rule changes here or (through the bus and Redis) on another
 * instance; `ttlMs` bounds what a lost hint leaves behind.
 */
export class RuleIndex {
  readonly #repository: NotificationsRepository;
  readonly #ttlMs: number;
  readonly #types = new Map<string, Promise<TypeIndex>>();
  #generation = 0;

  constructor(repository: NotificationsRepository, ttlMs: number) {
    this.#repository = repository;
    this.#ttlMs = ttlMs;
  }

  invalidate(): void {
    this.#generation += 1;
    this.#types.clear();
  }

  /** The rules of `type` that may apply to the device: its `always` rules and those naming the device. */
  async rulesFor(type: string, deviceId: number): Promise<IndexedRule[]> {
    const index = await this.#index(type);
    const named = index.byDevice.get(deviceId);
    return named ? [...index.always, ...named] : index.always;
  }

  async #index(type: string): Promise<TypeIndex> {
    const known = this.#types.get(type);
    if (known) {
      const index = await known;
      if (Date.now() - index.loadedAt < this.#ttlMs) return index;
      if (this.#types.get(type) === known) this.#types.delete(type);
    }
    const generation = this.#generation;
    const loading = this.#load(type);
    this.#types.set(type, loading);
    loading.then(
      // A load that began before a change is answered but not kept.
      () => generation !== this.#generation && this.#types.get(type) === loading && this.#types.delete(type),
      () => this.#types.get(type) === loading && this.#types.delete(type),
    );
    return loading;
  }

  async #load(type: string): Promise<TypeIndex> {
    const loadedAt = Date.now();
    const { always, named } = await this.#repository.rulesOfType(type);
    const indexed = (row: RuleRow): IndexedRule => {
      const attributes = JSON.parse(row.attributes) as Record<string, unknown>;
      return { row, alarms: alarmsOf(attributes), webhookHost: hostOf(attributes.webhookUrl) };
    };
    const byDevice = new Map<number, IndexedRule[]>();
    for (const [deviceId, rows] of named) byDevice.set(deviceId, rows.map(indexed));
    return { always: always.map(indexed), byDevice, loadedAt };
  }
}

function hostOf(url: unknown): string | null {
  if (typeof url !== 'string') return null;
  return URL.parse(url)?.host.slice(0, 300) ?? null;
}
