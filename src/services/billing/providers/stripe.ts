import Stripe from 'stripe';
import {
  dateFromUnixSeconds,
  finiteNumberAt,
  firstListItem,
  idOrExpandedIdAt,
  listItems,
  nonEmptyStringAt,
  parseUserId,
  recordAt,
} from './json.ts';
import type { JsonRecord } from './json.ts';
import { WebhookError } from './types.ts';
import type { ProviderNotification, SubscriptionStatus } from './types.ts';

/** Stripe's recommended replay window: signatures older than this are rejected. */
const SIGNATURE_TOLERANCE_SECONDS = 300;

interface StripeEventEnvelope {
  id: string;
  type: string;
  created: number;
  object: JsonRecord;
}

/**
 * Verifies the `Stripe-Signature` header over the exact raw body and maps the event.
 * `nowSeconds` overrides the clock used for the replay window (tests, delayed processing).
 */
export function parseStripeEvent(
  rawBody: Buffer,
  signatureHeader: string | undefined,
  secret: string,
  nowSeconds?: number,
): ProviderNotification {
  // A blank secret is a deployment fault, not a bad request; the SDK would report it as a signature mismatch.
  if (secret.trim() === '') throw new Error('Stripe webhook signing secret is not configured');
  const event = readEnvelope(verifyAndDecode(rawBody, signatureHeader, secret, nowSeconds));
  const base = {
    provider: 'stripe' as const,
    idempotencyKey: event.id,
    eventTime: new Date(event.created * 1000),
  };
  switch (event.type) {
    case 'customer.subscription.created':
    case 'customer.subscription.updated':
    case 'customer.subscription.deleted':
      return { ...base, ...fromSubscription(event.type, event.object) };
    case 'invoice.paid':
      return { ...base, ...fromInvoice(event.object, 'ACTIVE') };
    case 'invoice.payment_failed':
      return { ...base, ...fromInvoice(event.object, 'PAST_DUE') };
    default:
      return { ...base, providerSubscriptionId: null, user: {}, change: { kind: 'skip', reason: `unhandled_event_type:${event.type}` } };
  }
}

function verifyAndDecode(rawBody: Buffer, signatureHeader: string | undefined, secret: string, nowSeconds: number | undefined): unknown {
  try {
    return Stripe.webhooks.constructEvent(
      rawBody,
      signatureHeader ?? '',
      secret,
      SIGNATURE_TOLERANCE_SECONDS,
      undefined,
      nowSeconds === undefined ? undefined : nowSeconds * 1000,
    );
  } catch (error) {
    if (error instanceof Stripe.errors.StripeSignatureVerificationError) {
      // The SDK's first sentence names the problem; the rest is advice for integrators, not for the sender.
      const problem = error.message.split(/\.(?:\s|$)|\n/)[0]?.trim();
      throw new WebhookError('INVALID_SIGNATURE', `Stripe signature rejected: ${problem}`, { cause: error });
    }
    // constructEvent parses only after the signature matched, so this is a signed body that is not a usable event.
    throw new WebhookError('INVALID_PAYLOAD', 'Stripe event body is not a JSON snapshot event', { cause: error });
  }
}

function readEnvelope(event: unknown): StripeEventEnvelope {
  const id = nonEmptyStringAt(event, 'id');
  const type = nonEmptyStringAt(event, 'type');
  const created = finiteNumberAt(event, 'created');
  const object = recordAt(recordAt(event, 'data'), 'object');
  if (id === undefined || type === undefined || created === undefined || object === undefined) {
    throw new WebhookError('INVALID_PAYLOAD', 'Stripe event lacks id, type, created or data.object');
  }
  return { id, type, created, object };
}

type MappedParts = Pick<ProviderNotification, 'providerSubscriptionId' | 'user' | 'change'>;

function fromSubscription(eventType: string, subscription: JsonRecord): MappedParts {
  const subscriptionId = nonEmptyStringAt(subscription, 'id');
  if (subscriptionId === undefined) throw new WebhookError('INVALID_PAYLOAD', 'Stripe subscription has no id');
  const user = userFromMetadata(recordAt(subscription, 'metadata'));
  const stripeStatus = nonEmptyStringAt(subscription, 'status') ?? 'missing';
  const status = eventType === 'customer.subscription.deleted' ? 'EXPIRED' : statusOfSubscription(subscription, stripeStatus);
  if (status === undefined) {
    return { providerSubscriptionId: subscriptionId, user, change: { kind: 'skip', reason: `unhandled_subscription_status:${stripeStatus}` } };
  }
  const item = firstListItem(subscription['items']);
  // API 2025-03-31.basil moved the billing period from the subscription onto its items.
  const periodSource = finiteNumberAt(item, 'current_period_end') !== undefined ? item : subscription;
  const price = recordAt(item, 'price');
  return {
    providerSubscriptionId: subscriptionId,
    user,
    change: {
      kind: 'apply',
      status,
      planId: idOrExpandedIdAt(item, 'price') ?? idOrExpandedIdAt(item, 'plan') ?? idOrExpandedIdAt(subscription, 'plan') ?? null,
      planName: planNameOf(price),
      currentPeriodStart: dateFromUnixSeconds(finiteNumberAt(periodSource, 'current_period_start')),
      currentPeriodEnd: dateFromUnixSeconds(finiteNumberAt(periodSource, 'current_period_end')),
      canceledAt: dateFromUnixSeconds(finiteNumberAt(subscription, 'canceled_at')),
    },
  };
}

function statusOfSubscription(subscription: JsonRecord, stripeStatus: string): SubscriptionStatus | undefined {
  switch (stripeStatus) {
    case 'active':
    case 'trialing': {
      // Still paid up, but the customer asked to stop: access runs to the period end and then lapses.
      const cancellationScheduled = subscription['cancel_at_period_end'] === true || finiteNumberAt(subscription, 'cancel_at') !== undefined;
      return cancellationScheduled ? 'CANCELED' : 'ACTIVE';
    }
    case 'past_due':
    case 'unpaid':
    case 'paused':
    case 'incomplete':
      return 'PAST_DUE';
    case 'incomplete_expired':
    case 'canceled':
      return 'EXPIRED';
    default:
      return undefined;
  }
}

function fromInvoice(invoice: JsonRecord, status: SubscriptionStatus): MappedParts {
  const line = subscriptionLineOf(invoice);
  const subscriptionDetails = recordAt(recordAt(invoice, 'parent'), 'subscription_details');
  const subscriptionId =
    idOrExpandedIdAt(subscriptionDetails, 'subscription') ??
    idOrExpandedIdAt(invoice, 'subscription') ??
    idOrExpandedIdAt(recordAt(recordAt(line, 'parent'), 'subscription_item_details'), 'subscription') ??
    idOrExpandedIdAt(line, 'subscription');
  const user = userFromMetadata(
    recordAt(subscriptionDetails, 'metadata'),
    recordAt(recordAt(invoice, 'subscription_details'), 'metadata'),
    recordAt(line, 'metadata'),
  );
  if (subscriptionId === undefined) {
    return { providerSubscriptionId: null, user, change: { kind: 'skip', reason: 'invoice_without_subscription' } };
  }
  // API 2025-03-31.basil replaced line.price with line.pricing.price_details.price.
  const pricedBy = recordAt(line, 'pricing')?.['price_details'];
  const period = recordAt(line, 'period');
  return {
    providerSubscriptionId: subscriptionId,
    user,
    change: {
      kind: 'apply',
      status,
      planId: idOrExpandedIdAt(pricedBy, 'price') ?? idOrExpandedIdAt(line, 'price') ?? idOrExpandedIdAt(line, 'plan') ?? null,
      planName: planNameOf(recordAt(pricedBy, 'price') ?? recordAt(line, 'price')),
      currentPeriodStart: dateFromUnixSeconds(finiteNumberAt(period, 'start')),
      currentPeriodEnd: dateFromUnixSeconds(finiteNumberAt(period, 'end')),
      canceledAt: null,
    },
  };
}

/**
 * The line that carries the subscription's new billing period: proration lines (plan changes) and one-off
 * items describe other periods, so the first recurring subscription line wins, else the first line.
 */
function subscriptionLineOf(invoice: JsonRecord): JsonRecord | undefined {
  const lines = listItems(invoice['lines']);
  const recurring = lines.find((line) => {
    const itemDetails = recordAt(recordAt(line, 'parent'), 'subscription_item_details');
    if (itemDetails !== undefined) return itemDetails['proration'] !== true;
    return line['type'] === 'subscription' && line['proration'] !== true;
  });
  return recurring ?? lines[0];
}

function planNameOf(price: JsonRecord | undefined): string | null {
  return nonEmptyStringAt(price, 'nickname') ?? nonEmptyStringAt(recordAt(price, 'product'), 'name') ?? null;
}

function userFromMetadata(...sources: (JsonRecord | undefined)[]): ProviderNotification['user'] {
  for (const metadata of sources) {
    const userId = parseUserId(metadata?.['user_id']);
    if (userId !== undefined) return { userId };
  }
  return {};
}
