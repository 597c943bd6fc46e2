import { ReadThroughCache } from '../../platform/cache.ts';
import { AppError } from './errors.ts';
import type { CountedLimit, PlanCatalog } from './plans/catalog.ts';
import { resolvePlan } from './plans/grant.ts';
import type { EntitlementState, PlanGrant } from './plans/grant.ts';
import type { UsageRegistry } from './plans/usage.ts';
import { checkOf } from './subscription-check.ts';
import type { SubscriptionCheck } from './subscription-check.ts';

/** A feature a plan may leave out: sending commands, reports, scheduled reports, or one notification channel (DESIGN §5.6 names). */
export type PlanFeature = SwitchedFeature | { channel: string };
export type SwitchedFeature = 'commands' | 'reports' | 'scheduledReports';

const FEATURE_NOUNS: Record<SwitchedFeature, string> = { commands: 'commands', reports: 'reports', scheduledReports: 'scheduled reports' };

/** Which history of a device its owner's plan serves and keeps; null bounds: all of it. */
export interface HistoryWindow {
  /** Positions, events and exports older than this (epoch ms) are not served. */
  servedFrom: number | null;
  /** Older than this, the retention job may delete them: `historyDays + PLAN_GRACE_DAYS` back. */
  keptFrom: number | null;
}

/**
 * The billing module's answer to other modules, in process or over HTTP in split mode: is a user subscribed,
 * which plan applies, and the checks the modules owning limited things make through it (docs/plans.md).
 */
export interface Entitlement {
  isSubscribed(userId: number): Promise<boolean>;
  check(userId: number): Promise<SubscriptionCheck>;
  /** The user's plan now (administrators are flagged: they are held to nothing). */
  planOf(userId: number): Promise<PlanGrant>;
  /**
   * The user's plan limit on `limit` now, for a count the caller takes afterwards: inside the transaction
   * that locks the count (src/platform/db/locks.ts), where no other query may wait.
   */
  limitOf(userId: number, limit: CountedLimit): Promise<PlanLimit>;
  /** 402 FEATURE_NOT_IN_PLAN unless the user's plan includes the feature. */
  assertFeature(userId: number, feature: PlanFeature): Promise<void>;
  /** Whether the user's plan includes the feature now (work done on the user's behalf later, e.g. a delivery, is skipped rather than refused). */
  hasFeature(userId: number, feature: PlanFeature): Promise<boolean>;
  /** The history window of a device owned by `ownerId` (tracking's history cut; the retention job). */
  historyWindow(ownerId: number, now?: number): Promise<HistoryWindow>;
  /** Where modules contribute their usage counters; undefined in a process without the billing module. */
  readonly usage: UsageRegistry | undefined;
}

/** One plan limit of one user, resolved ahead of the count it is checked against. */
export interface PlanLimit {
  /**
   * 402 PLAN_LIMIT_REACHED unless `usage` (what the user holds now, counted by the caller) plus `adding` stays
   * within the limit; details name the limit, its value and the usage.
   */
  assert(usage: number, adding?: number): void;
}

const DAY_MS = 86_400_000;

const LIMIT_NOUNS: Record<CountedLimit, string> = {
  devices: 'devices',
  geofences: 'geofences',
  shares: 'shares of your devices',
  notificationRules: 'notification rules',
};

function includesFeature({ plan, administrator }: PlanGrant, feature: PlanFeature): boolean {
  if (administrator) return true;
  if (typeof feature === 'string') return plan.features[feature];
  const { channels } = plan.features;
  return channels === null || channels.includes(feature.channel);
}

/** The checks every entitlement makes from a user's plan, wherever the plan comes from. */
export abstract class PlanEnforcement implements Entitlement {
  abstract readonly usage: UsageRegistry | undefined;
  protected readonly now: () => number;

  constructor(now: () => number) {
    this.now = now;
  }

  abstract check(userId: number): Promise<SubscriptionCheck>;
  abstract planOf(userId: number): Promise<PlanGrant>;

  async isSubscribed(userId: number): Promise<boolean> {
    return (await this.check(userId)).isSubscribed;
  }

  async limitOf(userId: number, limit: CountedLimit): Promise<PlanLimit> {
    const { plan, administrator } = await this.planOf(userId);
    const max = plan.limits[limit];
    return {
      assert(usage, adding = 1) {
        if (administrator || max === null || usage + adding <= max) return;
        const message = `Your plan (${plan.name}) allows at most ${max} ${LIMIT_NOUNS[limit]}`;
        throw new AppError('PLAN_LIMIT_REACHED', message, { details: [{ path: '/body', message, limit, max, usage }] });
      },
    };
  }

  async assertFeature(userId: number, feature: PlanFeature): Promise<void> {
    const grant = await this.planOf(userId);
    if (includesFeature(grant, feature)) return;
    const { plan } = grant;
    const name = typeof feature === 'string' ? feature : `channels.${feature.channel}`;
    const message =
      typeof feature === 'string' ? `Your plan (${plan.name}) does not include ${FEATURE_NOUNS[feature]}` : `Your plan (${plan.name}) does not include the ${feature.channel} channel`;
    throw new AppError('FEATURE_NOT_IN_PLAN', message, { details: [{ path: '/body', message, feature: name }] });
  }

  async hasFeature(userId: number, feature: PlanFeature): Promise<boolean> {
    return includesFeature(await this.planOf(userId), feature);
  }

  async historyWindow(ownerId: number, now = this.now()): Promise<HistoryWindow> {
    const { plan, administrator, graceDays } = await this.planOf(ownerId);
    const days = plan.limits.historyDays;
    if (administrator || days === null) return { servedFrom: null, keptFrom: null };
    return { servedFrom: now - days * DAY_MS, keptFrom: now - (days + graceDays) * DAY_MS };
  }
}

export interface EntitlementCacheOptions {
  /** Reads what decides a user's plan (two indexed queries and the user directory). */
  load(userId: number): Promise<EntitlementState>;
  catalog: PlanCatalog;
  /** PLAN_GRACE_DAYS. */
  graceDays: number;
  /** Entries older than this are read again: a safety net should a change notice from another instance be lost. */
  ttlMs: number;
  maxEntries: number;
  usage?: UsageRegistry;
  now?: () => number;
}

/**
 * Per-user state in memory, so a check is a map lookup. Entries hold the records and the override rather than
 * answers, because a cancelled subscription and an override end at their instant without any event: each check
 * resolves the plan at its own time.
 */
export class CachedEntitlement extends PlanEnforcement {
  readonly usage: UsageRegistry | undefined;
  readonly #cache: ReadThroughCache<number, EntitlementState>;
  readonly #load: (userId: number) => Promise<EntitlementState>;
  readonly #catalog: PlanCatalog;
  readonly #graceDays: number;

  constructor(options: EntitlementCacheOptions) {
    super(options.now ?? Date.now);
    this.#cache = new ReadThroughCache({ ttlMs: options.ttlMs, maxEntries: options.maxEntries, now: this.now });
    this.#load = (userId) => options.load(userId);
    this.#catalog = options.catalog;
    this.#graceDays = options.graceDays;
    this.usage = options.usage;
  }

  async check(userId: number): Promise<SubscriptionCheck> {
    return checkOf(userId, (await this.#cache.get(userId, this.#load)).records, this.now());
  }

  async planOf(userId: number): Promise<PlanGrant> {
    return resolvePlan(this.#catalog, await this.#cache.get(userId, this.#load), this.now(), this.#graceDays);
  }

  /** Forgets the user, including a load already under way, so the next check reads the database. */
  invalidate(userId: number): void {
    this.#cache.invalidate(userId);
  }

  get size(): number {
    return this.#cache.size;
  }
}
