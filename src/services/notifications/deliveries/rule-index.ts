import { ReadThroughCache } from '../../../platform/cache.ts';
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
}

/**
 * The rules of each event type, in memory, so matching an event costs a map lookup instead of a
 * query per fact. Rules that would reach the same recipients on the same conditions are kept once,
 * the first of them: a user's thousand identical `always` rules are matched as one. Dropped whenever a rule changes here or (through the bus and Redis) on another
 * instance; `ttlMs` bounds what a lost hint leaves behind. The platform cache shares a load among
 * concurrent matches and answers, but never keeps, a load that began before a change.
 */
export class RuleIndex {
  readonly #repository: NotificationsRepository;
  readonly #types: ReadThroughCache<string, TypeIndex>;
  readonly #load = (type: string): Promise<TypeIndex> => this.#read(type);

  constructor(repository: NotificationsRepository, ttlMs: number) {
    this.#repository = repository;
    this.#types = new ReadThroughCache({ ttlMs });
  }

  invalidate(): void {
    this.#types.invalidateAll();
  }

  /** The rules of `type` that may apply to the device: its `always` rules and those naming the device. */
  async rulesFor(type: string, deviceId: number): Promise<IndexedRule[]> {
    const index = await this.#types.get(type, this.#load);
    const named = index.byDevice.get(deviceId);
    return named ? [...index.always, ...named] : index.always;
  }

  async #read(type: string): Promise<TypeIndex> {
    const { always, named } = await this.#repository.rulesOfType(type);
    const indexed = (row: RuleRow): IndexedRule => {
      const attributes = JSON.parse(row.attributes) as Record<string, unknown>;
      return { row, alarms: alarmsOf(attributes), webhookHost: hostOf(attributes.webhookUrl) };
    };
    const byDevice = new Map<number, IndexedRule[]>();
    for (const [deviceId, rows] of named) byDevice.set(deviceId, distinct(rows.map(indexed)));
    return { always: distinct(always.map(indexed)), byDevice };
  }
}

/**
 * The first of each set of rules that match the same events and reach the same recipients: the
 * planner adds nothing for a recipient a rule before reached. What matching reads decides it: the
 * owner, `always` (which devices the owner may be told of), the channels and the alarms; a webhook
 * is a recipient of each rule's own.
 */
function distinct(rules: readonly IndexedRule[]): IndexedRule[] {
  const seen = new Set<string>();
  return rules.filter(({ row, alarms }) => {
    const channels = (JSON.parse(row.channels) as string[]).toSorted();
    const key = JSON.stringify([
      Number(row.user_id),
      Number(row.always),
      channels,
      alarms ? [...alarms].sort() : null,
      channels.includes('webhook') ? Number(row.id) : null,
    ]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function hostOf(url: unknown): string | null {
  if (typeof url !== 'string') return null;
  return URL.parse(url)?.host.slice(0, 300) ?? null;
}
