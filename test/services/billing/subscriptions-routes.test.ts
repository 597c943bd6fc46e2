import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Server } from '../../../src/server.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { TEST_INTERNAL_TOKEN } from '../../support/server.ts';
import type { TestLogin, TestServer } from '../../support/server.ts';
import { appleNotificationBody, newStripeSubscriptionId, postApple, postStripe, stripeEvent, stripeSubscription } from './support/providers.ts';
import type { BillingTestProviders } from './support/providers.ts';
import { createBillingOnlyServer, startBillingTestServer, stopBillingTestServer } from './support/server.ts';
import { billingTables, countRows } from './support/state.ts';

const NOW_SECONDS = Math.floor(Date.now() / 1000);
/** Without PLANS_FILE every user is on the one unlimited plan, and holds nothing yet. */
const UNLIMITED = {
  plan: {
    id: 'default',
    name: 'Unlimited',
    limits: { devices: null, geofences: null, shares: null, notificationRules: null, historyDays: null },
    features: { commands: true, reports: true, scheduledReports: true, channels: null },
  },
  usage: { devices: 0, geofences: 0, shares: 0, notificationRules: 0 },
};
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describeEachEngine('billing: subscription queries', (engine) => {
  let providers: BillingTestProviders;
  let server: TestServer;
  let admin: TestLogin;

  before(async () => {
    ({ providers, server } = await startBillingTestServer(engine));
    admin = await server.login({ email: `admin-${randomUUID()}@example.com`, administrator: true });
  });
  after(() => stopBillingTestServer({ providers, server }));

  const freshUser = () => server.login({ email: `queries-${randomUUID()}@example.com` });
  const get = (url: string, headers: Record<string, string> = {}) => server.app.inject({ url, headers });

  /** Gives the user a Stripe record in the given state. */
  async function subscribe(userId: number, status: string, options: { cancelAtPeriodEnd?: boolean; periodEnd?: number; created?: number } = {}) {
    const id = newStripeSubscriptionId();
    const response = await postStripe(server.app, stripeEvent('customer.subscription.created', stripeSubscription({
      id, userId, status, cancelAtPeriodEnd: options.cancelAtPeriodEnd, periodStart: NOW_SECONDS - 86_400, periodEnd: options.periodEnd ?? NOW_SECONDS + 86_400,
    }), { created: options.created ?? NOW_SECONDS }));
    assert.equal(response.json().status, 'processed', response.body);
    return id;
  }

  describe('GET /api/subscriptions/{user_id}', () => {
    it('gives the bearer their records and a stable app_account_token', async () => {
      const user = await freshUser();
      const empty = await get(`/api/subscriptions/${user.userId}`, user.authorization);
      assert.equal(empty.statusCode, 200);
      const token = empty.json().app_account_token;
      assert.match(token, UUID);
      assert.deepEqual(empty.json(), { user_id: user.userId, app_account_token: token, subscriptions: [], has_active_subscription: false, ...UNLIMITED });

      await subscribe(user.userId, 'active');
      const full = await get(`/api/subscriptions/${user.userId}`, user.authorization);
      const body = full.json();
      assert.equal(body.app_account_token, token, 'the token never changes');
      assert.equal(body.has_active_subscription, true);
      assert.equal(body.subscriptions.length, 1);
      const [subscription] = body.subscriptions;
      assert.deepEqual(Object.keys(subscription).sort(), [
        'canceled_at', 'created_at', 'current_period_end', 'current_period_start', 'id', 'plan_id', 'plan_name', 'provider', 'status', 'user_id',
      ]);
      assert.equal(subscription.user_id, user.userId);
      assert.equal(subscription.provider, 'stripe');
      assert.equal(subscription.status, 'ACTIVE');
      assert.equal(subscription.plan_id, 'price_pro_monthly');
      assert.equal(subscription.plan_name, 'Pro monthly');
      assert.equal(subscription.current_period_end, new Date((NOW_SECONDS + 86_400) * 1000).toISOString());
      assert.equal(subscription.canceled_at, null);
      assert.ok(!Number.isNaN(Date.parse(subscription.created_at)));
    });

    it('refuses another user\'s id with 403 and creates nothing for it', async () => {
      const user = await freshUser();
      const victim = await freshUser();
      const before = await countRows(server.database, 'billing_customers');
      for (const url of [`/api/subscriptions/${victim.userId}`, `/api/subscriptions/check/${victim.userId}`]) {
        const response = await get(url, user.authorization);
        assert.equal(response.statusCode, 403);
        assert.equal(response.json().code, 'FORBIDDEN');
      }
      assert.equal(await countRows(server.database, 'billing_customers'), before);
    });

    it('lets an administrator read any user, and answers 404 for a user that does not exist', async () => {
      const user = await freshUser();
      await subscribe(user.userId, 'past_due');
      const response = await get(`/api/subscriptions/${user.userId}`, admin.authorization);
      assert.equal(response.statusCode, 200);
      assert.equal(response.json().subscriptions[0].status, 'PAST_DUE');
      assert.equal(response.json().has_active_subscription, false);
      const before = await countRows(server.database, 'billing_customers');
      const missing = await get('/api/subscriptions/987654321', admin.authorization);
      assert.equal(missing.statusCode, 404);
      assert.equal(missing.json().code, 'NOT_FOUND');
      assert.equal(await countRows(server.database, 'billing_customers'), before);
    });

    it('needs a token', async () => {
      const user = await freshUser();
      for (const url of [`/api/subscriptions/${user.userId}`, `/api/subscriptions/check/${user.userId}`, '/api/subscriptions/by-provider/stripe/sub_1']) {
        const response = await get(url);
        assert.equal(response.statusCode, 401);
        assert.equal(response.json().code, 'UNAUTHORIZED');
      }
    });

    it('rejects a user id that is not a positive integer with 400 VALIDATION_FAILED', async () => {
      for (const id of ['0', '-1', 'abc', '1.5', '99999999999999999999']) {
        for (const url of [`/api/subscriptions/${id}`, `/api/subscriptions/check/${id}`]) {
          const response = await get(url, admin.authorization);
          assert.equal(response.statusCode, 400, `${url}: ${response.body}`);
          assert.equal(response.json().code, 'VALIDATION_FAILED');
        }
      }
    });
  });

  describe('entitlement rule', () => {
    const cases: [string, string, { cancelAtPeriodEnd?: boolean; periodEnd?: number }, boolean][] = [
      ['ACTIVE', 'active', {}, true],
      ['CANCELED with the period still running', 'active', { cancelAtPeriodEnd: true, periodEnd: NOW_SECONDS + 3600 }, true],
      ['CANCELED after the period ended', 'active', { cancelAtPeriodEnd: true, periodEnd: NOW_SECONDS - 3600 }, false],
      ['PAST_DUE', 'past_due', {}, false],
      ['EXPIRED', 'canceled', {}, false],
    ];
    for (const [label, status, options, entitled] of cases) {
      it(`${label} -> ${entitled ? 'entitled' : 'not entitled'} in GET and check`, async () => {
        const user = await freshUser();
        await subscribe(user.userId, status, options);
        assert.equal((await get(`/api/subscriptions/${user.userId}`, user.authorization)).json().has_active_subscription, entitled);
        assert.equal((await get(`/api/subscriptions/check/${user.userId}`, user.authorization)).json().is_subscribed, entitled);
      });
    }
  });

  describe('GET /api/subscriptions/check/{user_id}', () => {
    it('reports the entitled record with the latest end, else the newest record', async () => {
      const user = await freshUser();
      const appleToken = (await get(`/api/subscriptions/${user.userId}`, user.authorization)).json().app_account_token;
      await subscribe(user.userId, 'active', { periodEnd: NOW_SECONDS + 5 * 86_400 });
      const later = Date.now() + 20 * 86_400_000;
      await postApple(server.app, appleNotificationBody(providers.apple, { notificationType: 'DID_CHANGE_RENEWAL_STATUS', subtype: 'AUTO_RENEW_DISABLED', originalTransactionId: '2000000000000101', appAccountToken: appleToken, expiresDate: later }));
      const check = await get(`/api/subscriptions/check/${user.userId}`, user.authorization);
      assert.deepEqual(check.json(), {
        user_id: user.userId, is_subscribed: true, status: 'CANCELED', provider: 'apple', plan_id: 'trackstack.pro.monthly', expires_at: new Date(later).toISOString(), ...UNLIMITED,
      });

      const lapsed = await freshUser();
      await subscribe(lapsed.userId, 'past_due', { created: NOW_SECONDS - 100 });
      const lapsedToken = (await get(`/api/subscriptions/${lapsed.userId}`, lapsed.authorization)).json().app_account_token;
      await postApple(server.app, appleNotificationBody(providers.apple, { notificationType: 'EXPIRED', subtype: 'VOLUNTARY', originalTransactionId: '2000000000000102', appAccountToken: lapsedToken, signedDate: Date.now() - 1000 }));
      const newest = await get(`/api/subscriptions/check/${lapsed.userId}`, admin.authorization);
      assert.equal(newest.json().is_subscribed, false);
      assert.equal(newest.json().provider, 'apple');
      assert.equal(newest.json().status, 'EXPIRED');
    });

    it('answers is_subscribed false with nulls for a user without records or unknown', async () => {
      for (const userId of [(await freshUser()).userId, 987654321]) {
        const response = await get(`/api/subscriptions/check/${userId}`, admin.authorization);
        assert.equal(response.statusCode, 200);
        assert.deepEqual(response.json(), { user_id: userId, is_subscribed: false, status: null, provider: null, plan_id: null, expires_at: null, ...UNLIMITED });
      }
    });
  });

  describe('GET /api/subscriptions/by-provider/{provider}/{subscription_id}', () => {
    it('gives administrators the record, 404 when none follows the id, 403 to everyone else', async () => {
      const user = await freshUser();
      const id = await subscribe(user.userId, 'trialing');
      const found = await get(`/api/subscriptions/by-provider/stripe/${id}`, admin.authorization);
      assert.equal(found.statusCode, 200);
      assert.equal(found.json().user_id, user.userId);
      assert.equal(found.json().status, 'ACTIVE');
      const missing = await get('/api/subscriptions/by-provider/stripe/sub_missing', admin.authorization);
      assert.equal(missing.statusCode, 404);
      assert.equal(missing.json().code, 'NOT_FOUND');
      assert.equal((await get(`/api/subscriptions/by-provider/apple/${id}`, admin.authorization)).statusCode, 404);
      const own = await get(`/api/subscriptions/by-provider/stripe/${id}`, user.authorization);
      assert.equal(own.statusCode, 403);
      assert.equal(own.json().code, 'FORBIDDEN');
    });

    it('rejects an unknown provider with 400 VALIDATION_FAILED', async () => {
      const response = await get('/api/subscriptions/by-provider/paypal/sub_1', admin.authorization);
      assert.equal(response.statusCode, 400);
      assert.equal(response.json().code, 'VALIDATION_FAILED');
    });

    it('rejects an id that is not printable ASCII (a NUL, a space, a control or non-ASCII character) with 400 VALIDATION_FAILED', async () => {
      for (const id of ['sub%00', 'sub%201', 'sub%0A', 'sub%C3%A9']) {
        const response = await get(`/api/subscriptions/by-provider/stripe/${id}`, admin.authorization);
        assert.equal(response.statusCode, 400, `${id}: ${response.body}`);
        assert.equal(response.json().code, 'VALIDATION_FAILED');
      }
    });
  });

  describe('POST /api/subscriptions/google/purchases', () => {
    const post = (payload: unknown, headers: Record<string, string>) =>
      server.app.inject({ method: 'POST', url: '/api/subscriptions/google/purchases', headers, payload: payload as Record<string, unknown> });

    it('rejects bad bodies with 400 VALIDATION_FAILED and links nothing', async () => {
      const user = await freshUser();
      const bodies: unknown[] = [
        {},
        { purchaseToken: 'tok' },
        { productId: 'pro' },
        { purchaseToken: 42, productId: 'pro' },
        { purchaseToken: 'tok', productId: ['pro'] },
        { purchaseToken: '', productId: 'pro' },
        { purchaseToken: 'tok with spaces', productId: 'pro' },
        { purchaseToken: 'tok\u0000', productId: 'pro' },
        { purchaseToken: 'tok', productId: 'pro\u0000' },
        { purchaseToken: 'tok\u00e9', productId: 'pro' },
        { purchaseToken: 't'.repeat(1025), productId: 'pro' },
        { purchaseToken: 'tok', productId: 'p'.repeat(256) },
        { purchaseToken: 'tok', productId: 'pro', userId: 1 },
      ];
      for (const body of bodies) {
        const response = await post(body, user.authorization);
        assert.equal(response.statusCode, 400, JSON.stringify(body));
        assert.equal(response.json().code, 'VALIDATION_FAILED');
      }
      assert.equal(await countRows(server.database, 'billing_google_purchase_links'), 0);
    });

    it('needs a token', async () => {
      const response = await post({ purchaseToken: 'tok', productId: 'pro' }, {});
      assert.equal(response.statusCode, 401);
      assert.equal(await countRows(server.database, 'billing_google_purchase_links'), 0);
    });
  });
});

describeEachEngine('billing: service-to-service calls (split mode)', (engine) => {
  let server: TestServer;
  let billing: Server;
  let user: TestLogin;
  let subscriptionId: string;
  let providers: BillingTestProviders;

  before(async () => {
    ({ providers, server } = await startBillingTestServer(engine));
    billing = await createBillingOnlyServer({ providers, server });
    user = await server.login({ email: `split-${randomUUID()}@example.com` });
    subscriptionId = newStripeSubscriptionId();
    await postStripe(server.app, stripeEvent('customer.subscription.created', stripeSubscription({ id: subscriptionId, userId: user.userId })));
  });
  after(async () => {
    await billing?.close();
    await stopBillingTestServer({ providers, server });
  });

  const service = { 'x-internal-token': TEST_INTERNAL_TOKEN };

  it('answers a service with X-Internal-Token on every query route', async () => {
    const check = await billing.app.inject({ url: `/api/subscriptions/check/${user.userId}`, headers: service });
    assert.equal(check.statusCode, 200);
    assert.equal(check.json().is_subscribed, true);
    const list = await billing.app.inject({ url: `/api/subscriptions/${user.userId}`, headers: service });
    assert.equal(list.statusCode, 200);
    assert.equal(list.json().subscriptions.length, 1);
    const byProvider = await billing.app.inject({ url: `/api/subscriptions/by-provider/stripe/${subscriptionId}`, headers: service });
    assert.equal(byProvider.statusCode, 200);
    assert.equal(byProvider.json().user_id, user.userId);
  });

  it('trusts X-User-Id only beside the internal token, and then only for that user', async () => {
    const forwarded = { ...service, 'x-user-id': String(user.userId), 'x-user-email': 'split@example.com' };
    assert.equal((await billing.app.inject({ url: `/api/subscriptions/check/${user.userId}`, headers: forwarded })).statusCode, 200);
    assert.equal((await billing.app.inject({ url: `/api/subscriptions/check/${user.userId + 1}`, headers: forwarded })).statusCode, 403);
    assert.equal((await billing.app.inject({ url: `/api/subscriptions/by-provider/stripe/${subscriptionId}`, headers: forwarded })).statusCode, 403);
    for (const headers of [{}, { 'x-internal-token': 'wrong-token-0123456789abcdef0123' }, { 'x-user-id': String(user.userId) }]) {
      const response = await billing.app.inject({ url: `/api/subscriptions/check/${user.userId}`, headers });
      assert.equal(response.statusCode, 401);
      assert.equal(response.json().code, 'UNAUTHORIZED');
    }
  });

  it('serves the webhooks and health without the gateway', async () => {
    const health = await billing.app.inject({ url: '/health' });
    assert.deepEqual(health.json(), { status: 'ok', service: 'billing', database: 'connected' });
    const event = stripeEvent('customer.subscription.updated', stripeSubscription({ id: subscriptionId, userId: user.userId, status: 'past_due' }));
    assert.equal((await postStripe(billing.app, event)).json().subscription_status, 'PAST_DUE');
    const rows = await billingTables(server.database).selectFrom('subscriptions').select('status').where('provider_subscription_id', '=', subscriptionId).execute();
    assert.deepEqual(rows, [{ status: 'PAST_DUE' }]);
  });
});
