import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import type { SubscriptionStatus } from '../../../src/services/billing/providers/index.ts';
import { describeEachEngine } from '../../support/engines.ts';
import type { TestLogin, TestServer } from '../../support/server.ts';
import {
  GOOGLE_PACKAGE_NAME,
  googleBearer,
  googleDeveloperNotification,
  postGoogle,
  pushEnvelope,
} from './support/providers.ts';
import type { BillingTestProviders, GoogleNotificationSpec, PushTokenSpec } from './support/providers.ts';
import { startBillingTestServer, stopBillingTestServer } from './support/server.ts';
import { countRows, subscriptionRecord, webhookEvent } from './support/state.ts';

describeEachEngine('billing: Google Play webhook', (engine) => {
  let providers: BillingTestProviders;
  let server: TestServer;

  before(async () => ({ providers, server } = await startBillingTestServer(engine)));
  after(() => stopBillingTestServer({ providers, server }));

  const newPurchaseToken = () => `token-${randomUUID()}.AO-J1Ow`;
  const freshUser = () => server.login({ email: `google-${randomUUID()}@example.com` });
  const bearer = (spec?: PushTokenSpec) => googleBearer(providers.googleKey, spec);

  function register(login: TestLogin, purchaseToken: string, productId = 'pro_monthly') {
    return server.app.inject({ method: 'POST', url: '/api/subscriptions/google/purchases', headers: login.authorization, payload: { purchaseToken, productId } });
  }

  async function notify(spec: GoogleNotificationSpec, messageId = randomUUID()) {
    return postGoogle(server.app, pushEnvelope(googleDeveloperNotification(spec), messageId), await bearer());
  }

  function check(login: TestLogin) {
    return server.app.inject({ url: `/api/subscriptions/check/${login.userId}`, headers: login.authorization });
  }

  async function rejected(body: unknown, authorization: string | undefined, code: string): Promise<void> {
    const before = await countRows(server.database, 'billing_webhook_events');
    const response = await postGoogle(server.app, body, authorization);
    assert.equal(response.statusCode, 400, response.body);
    assert.equal(response.json().code, code);
    assert.equal(await countRows(server.database, 'billing_webhook_events'), before, 'nothing is stored');
  }

  const applied: [number, string, SubscriptionStatus][] = [
    [1, 'SUBSCRIPTION_RECOVERED', 'ACTIVE'],
    [2, 'SUBSCRIPTION_RENEWED', 'ACTIVE'],
    [3, 'SUBSCRIPTION_CANCELED', 'CANCELED'],
    [4, 'SUBSCRIPTION_PURCHASED', 'ACTIVE'],
    [5, 'SUBSCRIPTION_ON_HOLD', 'PAST_DUE'],
    [6, 'SUBSCRIPTION_IN_GRACE_PERIOD', 'GRACE_PERIOD'],
    [7, 'SUBSCRIPTION_RESTARTED', 'ACTIVE'],
    [9, 'SUBSCRIPTION_DEFERRED', 'ACTIVE'],
    [10, 'SUBSCRIPTION_PAUSED', 'PAST_DUE'],
    [12, 'SUBSCRIPTION_REVOKED', 'EXPIRED'],
    [13, 'SUBSCRIPTION_EXPIRED', 'EXPIRED'],
  ];
  for (const [notificationType, name, status] of applied) {
    it(`${notificationType} ${name} -> ${status}`, async () => {
      const login = await freshUser();
      const purchaseToken = newPurchaseToken();
      assert.equal((await register(login, purchaseToken)).statusCode, 201);
      const eventTimeMillis = Date.now() - 1000;
      const messageId = randomUUID();
      const response = await notify({ notificationType, purchaseToken, eventTimeMillis }, messageId);
      assert.equal(response.statusCode, 200, response.body);
      const record = await subscriptionRecord(server.database, 'google', purchaseToken);
      assert.ok(record);
      assert.deepEqual(response.json(), { status: 'processed', subscription_id: record.id, subscription_status: status });
      assert.equal(record.user_id, login.userId);
      assert.equal(record.status, status);
      assert.equal(record.plan_id, 'pro_monthly');
      assert.equal(record.last_event_at, eventTimeMillis);
      assert.equal(record.canceled_at, notificationType === 3 || notificationType === 12 ? eventTimeMillis : null);
      assert.equal((await webhookEvent(server.database, 'google', messageId))?.outcome, 'processed');
    });
  }

  for (const notificationType of [8, 11, 19, 20]) {
    it(`skips subscription notification type ${notificationType}`, async () => {
      const login = await freshUser();
      const purchaseToken = newPurchaseToken();
      await register(login, purchaseToken);
      const response = await notify({ notificationType, purchaseToken });
      assert.deepEqual(response.json(), { status: 'skipped', reason: `unhandled_subscription_notification_type:${notificationType}` });
      assert.equal(await subscriptionRecord(server.database, 'google', purchaseToken), undefined);
    });
  }

  const otherKinds: [string, Record<string, unknown>, string][] = [
    ['testNotification', { testNotification: { version: '1.0' } }, 'test_notification'],
    ['oneTimeProductNotification', { oneTimeProductNotification: { version: '1.0', notificationType: 1, purchaseToken: 'tok', sku: 'coins' } }, 'one_time_product_notification'],
    ['voidedPurchaseNotification', { voidedPurchaseNotification: { purchaseToken: 'tok', orderId: 'GPA.1', productType: 1, refundType: 1 } }, 'voided_purchase_notification'],
    ['an unknown kind', { futureNotification: {} }, 'unhandled_developer_notification'],
  ];
  for (const [label, fields, reason] of otherKinds) {
    it(`skips ${label} as ${reason}`, async () => {
      const messageId = randomUUID();
      const body = pushEnvelope({ version: '1.0', packageName: GOOGLE_PACKAGE_NAME, eventTimeMillis: String(Date.now()), ...fields }, messageId);
      const response = await postGoogle(server.app, body, await bearer());
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json(), { status: 'skipped', reason });
      assert.equal((await webhookEvent(server.database, 'google', messageId))?.reason, reason);
    });
  }

  it('keeps a cancelled subscription entitled until Google reports it expired', async () => {
    const login = await freshUser();
    const purchaseToken = newPurchaseToken();
    await register(login, purchaseToken);
    await notify({ notificationType: 4, purchaseToken, eventTimeMillis: Date.now() - 3000 });
    await notify({ notificationType: 3, purchaseToken, eventTimeMillis: Date.now() - 2000 });
    const { plan: _plan, usage: _usage, ...subscription } = (await check(login)).json();
    assert.deepEqual(subscription, {
      user_id: login.userId, is_subscribed: true, status: 'CANCELED', provider: 'google', plan_id: 'pro_monthly', expires_at: null,
    });
    await notify({ notificationType: 13, purchaseToken, eventTimeMillis: Date.now() - 1000 });
    assert.equal((await check(login)).json().is_subscribed, false);
    assert.equal((await check(login)).json().status, 'EXPIRED');
  });

  it('records the plan the app registered when the notification names none', async () => {
    const login = await freshUser();
    const purchaseToken = newPurchaseToken();
    await register(login, purchaseToken, 'pro_yearly');
    await notify({ notificationType: 4, purchaseToken, subscriptionId: null });
    assert.equal((await subscriptionRecord(server.database, 'google', purchaseToken))?.plan_id, 'pro_yearly');
  });

  it('parks notifications for a token no user registered yet and applies them, in event order, on registration', async () => {
    const purchaseToken = newPurchaseToken();
    const start = Date.now() - 10_000;
    const purchased = randomUUID();
    const canceled = randomUUID();
    // Delivered out of order, before the app registered the purchase.
    const first = await notify({ notificationType: 3, purchaseToken, eventTimeMillis: start + 2000 }, canceled);
    const second = await notify({ notificationType: 4, purchaseToken, eventTimeMillis: start + 1000 }, purchased);
    for (const response of [first, second]) assert.deepEqual(response.json(), { status: 'skipped', reason: 'unknown_user' });
    assert.equal(await subscriptionRecord(server.database, 'google', purchaseToken), undefined);

    const login = await freshUser();
    const registration = await register(login, purchaseToken, 'pro_monthly');
    assert.equal(registration.statusCode, 201);
    const body = registration.json();
    assert.equal(body.user_id, login.userId);
    assert.equal(body.product_id, 'pro_monthly');
    assert.equal(body.subscription.status, 'CANCELED');
    assert.equal(body.subscription.user_id, login.userId);
    const record = await subscriptionRecord(server.database, 'google', purchaseToken);
    assert.equal(record?.status, 'CANCELED');
    assert.equal(record?.last_event_at, start + 2000);
    for (const messageId of [purchased, canceled]) {
      const event = await webhookEvent(server.database, 'google', messageId);
      assert.equal(event?.parked_change, null);
      assert.equal(event?.subscription_id, record?.id);
    }
    // A redelivery of a parked notification is a duplicate, not a second application.
    const redelivered = await notify({ notificationType: 4, purchaseToken, eventTimeMillis: start + 1000 }, purchased);
    assert.deepEqual(redelivered.json(), { status: 'duplicate', subscription_id: record?.id });
  });

  it('lets the same user register a token again (200) and refuses another user (409 PURCHASE_TOKEN_TAKEN)', async () => {
    const owner = await freshUser();
    const purchaseToken = newPurchaseToken();
    assert.equal((await register(owner, purchaseToken)).statusCode, 201);
    await notify({ notificationType: 4, purchaseToken });
    const again = await register(owner, purchaseToken, 'something_else');
    assert.equal(again.statusCode, 200);
    assert.equal(again.json().product_id, 'pro_monthly');
    assert.equal(again.json().subscription.status, 'ACTIVE');
    const intruder = await freshUser();
    const taken = await register(intruder, purchaseToken);
    assert.equal(taken.statusCode, 409);
    assert.equal(taken.json().code, 'PURCHASE_TOKEN_TAKEN');
    assert.equal((await subscriptionRecord(server.database, 'google', purchaseToken))?.user_id, owner.userId);
    assert.equal((await check(intruder)).json().is_subscribed, false);
  });

  it('answers a repeated messageId as duplicate and an older event as stale_event', async () => {
    const login = await freshUser();
    const purchaseToken = newPurchaseToken();
    await register(login, purchaseToken);
    const messageId = randomUUID();
    const first = await notify({ notificationType: 5, purchaseToken, eventTimeMillis: Date.now() - 1000 }, messageId);
    const id = first.json().subscription_id;
    assert.deepEqual((await notify({ notificationType: 5, purchaseToken }, messageId)).json(), { status: 'duplicate', subscription_id: id });
    const stale = await notify({ notificationType: 2, purchaseToken, eventTimeMillis: Date.now() - 60_000 });
    assert.deepEqual(stale.json(), { status: 'skipped', reason: 'stale_event', subscription_id: id });
    assert.equal((await subscriptionRecord(server.database, 'google', purchaseToken))?.status, 'PAST_DUE');
  });

  it('rejects a missing, malformed, expired, foreign or unverified push token with INVALID_SIGNATURE', async () => {
    const body = pushEnvelope(googleDeveloperNotification({ notificationType: 4, purchaseToken: newPurchaseToken() }));
    const now = Date.now();
    const authorizations: (string | undefined)[] = [
      undefined,
      '',
      'Basic dXNlcjpwYXNz',
      'Bearer not.a.jwt',
      await bearer({ issuedAtMs: now - 2 * 3600_000 }),
      await bearer({ claims: { aud: 'https://elsewhere.example/push' } }),
      await bearer({ claims: { iss: 'https://accounts.example.com' } }),
      await bearer({ claims: { email: 'someone-else@trackstack-test.iam.gserviceaccount.com' } }),
      await bearer({ claims: { email_verified: false } }),
      await bearer({ claims: { email_verified: 'true' } }),
      await bearer({ key: providers.strangerKey }),
      await bearer({ key: { ...providers.strangerKey, kid: providers.googleKey.kid } }),
    ];
    for (const authorization of authorizations) await rejected(body, authorization, 'INVALID_SIGNATURE');
    // The token is checked before the body: a bad body with a bad token says nothing about the body.
    await rejected({ message: {} }, undefined, 'INVALID_SIGNATURE');
  });

  it('rejects a malformed envelope or developer notification with INVALID_PAYLOAD', async () => {
    const authorization = await bearer();
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64');
    const valid = googleDeveloperNotification({ notificationType: 4, purchaseToken: newPurchaseToken() });
    const bodies: unknown[] = [
      {},
      { message: {} },
      { message: { messageId: '1' } },
      { message: { data: encode(valid) } },
      { message: { data: encode(valid), messageId: 7 } },
      { message: { data: encode(valid), messageId: 'x'.repeat(300) } },
      { message: { data: 'not base64!', messageId: '1' } },
      { message: { data: Buffer.from('not json').toString('base64'), messageId: '1' } },
      { message: { data: encode([1, 2]), messageId: '1' } },
      pushEnvelope({ ...valid, packageName: 'com.example.other' }),
      pushEnvelope({ ...valid, eventTimeMillis: undefined }),
      pushEnvelope({ ...valid, eventTimeMillis: 'yesterday' }),
      pushEnvelope({ ...valid, subscriptionNotification: { notificationType: 4 } }),
      pushEnvelope({ ...valid, subscriptionNotification: { notificationType: '4', purchaseToken: 'tok' } }),
      pushEnvelope({ ...valid, subscriptionNotification: { notificationType: 4, purchaseToken: 't'.repeat(2000) } }),
      '{"message":',
      '',
    ];
    for (const body of bodies) await rejected(body, authorization, 'INVALID_PAYLOAD');
  });
});
