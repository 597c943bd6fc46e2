export type SubscriptionStatus = 'ACTIVE' | 'EXPIRED' | 'GRACE_PERIOD' | 'CANCELED' | 'PAST_DUE';

export type BillingProvider = 'stripe' | 'apple' | 'google';

export interface SubscriptionChange {
  kind: 'apply';
  status: SubscriptionStatus;
  planId: string | null;
  planName: string | null;
  currentPeriodStart: Date | null;
  currentPeriodEnd: Date | null;
  canceledAt: Date | null;
}

export interface SkippedNotification {
  kind: 'skip';
  /** Machine-readable, e.g. 'unhandled_event_type:charge.succeeded' or 'test_notification'. */
  reason: string;
}

export interface ProviderNotification {
  provider: BillingProvider;
  /** Stripe event.id, Apple notificationUUID, Google Pub/Sub message.messageId. */
  idempotencyKey: string;
  /** Stripe event.created, Apple signedDate, Google eventTimeMillis. */
  eventTime: Date;
  /** Stripe subscription id, Apple originalTransactionId, Google purchaseToken. */
  providerSubscriptionId: string | null;
  /** Stripe metadata.user_id; Apple appAccountToken (a UUID the app set at purchase time). */
  user: { userId?: number; appAccountToken?: string };
  change: SubscriptionChange | SkippedNotification;
}

export type WebhookErrorCode = 'INVALID_SIGNATURE' | 'INVALID_PAYLOAD';

/** A notification we refuse; the HTTP layer answers 400. Anything else thrown is a server fault (5xx, provider retries). */
export class WebhookError extends Error {
  code: WebhookErrorCode;

  constructor(code: WebhookErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WebhookError';
    this.code = code;
  }
}
