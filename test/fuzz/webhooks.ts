// Webhook deliveries that pass the providers' signature checks but carry mutated payloads: a valid notification for
// the fixtures, changed in one to three places, then signed with the local test keys as the provider would sign it.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import Stripe from 'stripe';
import {
  STRIPE_SECRET,
  appleNotificationBody,
  googleBearer,
  googleDeveloperNotification,
  pushEnvelope,
  stripeEvent,
  stripeInvoice,
  stripeSubscription,
} from '../services/billing/support/providers.ts';
import type { BillingTestProviders } from '../services/billing/support/providers.ts';
import { FuzzObject, RawJson, applyMutation, fromJs, mutation, toJsonText } from './values.ts';
import type { FuzzValue, Mutation } from './values.ts';

export type WebhookProvider = 'stripe' | 'apple' | 'google';

export interface SignedWebhookDelivery {
  provider: WebhookProvider;
  /** Picks the notification to start from, modulo the provider's templates. */
  template: number;
  /** A change aimed at one of the notification's times. */
  timeMutation: Mutation | null;
  mutations: Mutation[];
}

/** What the templates name: the owner's subscription at each provider. */
export interface WebhookFixtures {
  providers: BillingTestProviders;
  ownerId: number;
  appAccountToken: string;
  stripeSubscription: string;
  appleTransaction: string;
  googlePurchaseToken: string;
}

/** Times are where providers' payloads went wrong before; they get odd values of their own. */
const ODD_TIMES = ['1e13', '1e16', '1e17', '1e300', '1e309', '-1', '-0', '0', '1.5', '253402300800', '253402300800000', '8640000000000001', '"1700000000"', '"soon"', 'null']
  .map((text) => new RawJson(text));

/** Keys of the times in Stripe events, App Store notifications and Google Play developer notifications. */
const TIME_KEYS = /created|date|time|period|_at$|^start$|^end$/i;

export function signedWebhookDelivery(provider: WebhookProvider): fc.Arbitrary<SignedWebhookDelivery> {
  return fc.record({
    provider: fc.constant(provider),
    template: fc.nat(),
    timeMutation: fc.option(mutation(fc.constantFrom<FuzzValue>(...ODD_TIMES)), { freq: 2 }),
    mutations: fc.array(mutation(), { maxLength: 2 }),
  });
}

const STRIPE_TYPES = ['customer.subscription.created', 'customer.subscription.updated', 'customer.subscription.deleted', 'invoice.paid', 'invoice.payment_failed', 'charge.succeeded'];
const APPLE_TYPES: [string, string | undefined][] = [
  ['SUBSCRIBED', 'INITIAL_BUY'], ['DID_RENEW', undefined], ['DID_CHANGE_RENEWAL_STATUS', 'AUTO_RENEW_DISABLED'], ['DID_FAIL_TO_RENEW', 'GRACE_PERIOD'],
  ['EXPIRED', 'VOLUNTARY'], ['REFUND', undefined], ['TEST', undefined],
];
const GOOGLE_TYPES = [1, 2, 3, 4, 5, 6, 7, 9, 10, 12, 13, 20];

export async function signDelivery(delivery: SignedWebhookDelivery, fixtures: WebhookFixtures): Promise<{ headers: Record<string, string>; payload: string }> {
  const mutate = (value: FuzzValue) => {
    const timed = delivery.timeMutation ? applyMutation(value, delivery.timeMutation, TIME_KEYS) : value;
    return delivery.mutations.reduce((changed, change) => applyMutation(changed, change), timed);
  };
  const text = (value: FuzzValue) => toJsonText(value, () => {
    throw new Error('webhook templates hold no references');
  });
  switch (delivery.provider) {
    case 'stripe': {
      const type = pick(STRIPE_TYPES, delivery.template);
      const nowSeconds = Math.floor(Date.now() / 1000);
      const object = type.startsWith('invoice.')
        ? stripeInvoice({ subscriptionId: fixtures.stripeSubscription, userId: fixtures.ownerId, periodStart: nowSeconds, periodEnd: nowSeconds + 30 * 86_400 })
        : stripeSubscription({ id: fixtures.stripeSubscription, userId: fixtures.ownerId });
      const payload = text(mutate(fromJs(stripeEvent(type, object))));
      const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: STRIPE_SECRET, timestamp: nowSeconds });
      return { headers: { 'content-type': 'application/json', 'stripe-signature': signature }, payload };
    }
    case 'apple': {
      const [notificationType, subtype] = pick(APPLE_TYPES, delivery.template);
      // The JWS parts are signed after mutation, so a mutation may reach into the transaction and renewal claims.
      const spec = { notificationType, subtype, originalTransactionId: fixtures.appleTransaction, appAccountToken: fixtures.appAccountToken };
      const notification = decodedClaims(appleNotificationBody(fixtures.providers.apple, spec).signedPayload);
      const mutated = mutate(fromJs(notification));
      return { headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ signedPayload: signApple(mutated, fixtures, text) }) };
    }
    case 'google': {
      const notificationType = pick(GOOGLE_TYPES, delivery.template);
      const notification = mutate(fromJs(googleDeveloperNotification({ notificationType, purchaseToken: fixtures.googlePurchaseToken })));
      const envelope = pushEnvelope({}, randomUUID()) as { message: Record<string, unknown> };
      envelope.message['data'] = Buffer.from(text(notification)).toString('base64');
      return {
        headers: { 'content-type': 'application/json', authorization: await googleBearer(fixtures.providers.googleKey) },
        payload: JSON.stringify(envelope),
      };
    }
  }
}

function pick<T>(items: readonly T[], index: number): T {
  return items[index % items.length] as T;
}

function decodedClaims(jws: string): Record<string, unknown> {
  const claims = JSON.parse(Buffer.from(jws.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
  const data = claims['data'] as Record<string, unknown> | undefined;
  for (const field of ['signedTransactionInfo', 'signedRenewalInfo']) {
    const signed = data?.[field];
    if (data && typeof signed === 'string') data[field] = decodedClaims(signed);
  }
  return claims;
}

/** Signs the notification and, where they are still objects after mutation, its transaction and renewal claims. */
function signApple(notification: FuzzValue, fixtures: WebhookFixtures, text: (value: FuzzValue) => string): string {
  const sign = (value: FuzzValue) => fixtures.providers.apple.signJws(JSON.parse(text(value)) as object);
  if (!(notification instanceof FuzzObject)) return sign(notification);
  const entries = notification.entries.map(([key, value]): [string, FuzzValue] => {
    if (key !== 'data' || !(value instanceof FuzzObject)) return [key, value];
    return [key, new FuzzObject(value.entries.map(([field, claims]): [string, FuzzValue] =>
      (field === 'signedTransactionInfo' || field === 'signedRenewalInfo') && claims instanceof FuzzObject ? [field, sign(claims)] : [field, claims]))];
  });
  return sign(new FuzzObject(entries));
}
