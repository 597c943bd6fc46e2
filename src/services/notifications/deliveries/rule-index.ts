import { ReadThroughCache } from '../../../platform/cache.ts';
import { TimeSlice } from '../../../platform/turns.ts';
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
    // A type may have many thousands of rules: read a slice at a time, as matching runs.
    const slice = new TimeSlice();
    const distinct = async (rows: readonly RuleRow[]): Promise<IndexedRule[]> => {
      const seen = new Set<string>();
      const kept: IndexedRule[] = [];
      for (const row of rows) {
        await slice.pause();
        const attributes = JSON.parse(row.attributes) as Record<string, unknown>;
        const rule: IndexedRule = { row, alarms: alarmsOf(attributes), webhookHost: hostOf(attributes.webhookUrl) };
        const key = recipientsKey(rule);
        if (seen.has(key)) continue;
        seen.add(key);
        kept.push(rule);
      }
      return kept;
    };
    const byDevice = new Map<number, IndexedRule[]>();
    for (const [deviceId, rows] of named) byDevice.set(deviceId, await distinct(rows));
    return { always: await distinct(always), byDevice };
  }
}

/**
 * What decides the recipients a rule reaches and when: its owner, `always` (which devices the
 * owner may be told of), its channels and its alarms; a webhook is a recipient of each rule's own.
 * Of the rules with one key the index keeps the first: the planner adds nothing for a recipient
 * that a rule before reached.
 */
function recipientsKey({ row, alarms }: IndexedRule): string {
  const channels = (JSON.parse(row.channels) as string[]).toSorted();
  return JSON.stringify([Number(row.user_id), Number(row.always), channels, alarms ? [...alarms].sort() : null, channels.includes('webhook') ? Number(row.id) : null]);
}

function hostOf(url: unknown): string | null {
  if (typeof url !== 'string') return null;
  return URL.parse(url)?.host.slice(0, 300) ?? null;
}
