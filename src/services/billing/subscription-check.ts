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

