import { isEntitled } from '../subscription-check.ts';
import type { EntitlementRecord } from '../subscription-check.ts';
import type { Plan, PlanCatalog, PlanView } from './catalog.ts';

/** An administrator's choice of a user's plan, over whatever the subscriptions say, until `until` (epoch ms) or for good. */
export interface PlanOverride {
  planId: string;
  until: number | null;
}

/** Everything that decides a user's plan, as one read of the billing tables gives it. */
export interface EntitlementState {
  records: EntitlementRecord[];
  override: PlanOverride | undefined;
  administrator: boolean;
}

export type PlanSource = 'default' | 'subscription' | 'override';

/** A user's plan at one instant, and until when that answer holds without any event. */
export interface PlanGrant {
  plan: PlanView;
  source: PlanSource;
  /** Administrators are held to no limit and every feature, whatever their plan says. */
  administrator: boolean;
  /**
   * The next instant the plan or the subscription check may change by time alone (an override's `until`, a
   * cancelled subscription's period end); null when only an event can change them.
   */
  validUntil: number | null;
  /** PLAN_GRACE_DAYS: how long history outlives what the plan serves. */
  graceDays: number;
}

/**
 * DESIGN §5.8: an override in force wins; else the highest-ranked plan among the entitled subscriptions
 * matched by product id; else the default plan. An override naming a plan the file no longer has is ignored.
 */
export function resolvePlan(catalog: PlanCatalog, state: EntitlementState, now: number, graceDays: number): PlanGrant {
  const { override, administrator } = state;
  const answer = { administrator, validUntil: nextChangeAt(state, now), graceDays };
  const overriding = override !== undefined && (override.until === null || override.until > now) ? catalog.find(override.planId) : undefined;
  if (overriding) return { plan: overriding, source: 'override', ...answer };
  let best: Plan | undefined;
  for (const record of state.records) {
    if (!isEntitled(record, now)) continue;
    const plan = catalog.forProduct(record.provider, record.planId);
    if (plan && (best === undefined || plan.rank > best.rank)) best = plan;
  }
  return best ? { plan: best, source: 'subscription', ...answer } : { plan: catalog.defaultPlan, source: 'default', ...answer };
}

/** The earliest future instant at which time alone changes an answer: an override ends, a cancelled subscription's period ends. */
export function nextChangeAt(state: EntitlementState, now: number): number | null {
  let next: number | null = null;
  const consider = (instant: number | null) => {
    if (instant !== null && instant > now && (next === null || instant < next)) next = instant;
  };
  consider(state.override?.until ?? null);
  for (const record of state.records) if (record.status === 'CANCELED') consider(record.currentPeriodEnd);
  return next;
}
