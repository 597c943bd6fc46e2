import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Entitlement } from '../../../src/services/billing/module.ts';
import { signIn } from '../../support/api.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { eventually } from '../../support/eventually.ts';
import type { TestServer } from '../../support/server.ts';
import { Client, snapshot, uniqueId } from '../devices/helpers.ts';
import { appleNotificationBody, googleBearer, googleDeveloperNotification, newStripeSubscriptionId, postApple, postGoogle, postStripe, pushEnvelope, stripeEvent, stripeInvoice, stripeSubscription } from './support/providers.ts';
import type { BillingTestProviders } from './support/providers.ts';
import { assertPlanLimit, planLimitError, writeTestPlans } from './support/plans.ts';
import { startBillingTestServer, stopBillingTestServer } from './support/server.ts';
import { billingTables } from './support/state.ts';

const CIRCLE = 'CIRCLE (52.52 13.405, 150)';

describeEachEngine('plans: limits, features and what changes a plan', (engine) => {
  let providers: BillingTestProviders;
  let server: TestServer;
  let admin: Client;
  let entitlement: Entitlement;

  before(async () => {
    ({ providers, server } = await startBillingTestServer(engine, { RATE_LIMITS: 'off', PLANS_FILE: writeTestPlans() }));
    admin = new Client(server, await signIn(server, `plans-admin-${randomUUID()}@example.com`, { administrator: true }));
    entitlement = (server.billing as NonNullable<typeof server.billing>).api.entitlement;
  });
  after(() => stopBillingTestServer({ providers, server }));

  const emailOf = (name: string) => `${name}-${randomUUID()}@example.com`;
  const freshUser = async (name = 'plans') => new Client(server, await signIn(server, emailOf(name)));
  const createDevice = (client: Client) => client.post('/api/devices', { name: 'Tracker', uniqueId: uniqueId('plan') });
  const planIdOf = async (client: Client) => (await admin.get(`/api/subscriptions/${client.userId}`)).body.plan.id as string;
  const ownedCount = async (client: Client) => ((await client.get('/api/devices')).body as unknown[]).length;
  /** The check the notifications module makes: the limit read first, the count checked against it. */
  const withinRuleLimit = async (userId: number, usage: number, adding?: number) => (await entitlement.limitOf(userId, 'notificationRules')).assert(usage, adding);

  async function createDevices(client: Client, count: number): Promise<number[]> {
    const ids: number[] = [];
    for (let index = 0; index < count; index += 1) {
      const reply = await createDevice(client);
      assert.equal(reply.status, 201, JSON.stringify(reply.body));
      ids.push(reply.body.id);
    }
    return ids;
  }

  async function subscribeStripe(client: Client, priceId: string, spec: { status?: string; cancelAtPeriodEnd?: boolean; periodEnd?: number } = {}): Promise<string> {
    const id = newStripeSubscriptionId();
    const response = await postStripe(server.app, stripeEvent('customer.subscription.created', stripeSubscription({ id, userId: client.userId, priceId, ...spec })));
    assert.equal(response.json().status, 'processed', response.body);
    return id;
  }

  describe('plan and usage on the subscription routes', () => {
    it('a user without a subscription is on the default plan; usage is counted by the modules owning each thing', async () => {
      const owner = await freshUser('usage-owner');
      const friendEmail = emailOf('usage-friend');
      const friend = new Client(server, await signIn(server, friendEmail));
      const [deviceId] = await createDevices(owner, 1);
      assert.equal((await owner.post('/api/geofences', { name: 'Home', area: CIRCLE })).status, 201);
      assert.equal((await owner.post(`/api/devices/${deviceId}/shares`, { email: friendEmail, permissions: { position: true } })).status, 201);

      const expectedPlan = {
        id: 'free',
        name: 'Free',
        limits: { devices: 2, geofences: 1, shares: 1, notificationRules: 3, historyDays: 7 },
        features: { commands: false, reports: true, scheduledReports: true, channels: ['web', 'mail'] },
      };
      const subscriptions = await owner.get(`/api/subscriptions/${owner.userId}`);
      assert.equal(subscriptions.status, 200);
      assert.deepEqual(subscriptions.body.plan, expectedPlan);
      assert.deepEqual(subscriptions.body.usage, { devices: 1, geofences: 1, shares: 1, notificationRules: 0 });
      const check = await owner.get(`/api/subscriptions/check/${owner.userId}`);
      assert.deepEqual(check.body.plan, expectedPlan);
      assert.deepEqual(check.body.usage, subscriptions.body.usage);
      // A device shared with a user counts against its owner, never the user.
      const friendUsage = (await friend.get(`/api/subscriptions/${friend.userId}`)).body.usage;
      assert.deepEqual(friendUsage, { devices: 0, geofences: 0, shares: 0, notificationRules: 0 });
    });
  });

  describe('limits', () => {
    it('devices: under and at the limit by create; over it create, create with a token and claim answer 402, changing nothing', async () => {
      const user = await freshUser('devices');
      await createDevices(user, 1);
      assert.equal((await createDevice(user)).status, 201, 'up to the limit');
      const token = (await admin.post('/api/devices/claim-tokens', { uniqueId: uniqueId('plan-token'), modelCode: 'PT-1' })).body as { token: string; uniqueId: string };
      const before = await snapshot(server);
      assertPlanLimit(await createDevice(user), 'devices', 2, 2);
      assertPlanLimit(await user.post('/api/devices', { name: 'T', uniqueId: token.uniqueId, deviceToken: token.token }), 'devices', 2, 2);
      assertPlanLimit(await user.post('/api/devices/claim', { token: token.token }), 'devices', 2, 2);
      assert.deepEqual(await snapshot(server), before);
      assert.equal(await ownedCount(user), 2);
    });

    it('shares: counted over all the owner\'s devices, pending ones included; a device shared with a user leaves that user\'s limits alone', async () => {
      const owner = await freshUser('sharer');
      const friendEmail = emailOf('sharee');
      const friend = new Client(server, await signIn(server, friendEmail));
      const [first, second] = await createDevices(owner, 2);
      assert.equal((await owner.post(`/api/devices/${first}/shares`, { email: emailOf('nobody-yet'), permissions: { position: true } })).status, 201, 'at the limit, pending');
      const before = await snapshot(server);
      assertPlanLimit(await owner.post(`/api/devices/${second}/shares`, { email: friendEmail, permissions: { position: true } }), 'shares', 1, 1);
      assert.deepEqual(await snapshot(server), before);

      const sharer = await freshUser('sharer-two');
      const [device] = await createDevices(sharer, 1);
      assert.equal((await sharer.post(`/api/devices/${device}/shares`, { email: friendEmail, permissions: { position: true } })).status, 201);
      await createDevices(friend, 2);
      assert.equal(await ownedCount(friend), 3, 'two of their own and the one shared with them');
    });

    it('geofences: under and at the limit; over it 402, changing nothing', async () => {
      const user = await freshUser('geofences');
      assert.equal((await user.post('/api/geofences', { name: 'One', area: CIRCLE })).status, 201);
      const reply = await user.post('/api/geofences', { name: 'Two', area: CIRCLE });
      assertPlanLimit(reply, 'geofences', 1, 1);
      assert.equal(((await user.get('/api/geofences')).body as unknown[]).length, 1);
    });

    it('notification rules: the check the notifications module makes, under, at and over', async () => {
      const user = await freshUser('rules');
      await withinRuleLimit(user.userId, 1);
      await withinRuleLimit(user.userId, 2);
      await assert.rejects(
        withinRuleLimit(user.userId, 3),
        planLimitError('notificationRules', 3, 3, 'Your plan (Free) allows at most 3 notification rules'),
      );
      await assert.rejects(withinRuleLimit(user.userId, 2, 2), /at most 3 notification rules/, 'adding several at once');
    });

    it('a user made administrator is held to no plan at once; demoted, to their plan again', async () => {
      const user = await freshUser('promoted');
      await assert.rejects(withinRuleLimit(user.userId, 3), { code: 'PLAN_LIMIT_REACHED' });
      assert.equal((await admin.put(`/api/auth/users/${user.userId}`, { administrator: true })).status, 200);
      await withinRuleLimit(user.userId, 3);
      assert.equal((await admin.put(`/api/auth/users/${user.userId}`, { administrator: false })).status, 200);
      await assert.rejects(withinRuleLimit(user.userId, 3), { code: 'PLAN_LIMIT_REACHED' });
    });

    it('administrators are held to no plan', async () => {
      await createDevices(admin, 3);
      for (const name of ['a', 'b']) assert.equal((await admin.post('/api/geofences', { name, area: CIRCLE })).status, 201);
      await withinRuleLimit(admin.userId, 1000);
      await entitlement.assertFeature(admin.userId, 'commands');
      await entitlement.assertFeature(admin.userId, { channel: 'webhook' });
      assert.equal(await entitlement.hasFeature(admin.userId, { channel: 'webhook' }), true);
    });
  });

  describe('features', () => {
    it('commands and channels outside the plan answer 402 FEATURE_NOT_IN_PLAN naming the feature (hasFeature: false); those inside pass', async () => {
      const user = await freshUser('features');
      const refusal = (feature: string) => (error: { statusCode: number; code: string; details: { feature: string }[] }) => {
        assert.equal(error.statusCode, 402);
        assert.equal(error.code, 'FEATURE_NOT_IN_PLAN');
        assert.equal(error.details[0]?.feature, feature);
        return true;
      };
      await assert.rejects(entitlement.assertFeature(user.userId, 'commands'), refusal('commands'));
      await assert.rejects(entitlement.assertFeature(user.userId, { channel: 'webhook' }), refusal('channels.webhook'));
      await entitlement.assertFeature(user.userId, { channel: 'mail' });
      await entitlement.assertFeature(user.userId, { channel: 'web' });
      assert.deepEqual(
        await Promise.all([entitlement.hasFeature(user.userId, 'commands'), entitlement.hasFeature(user.userId, { channel: 'webhook' }), entitlement.hasFeature(user.userId, { channel: 'mail' })]),
        [false, false, true],
      );

      await subscribeStripe(user, 'price_pro_monthly');
      await entitlement.assertFeature(user.userId, 'commands');
      await entitlement.assertFeature(user.userId, { channel: 'webhook' });
      assert.equal(await entitlement.hasFeature(user.userId, { channel: 'webhook' }), true);
    });
  });

  describe('what changes a plan', () => {
    it('Stripe: a subscription to a listed price upgrades, a failed payment suspends it, its deletion downgrades and keeps every device', async () => {
      const user = await freshUser('stripe');
      await createDevices(user, 2);
      const id = await subscribeStripe(user, 'price_pro_monthly');
      assert.equal(await planIdOf(user), 'pro');
      const period = { subscriptionId: id, userId: user.userId, periodStart: Math.floor(Date.now() / 1000), periodEnd: Math.floor(Date.now() / 1000) + 30 * 86_400 };
      const failed = await postStripe(server.app, stripeEvent('invoice.payment_failed', stripeInvoice(period)));
      assert.equal(failed.json().subscription_status, 'PAST_DUE', failed.body);
      assert.equal(await planIdOf(user), 'free');
      const paid = await postStripe(server.app, stripeEvent('invoice.paid', stripeInvoice(period)));
      assert.equal(paid.json().subscription_status, 'ACTIVE', paid.body);
      assert.equal(await planIdOf(user), 'pro');
      await createDevices(user, 1);
      assertPlanLimit(await createDevice(user), 'devices', 3, 3);

      const deleted = await postStripe(server.app, stripeEvent('customer.subscription.deleted', stripeSubscription({ id, userId: user.userId, status: 'canceled', priceId: 'price_pro_monthly' })));
      assert.equal(deleted.json().subscription_status, 'EXPIRED');
      assert.equal(await planIdOf(user), 'free');
      assert.equal(await ownedCount(user), 3, 'a downgrade deletes no device');
      assertPlanLimit(await createDevice(user), 'devices', 2, 3);
    });

    it('the highest-ranked plan among entitled subscriptions wins; a product no plan lists grants the default', async () => {
      const user = await freshUser('ranks');
      await subscribeStripe(user, 'price_unknown_to_plans');
      assert.equal(await planIdOf(user), 'free');
      await subscribeStripe(user, 'price_team');
      const token = (await user.get(`/api/subscriptions/${user.userId}`)).body.app_account_token as string;
      const apple = await postApple(server.app, appleNotificationBody(providers.apple, { notificationType: 'SUBSCRIBED', subtype: 'INITIAL_BUY', originalTransactionId: `${Date.now()}1`, appAccountToken: token }));
      assert.equal(apple.json().status, 'processed', apple.body);
      assert.equal(await planIdOf(user), 'team', 'team (Stripe) outranks pro (App Store)');
    });

    it('App Store: a purchase of a listed product upgrades; its expiry downgrades', async () => {
      const user = await freshUser('apple');
      const token = (await user.get(`/api/subscriptions/${user.userId}`)).body.app_account_token as string;
      const originalTransactionId = `${Date.now()}2`;
      const subscribed = await postApple(server.app, appleNotificationBody(providers.apple, { notificationType: 'SUBSCRIBED', subtype: 'INITIAL_BUY', originalTransactionId, appAccountToken: token, signedDate: Date.now() - 2000 }));
      assert.equal(subscribed.json().status, 'processed', subscribed.body);
      assert.equal(await planIdOf(user), 'pro');
      const expired = await postApple(server.app, appleNotificationBody(providers.apple, { notificationType: 'EXPIRED', subtype: 'VOLUNTARY', originalTransactionId, appAccountToken: token, signedDate: Date.now() - 1000 }));
      assert.equal(expired.json().subscription_status, 'EXPIRED', expired.body);
      assert.equal(await planIdOf(user), 'free');
    });

    it('Google Play: a registered purchase of a listed product upgrades; its expiry downgrades', async () => {
      const user = await freshUser('google');
      const purchaseToken = `token-${randomUUID()}.AO-J1Ow`;
      const registered = await user.post('/api/subscriptions/google/purchases', { purchaseToken, productId: 'pro_monthly' });
      assert.equal(registered.status, 201);
      const notify = async (notificationType: number, eventTimeMillis: number) =>
        postGoogle(server.app, pushEnvelope(googleDeveloperNotification({ notificationType, purchaseToken, eventTimeMillis }), randomUUID()), await googleBearer(providers.googleKey));
      assert.equal((await notify(4, Date.now() - 2000)).json().status, 'processed');
      assert.equal(await planIdOf(user), 'pro');
      assert.equal((await notify(13, Date.now() - 1000)).json().subscription_status, 'EXPIRED');
      assert.equal(await planIdOf(user), 'free');
    });

    it('a cancelled subscription keeps its plan until its period ends, then the default applies without any event', async () => {
      const user = await freshUser('expiry');
      await createDevices(user, 2);
      await subscribeStripe(user, 'price_pro_monthly', { cancelAtPeriodEnd: true, periodEnd: Math.ceil(Date.now() / 1000) + 2 });
      assert.equal(await planIdOf(user), 'pro');
      await createDevices(user, 1);
      await eventually(async () => (await planIdOf(user)) === 'free', 'the plan ends with the period', 6000);
      assertPlanLimit(await createDevice(user), 'devices', 2, 3);
    });
  });

  describe('administrator overrides', () => {
    const overrideOf = async (userId: number) =>
      billingTables(server.database).selectFrom('billing_plan_overrides').select(['plan_id', 'until']).where('user_id', '=', userId).executeTakeFirst();

    it('PUT puts a user on a plan over their subscriptions; DELETE gives the subscriptions back', async () => {
      const user = await freshUser('override');
      await subscribeStripe(user, 'price_team');
      const put = await admin.put(`/api/subscriptions/${user.userId}/plan`, { planId: 'free' });
      assert.equal(put.status, 200, JSON.stringify(put.body));
      assert.equal(put.body.plan_id, 'free');
      assert.equal(put.body.until, null);
      assert.equal(put.body.plan.id, 'free');
      assert.equal(await planIdOf(user), 'free', 'an override wins over a higher subscription');
      await createDevices(user, 2);
      assertPlanLimit(await createDevice(user), 'devices', 2, 2);

      assert.equal((await admin.delete(`/api/subscriptions/${user.userId}/plan`)).status, 204);
      assert.equal(await planIdOf(user), 'team');
      assert.equal(await overrideOf(user.userId), undefined);
      await createDevices(user, 1);
    });

    it('an override with `until` ends at that instant without any event', async () => {
      const user = await freshUser('override-until');
      const until = new Date(Date.now() + 1500).toISOString();
      const put = await admin.put(`/api/subscriptions/${user.userId}/plan`, { planId: 'pro', until });
      assert.equal(put.status, 200, JSON.stringify(put.body));
      assert.equal(put.body.until, until);
      assert.equal(await planIdOf(user), 'pro');
      await eventually(async () => (await planIdOf(user)) === 'free', 'the override ends', 5000);
    });

    it('refuses bad requests with a code and changes nothing', async () => {
      const user = await freshUser('override-bad');
      assert.equal((await admin.put(`/api/subscriptions/${user.userId}/plan`, { planId: 'pro' })).status, 200);
      const cases: [Client, string, 'PUT' | 'DELETE', unknown, number, string][] = [
        [user, `/api/subscriptions/${user.userId}/plan`, 'PUT', { planId: 'team' }, 403, 'FORBIDDEN'],
        [user, `/api/subscriptions/${user.userId}/plan`, 'DELETE', undefined, 403, 'FORBIDDEN'],
        [admin, `/api/subscriptions/${user.userId}/plan`, 'PUT', { planId: 'platinum' }, 400, 'UNKNOWN_PLAN'],
        [admin, `/api/subscriptions/${user.userId}/plan`, 'PUT', { planId: 'team', until: new Date(Date.now() - 1000).toISOString() }, 400, 'VALIDATION_FAILED'],
        [admin, `/api/subscriptions/${user.userId}/plan`, 'PUT', { planId: 'team', until: 'tomorrow' }, 400, 'VALIDATION_FAILED'],
        [admin, `/api/subscriptions/${user.userId}/plan`, 'PUT', { planId: 'team', note: 'vip' }, 400, 'VALIDATION_FAILED'],
        [admin, `/api/subscriptions/${user.userId}/plan`, 'PUT', { planId: '' }, 400, 'VALIDATION_FAILED'],
        [admin, `/api/subscriptions/${user.userId}/plan`, 'PUT', {}, 400, 'VALIDATION_FAILED'],
        [admin, '/api/subscriptions/987654321/plan', 'PUT', { planId: 'team' }, 404, 'NOT_FOUND'],
        [admin, '/api/subscriptions/0/plan', 'PUT', { planId: 'team' }, 400, 'VALIDATION_FAILED'],
      ];
      for (const [client, url, method, body, status, code] of cases) {
        const reply = await client.request(method, url, body);
        assert.equal(reply.status, status, `${method} ${JSON.stringify(body)}: ${JSON.stringify(reply.body)}`);
        assert.equal(reply.body.code, code);
        assert.deepEqual(await overrideOf(user.userId), { plan_id: 'pro', until: null });
      }
      const other = await freshUser('override-none');
      const none = await admin.delete(`/api/subscriptions/${other.userId}/plan`);
      assert.equal(none.status, 404);
      assert.equal(none.body.code, 'NOT_FOUND');
    });
  });
});
