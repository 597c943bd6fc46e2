// Signed provider notifications carrying times we cannot store or answer: refused as INVALID_PAYLOAD, nothing stored,
// and the user's subscription routes keep answering 200.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { describeEachEngine } from '../../support/engines.ts';
import type { TestLogin, TestServer } from '../../support/server.ts';
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
  stripeInvoice,
  stripeSubscription,
} from './support/providers.ts';
import type { BillingTestProviders } from './support/providers.ts';
import { startBillingTestServer, stopBillingTestServer } from './support/server.ts';
import { assertRefusedStoringNothing } from './support/state.ts';

const DAY_MS = 86_400_000;
const NOW_SECONDS = Math.floor(Date.now() / 1000);
/** 10000-01-01T00:00:00Z, the first moment ISO 8601 cannot write with four year digits. */
const YEAR_10000_SECONDS = 253_402_300_800;
const LAST_SECOND_OF_9999 = YEAR_10000_SECONDS - 1;

describeEachEngine('billing: provider times', (engine) => {
  let providers: BillingTestProviders;
  let server: TestServer;

  before(async () => ({ providers, server } = await startBillingTestServer(engine)));
  after(() => stopBillingTestServer({ providers, server }));

  const freshUser = () => server.login({ email: `times-${randomUUID()}@example.com` });

  async function appAccountToken(login: TestLogin): Promise<string> {
    return (await server.app.inject({ url: `/api/subscriptions/${login.userId}`, headers: login.authorization })).json().app_account_token;
  }

  /** Sends the delivery and checks the refusal, that no table changed, and that the user's routes still answer. */
  async function refused(login: TestLogin, deliver: () => Promise<LightMyRequestResponse>): Promise<void> {
    await assertRefusedStoringNothing(server.database, deliver);
    const list = await server.app.inject({ url: `/api/subscriptions/${login.userId}`, headers: login.authorization });
    assert.equal(list.statusCode, 200, list.body);
    assert.deepEqual(list.json().subscriptions, []);
    const check = await server.app.inject({ url: `/api/subscriptions/check/${login.userId}`, headers: login.authorization });
    assert.equal(check.statusCode, 200, check.body);
    assert.equal(check.json().is_subscribed, false);
  }

  describe('Stripe', () => {
    const subscriptionCases: [string, Record<string, unknown>, { created?: number }][] = [
      ['created beyond JavaScript dates (1e13 s)', {}, { created: 1e13 }],
      ['created two days ahead of our clock', {}, { created: NOW_SECONDS + 2 * 86_400 }],
      ['current_period_end in year 10000', { periodEnd: YEAR_10000_SECONDS }, {}],
      ['current_period_end 1e300', { periodEnd: 1e300 }, {}],
      ['current_period_start before 1970', { periodStart: -86_400 }, {}],
    ];
    for (const [label, spec, options] of subscriptionCases) {
      it(`refuses customer.subscription.created with ${label}`, async () => {
        const login = await freshUser();
        const event = stripeEvent('customer.subscription.created', stripeSubscription({ id: newStripeSubscriptionId(), userId: login.userId, ...spec }), options);
        await refused(login, () => postStripe(server.app, event));
      });
    }

    it('refuses canceled_at beyond JavaScript dates', async () => {
      const login = await freshUser();
      const subscription = { ...stripeSubscription({ id: newStripeSubscriptionId(), userId: login.userId, status: 'canceled' }), canceled_at: 1e13 };
      await refused(login, () => postStripe(server.app, stripeEvent('customer.subscription.deleted', subscription)));
    });

    it('refuses an event of a type it skips when its created time cannot be stored', async () => {
      const login = await freshUser();
      await refused(login, () => postStripe(server.app, stripeEvent('charge.succeeded', { id: 'ch_1', object: 'charge' }, { created: 1e13 })));
    });

    it('refuses invoice.paid whose line period ends in year 10000', async () => {
      const login = await freshUser();
      const invoice = stripeInvoice({ subscriptionId: newStripeSubscriptionId(), userId: login.userId, periodStart: NOW_SECONDS, periodEnd: YEAR_10000_SECONDS });
      await refused(login, () => postStripe(server.app, stripeEvent('invoice.paid', invoice)));
    });

    it('accepts a period ending in the last second of year 9999 and answers it', async () => {
      const login = await freshUser();
      const event = stripeEvent('customer.subscription.created', stripeSubscription({ id: newStripeSubscriptionId(), userId: login.userId, periodEnd: LAST_SECOND_OF_9999 }));
      assert.equal((await postStripe(server.app, event)).json().status, 'processed');
      const list = await server.app.inject({ url: `/api/subscriptions/${login.userId}`, headers: login.authorization });
      assert.equal(list.statusCode, 200, list.body);
      assert.equal(list.json().subscriptions[0].current_period_end, '9999-12-31T23:59:59.000Z');
      const check = await server.app.inject({ url: `/api/subscriptions/check/${login.userId}`, headers: login.authorization });
      assert.equal(check.statusCode, 200, check.body);
      assert.deepEqual([check.json().is_subscribed, check.json().expires_at], [true, '9999-12-31T23:59:59.000Z']);
    });
  });

  describe('App Store', () => {
    const cases: [string, string, Record<string, unknown>][] = [
      ['expiresDate in year 10000', 'SUBSCRIBED', { expiresDate: YEAR_10000_SECONDS * 1000 }],
      ['expiresDate beyond JavaScript dates', 'DID_RENEW', { expiresDate: 1e17 }],
      ['purchaseDate before 1970', 'SUBSCRIBED', { purchaseDate: -DAY_MS }],
      ['revocationDate beyond JavaScript dates', 'REFUND', { transaction: { revocationDate: 1e17 } }],
      // The test chain is valid for a year, so this signature verifies: only the date is wrong.
      ['signedDate thirty days ahead of our clock', 'SUBSCRIBED', { signedDate: Date.now() + 30 * DAY_MS }],
    ];
    for (const [label, notificationType, spec] of cases) {
      it(`refuses ${notificationType} with ${label}`, async () => {
        const login = await freshUser();
        const body = appleNotificationBody(providers.apple, { notificationType, appAccountToken: await appAccountToken(login), ...spec });
        await refused(login, () => postApple(server.app, body));
      });
    }
  });

  describe('Google Play', () => {
    const cases: [string, number][] = [
      // SUBSCRIPTION_CANCELED records the event time as canceled_at too.
      ['eventTimeMillis in year 33658', 1e15],
      ['eventTimeMillis two days ahead of our clock', Date.now() + 2 * DAY_MS],
    ];
    for (const [label, eventTimeMillis] of cases) {
      it(`refuses SUBSCRIPTION_CANCELED with ${label}`, async () => {
        const login = await freshUser();
        const purchaseToken = `token-${randomUUID()}`;
        const registration = await server.app.inject({
          method: 'POST', url: '/api/subscriptions/google/purchases', headers: login.authorization, payload: { purchaseToken, productId: 'pro_monthly' },
        });
        assert.equal(registration.statusCode, 201);
        const body = pushEnvelope(googleDeveloperNotification({ notificationType: 3, purchaseToken, eventTimeMillis }));
        await refused(login, async () => postGoogle(server.app, body, await googleBearer(providers.googleKey)));
      });
    }
  });
});
