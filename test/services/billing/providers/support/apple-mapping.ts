import type { SubscriptionStatus } from '../../../../../src/services/billing/providers/types.ts';

/** DESIGN §5.5: every App Store notification type and subtype that changes a subscription, and the status it gives. */
export const APPLE_APPLIED_NOTIFICATIONS: [notificationType: string, subtype: string | undefined, status: SubscriptionStatus][] = [
  ['SUBSCRIBED', 'INITIAL_BUY', 'ACTIVE'],
  ['SUBSCRIBED', 'RESUBSCRIBE', 'ACTIVE'],
  ['DID_RENEW', undefined, 'ACTIVE'],
  ['DID_RENEW', 'BILLING_RECOVERY', 'ACTIVE'],
  ['DID_CHANGE_RENEWAL_STATUS', 'AUTO_RENEW_ENABLED', 'ACTIVE'],
  ['RENEWAL_EXTENDED', undefined, 'ACTIVE'],
  ['DID_FAIL_TO_RENEW', 'GRACE_PERIOD', 'GRACE_PERIOD'],
  ['DID_FAIL_TO_RENEW', undefined, 'PAST_DUE'],
  ['GRACE_PERIOD_EXPIRED', undefined, 'PAST_DUE'],
  ['DID_CHANGE_RENEWAL_STATUS', 'AUTO_RENEW_DISABLED', 'CANCELED'],
  ['EXPIRED', 'VOLUNTARY', 'EXPIRED'],
  ['EXPIRED', 'BILLING_RETRY', 'EXPIRED'],
  ['EXPIRED', 'PRICE_INCREASE', 'EXPIRED'],
  ['EXPIRED', 'PRODUCT_NOT_FOR_SALE', 'EXPIRED'],
  ['REFUND', undefined, 'EXPIRED'],
  ['REVOKE', undefined, 'EXPIRED'],
];
