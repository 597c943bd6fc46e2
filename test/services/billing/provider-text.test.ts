// Signed provider notifications carrying text the database cannot hold: a NUL (PostgreSQL text cannot store U+0000)
// is refused as INVALID_PAYLOAD with nothing stored; an event type too long for the skip reason's column is skipped
// with the reason cut.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { describeEachEngine } from '../../support/engines.ts';
import type { TestServer } from '../../support/server.ts';
import {
  appleNotificationBody,
  googleBearer,
  googleDeveloperNotification,
  newStripeSubscriptionId,
  postApple,
  postGoogle,
  postStripe,
  pushEnvelope,
  stripeEvent,
  stripeSubscription,
} from './support/providers.ts';
import type { BillingTestProviders } from './support/providers.ts';
import { startBillingTestServer, stopBillingTestServer } from './support/server.ts';
import { assertRefusedStoringNothing, webhookEvent } from './support/state.ts';

describeEachEngine('billing: provider text', (engine) => {
  let providers: BillingTestProviders;
  let server: TestServer;

  before(async () => ({ providers, server } = await startBillingTestServer(engine)));
  after(() => stopBillingTestServer({ providers, server }));

  const freshUser = () => server.login({ email: `text-${randomUUID()}@example.com` });

  const refused = (deliver: () => Promise<LightMyRequestResponse>) => assertRefusedStoringNothing(server.database, deliver);

  it('refuses Stripe events with a NUL in the event id, subscription id, price id or plan name', async () => {
    const user = await freshUser();
    const subscription = (fields: Record<string, unknown> = {}) => ({ ...stripeSubscription({ id: newStripeSubscriptionId(), userId: user.userId }), ...fields });
    const withPrice = (price: Record<string, unknown>) => {
      const base = stripeSubscription({ id: newStripeSubscriptionId(), userId: user.userId });
      const items = base['items'] as { data: Record<string, unknown>[] };
      return { ...base, items: { ...items, data: [{ ...items.data[0], price: { ...(items.data[0]?.['price'] as object), ...price } }] } };
    };
    const events = [
      stripeEvent('customer.subscription.created', subscription(), { id: 'evt_\u0000' }),
      stripeEvent('customer.subscription.created', subscription({ id: 'sub_\u0000' })),
      stripeEvent('customer.subscription.created', withPrice({ id: 'price_\u0000' })),
      stripeEvent('customer.subscription.created', withPrice({ nickname: 'Pro\u0000' })),
    ];
    for (const event of events) await refused(() => postStripe(server.app, event));
  });

  it('skips a Stripe event of an unknown type too long for the reason column, storing the reason cut to 255 characters', async () => {
    const type = `x${'y'.repeat(299)}\u0000`;
    const event = stripeEvent(type, { id: 'obj_1', object: 'thing' });
    const response = await postStripe(server.app, event);
    assert.equal(response.statusCode, 200, response.body);
    const reason = `unhandled_event_type:${type}`.replace('\u0000', '').slice(0, 255);
    assert.deepEqual(response.json(), { status: 'skipped', reason });
    assert.equal((await webhookEvent(server.database, 'stripe', event['id'] as string))?.reason, reason);
  });

  it('refuses App Store notifications with a NUL in the product id or the transaction id', async () => {
    const login = await freshUser();
    const appAccountToken = (await server.app.inject({ url: `/api/subscriptions/${login.userId}`, headers: login.authorization })).json().app_account_token;
    for (const spec of [{ productId: 'pro\u0000' }, { originalTransactionId: '2000\u0000' }]) {
      await refused(() => postApple(server.app, appleNotificationBody(providers.apple, { notificationType: 'SUBSCRIBED', appAccountToken, ...spec })));
    }
  });

  it('skips an App Store notification of an unknown type too long for the reason column', async () => {
    const notificationUUID = randomUUID();
    const response = await postApple(server.app, appleNotificationBody(providers.apple, { notificationType: 'X'.repeat(300), notificationUUID }));
    assert.equal(response.statusCode, 200, response.body);
    const reason = `unhandled_notification_type:${'X'.repeat(300)}`.slice(0, 255);
    assert.deepEqual(response.json(), { status: 'skipped', reason });
    assert.equal((await webhookEvent(server.database, 'apple', notificationUUID))?.reason, reason);
  });

  it('refuses Google Play notifications with a NUL in the message id, purchase token or subscription id', async () => {
    const bodies = [
      pushEnvelope(googleDeveloperNotification({ notificationType: 4, purchaseToken: `token-${randomUUID()}` }), 'message\u0000'),
      pushEnvelope(googleDeveloperNotification({ notificationType: 4, purchaseToken: 'token\u0000' })),
      pushEnvelope(googleDeveloperNotification({ notificationType: 4, purchaseToken: `token-${randomUUID()}`, subscriptionId: 'pro\u0000' })),
    ];
    for (const body of bodies) await refused(async () => postGoogle(server.app, body, await googleBearer(providers.googleKey)));
  });
});
