import { Type } from 'typebox';
import type { Static } from 'typebox';
import { IdParam, isoOrNull } from '../../platform/http/schemas.ts';
import type { SubscriptionCheck } from './subscription-check.ts';
import type { PlanView } from './plans/catalog.ts';
import type { PlanGrant } from './plans/grant.ts';
import type { SubscriptionRow } from './repository.ts';
import type { WebhookResult } from './service.ts';

export const ProviderName = Type.Union([Type.Literal('stripe'), Type.Literal('apple'), Type.Literal('google')]);

export const SubscriptionStatusSchema = Type.Union([
  Type.Literal('ACTIVE'),
  Type.Literal('EXPIRED'),
  Type.Literal('GRACE_PERIOD'),
  Type.Literal('CANCELED'),
  Type.Literal('PAST_DUE'),
]);

const Timestamp = Type.String({ format: 'date-time' });
const OptionalTimestamp = Type.Union([Timestamp, Type.Null()]);

export const Subscription = Type.Object({
  id: Type.Integer(),
  user_id: Type.Integer(),
  provider: ProviderName,
  plan_id: Type.String({ description: 'The provider\'s price or product id; empty when no provider message named it' }),
  plan_name: Type.Union([Type.String(), Type.Null()]),
  status: SubscriptionStatusSchema,
  current_period_start: OptionalTimestamp,
  current_period_end: OptionalTimestamp,
  canceled_at: OptionalTimestamp,
  created_at: Timestamp,
});

const Limit = Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'null: no limit' });

/** DESIGN §5.8: the plan that applies to the user now. */
export const PlanSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  limits: Type.Object({ devices: Limit, geofences: Limit, shares: Limit, notificationRules: Limit, historyDays: Limit }),
  features: Type.Object({
    commands: Type.Boolean(),
    reports: Type.Boolean({ description: 'The report routes (/api/reports/...)' }),
    scheduledReports: Type.Boolean({ description: 'Reports mailed or posted on a schedule' }),
    channels: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'The notification channels allowed; null: every channel' }),
  }),
});

const Count = Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'null: counted by a module this process does not run' });

/** What the user holds of each limited kind (shares: the shares of the devices they own). */
export const UsageSchema = Type.Object({ devices: Count, geofences: Count, shares: Count, notificationRules: Count });

export const GetSubscriptionsResponse = Type.Object({
  user_id: Type.Integer(),
  app_account_token: Type.String({ format: 'uuid', description: 'Pass to StoreKit as appAccountToken so App Store notifications name this user' }),
  subscriptions: Type.Array(Subscription),
  has_active_subscription: Type.Boolean(),
  plan: PlanSchema,
  usage: UsageSchema,
});

const CheckFields = Type.Object({
  user_id: Type.Integer(),
  is_subscribed: Type.Boolean(),
  status: Type.Union([SubscriptionStatusSchema, Type.Null()]),
  provider: Type.Union([ProviderName, Type.Null()]),
  plan_id: Type.Union([Type.String(), Type.Null()]),
  expires_at: OptionalTimestamp,
});

export const CheckSubscriptionResponse = Type.Object({ ...CheckFields.properties, plan: PlanSchema, usage: UsageSchema });

export const PlanOverrideRequest = Type.Object(
  {
    planId: Type.String({ minLength: 1, maxLength: 64 }),
    until: Type.Optional(Type.Union([Timestamp, Type.Null()], { description: 'When the override ends (in the future); left out or null: never' })),
  },
  { additionalProperties: false },
);

export const PlanOverrideResponse = Type.Object({
  user_id: Type.Integer(),
  plan_id: Type.String(),
  until: OptionalTimestamp,
  plan: PlanSchema,
});

/** What a process without the billing module caches of a user (remote-entitlement.ts). */
export const EntitlementAnswer = Type.Object({
  check: CheckFields,
  plan: PlanSchema,
  source: Type.Union([Type.Literal('default'), Type.Literal('subscription'), Type.Literal('override')]),
  administrator: Type.Boolean(),
  valid_until: OptionalTimestamp,
  grace_days: Type.Integer({ minimum: 0 }),
});

export const WebhookResponse = Type.Object({
  status: Type.Union([Type.Literal('processed'), Type.Literal('duplicate'), Type.Literal('skipped')]),
  subscription_id: Type.Optional(Type.Integer()),
  subscription_status: Type.Optional(SubscriptionStatusSchema),
  reason: Type.Optional(Type.String()),
});

/** Provider ids are printable ASCII; anything else, a NUL above all (PostgreSQL cannot store it), is refused. */
const PROVIDER_ID_PATTERN = '^[\\x21-\\x7E]+$';

export const UserIdParams = Type.Object({ user_id: IdParam });

export const ByProviderParams = Type.Object({
  provider: ProviderName,
  subscription_id: Type.String({ minLength: 1, maxLength: 1024, pattern: PROVIDER_ID_PATTERN }),
});

export const GooglePurchaseRequest = Type.Object(
  {
    purchaseToken: Type.String({ minLength: 1, maxLength: 1024, pattern: PROVIDER_ID_PATTERN }),
    productId: Type.String({ minLength: 1, maxLength: 255, pattern: PROVIDER_ID_PATTERN }),
  },
  { additionalProperties: false },
);

export const GooglePurchaseResponse = Type.Object({
  user_id: Type.Integer(),
  product_id: Type.String(),
  subscription: Type.Union([Subscription, Type.Null()], {
    description: 'The record of this purchase, already there when Google\'s notifications arrived before the registration',
  }),
});

export function toSubscription(row: SubscriptionRow): Static<typeof Subscription> {
  return {
    id: row.id,
    user_id: row.user_id,
    provider: row.provider,
    plan_id: row.plan_id,
    plan_name: row.plan_name,
    status: row.status,
    current_period_start: isoOrNull(row.current_period_start),
    current_period_end: isoOrNull(row.current_period_end),
    canceled_at: isoOrNull(row.canceled_at),
    created_at: new Date(row.created_at).toISOString(),
  };
}

export function toPlanView(plan: PlanView): Static<typeof PlanSchema> {
  return { id: plan.id, name: plan.name, limits: { ...plan.limits }, features: { ...plan.features, channels: plan.features.channels && [...plan.features.channels] } };
}

export function toEntitlementAnswer(check: SubscriptionCheck, grant: PlanGrant): Static<typeof EntitlementAnswer> {
  return {
    check: toCheckFields(check),
    plan: toPlanView(grant.plan),
    source: grant.source,
    administrator: grant.administrator,
    valid_until: isoOrNull(grant.validUntil),
    grace_days: grant.graceDays,
  };
}

export function toCheckFields(check: SubscriptionCheck): Static<typeof CheckFields> {
  return {
    user_id: check.userId,
    is_subscribed: check.isSubscribed,
    status: check.status,
    provider: check.provider,
    plan_id: check.planId,
    expires_at: check.expiresAt?.toISOString() ?? null,
  };
}

export function toWebhookResponse(result: WebhookResult): Static<typeof WebhookResponse> {
  switch (result.status) {
    case 'processed':
      return { status: 'processed', subscription_id: result.subscriptionId, subscription_status: result.subscriptionStatus };
    case 'duplicate':
      return { status: 'duplicate', ...(result.subscriptionId === null ? {} : { subscription_id: result.subscriptionId }) };
    case 'skipped':
      return { status: 'skipped', reason: result.reason, ...(result.subscriptionId === null ? {} : { subscription_id: result.subscriptionId }) };
  }
}
