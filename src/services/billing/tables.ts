import type { Generated } from 'kysely';
import type { BillingProvider, SubscriptionStatus } from './providers/index.ts';

/** The tables the billing module owns; no other module reads them. */
export interface BillingTables {
  subscriptions: SubscriptionsTable;
  billing_customers: BillingCustomersTable;
  billing_webhook_events: BillingWebhookEventsTable;
  billing_google_purchase_links: BillingGooglePurchaseLinksTable;
  billing_plan_overrides: BillingPlanOverridesTable;
}

/** One record per (user, provider); it follows the provider's subscription named by provider_subscription_id. */
export interface SubscriptionsTable {
  id: Generated<number>;
  user_id: number;
  provider: BillingProvider;
  /** Stripe subscription id, Apple originalTransactionId, Google purchaseToken. */
  provider_subscription_id: string;
  /** Empty when no provider message named the plan. */
  plan_id: string;
  plan_name: string | null;
  status: SubscriptionStatus;
  current_period_start: number | null;
  current_period_end: number | null;
  canceled_at: number | null;
  created_at: number;
  updated_at: number;
  /** Provider time of the newest event applied; older events are stale. */
  last_event_at: number;
}

/** Created on the user's first GET /api/subscriptions/{user_id}; Apple purchases carry the token. */
export interface BillingCustomersTable {
  user_id: number;
  /** Lower-case UUID the app passes to StoreKit as appAccountToken. */
  app_account_token: string;
  created_at: number;
}

/** Every verified webhook notification, keyed by the provider's idempotency key, written with its effect. */
export interface BillingWebhookEventsTable {
  provider: BillingProvider;
  idempotency_key: string;
  event_time: number;
  received_at: number;
  outcome: 'processed' | 'skipped';
  reason: string | null;
  subscription_id: number | null;
  provider_subscription_id: string | null;
  /** JSON of a Google change whose purchase token no user had registered yet; applied when the app registers it. */
  parked_change: string | null;
}

/** A Google purchase token and the user whose app registered it (null while only a notification has named it). */
export interface BillingGooglePurchaseLinksTable {
  purchase_token: string;
  user_id: number | null;
  product_id: string | null;
  created_at: number;
  linked_at: number | null;
}

/** An administrator's choice of a user's plan (docs/plans.md), one per user; it ends at `until` when set. */
export interface BillingPlanOverridesTable {
  user_id: number;
  plan_id: string;
  until: number | null;
  /** The administrator who set it. */
  set_by: number;
  updated_at: number;
}
