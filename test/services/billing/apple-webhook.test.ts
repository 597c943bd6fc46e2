import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../support/engines.ts';
import type { TestServer } from '../../support/server.ts';
import { appleNotificationBody, postApple } from './support/providers.ts';
import type { AppleNotificationSpec, BillingTestProviders } from './support/providers.ts';
import { startBillingTestServer, stopBillingTestServer } from './support/server.ts';
import { countRows, subscriptionRecord, webhookEvent } from './support/state.ts';
import { APPLE_APPLIED_NOTIFICATIONS } from './providers/support/apple-mapping.ts';

const DAY_MS = 86_400_000;

describeEachEngine('billing: App Store webhook', (engine) => {
  let providers: BillingTestProviders;
  let server: TestServer;

  before(async () => ({ providers, server } = await startBillingTestServer(engine)));
  after(() => stopBillingTestServer({ providers, server }));

  /** A fresh user and the app_account_token the app would pass to StoreKit. */
  async function customer(): Promise<{ userId: number; appAccountToken: string }> {
    const login = await server.login({ email: `apple-${randomUUID()}@example.com` });
    const response = await server.app.inject({ url: `/api/subscriptions/${login.userId}`, headers: login.authorization });
    return { userId: login.userId, appAccountToken: response.json().app_account_token };
  }

  const newTransactionId = () => String(2_000_000_000_000_000 + Math.floor(Math.random() * 1e12));
  const post = (spec: AppleNotificationSpec) => postApple(server.app, appleNotificationBody(providers.apple, spec));

  async function rejected(body: unknown, code: string, contentType?: string): Promise<void> {
    const before = await countRows(server.database, 'billing_webhook_events');
    const response = await postApple(server.app, body, contentType);
    assert.equal(response.statusCode, 400, response.body);
    assert.equal(response.json().code, code);
    assert.equal(await countRows(server.database, 'billing_webhook_events'), before, 'nothing is stored');
  }
  for (const [notificationType, subtype, status] of APPLE_APPLIED_NOTIFICATIONS) {
    it(`${notificationType}${subtype ? `/${subtype}` : ''} -> ${status}`, async () => {
      const { userId, appAccountToken } = await customer();
      const originalTransactionId = newTransactionId();
      const signedDate = Date.now() - 2000;
      const notificationUUID = randomUUID();
      const response = await post({
        notificationType,
        subtype,
        notificationUUID,
        signedDate,
        originalTransactionId,
        appAccountToken: appAccountToken.toUpperCase(),
        purchaseDate: signedDate - 10 * DAY_MS,
        expiresDate: signedDate + 20 * DAY_MS,
      });
      assert.equal(response.statusCode, 200, response.body);
      const record = await subscriptionRecord(server.database, 'apple', originalTransactionId);
      assert.ok(record);
      assert.deepEqual(response.json(), { status: 'processed', subscription_id: record.id, subscription_status: status });
      assert.equal(record.user_id, userId);
      assert.equal(record.status, status);
      assert.equal(record.plan_id, 'trackstack.pro.monthly');
      assert.equal(record.current_period_start, signedDate - 10 * DAY_MS);
      assert.equal(record.current_period_end, signedDate + 20 * DAY_MS);
      assert.equal(record.last_event_at, signedDate);
      assert.equal((await webhookEvent(server.database, 'apple', notificationUUID))?.subscription_id, record.id);
    });
  }

  const skipped: [string, string | undefined, string][] = [
    ['TEST', undefined, 'test_notification'],
    ['DID_CHANGE_RENEWAL_PREF', 'UPGRADE', 'unhandled_notification_type:DID_CHANGE_RENEWAL_PREF:UPGRADE'],
    ['DID_CHANGE_RENEWAL_PREF', 'DOWNGRADE', 'unhandled_notification_type:DID_CHANGE_RENEWAL_PREF:DOWNGRADE'],
    ['OFFER_REDEEMED', 'INITIAL_BUY', 'unhandled_notification_type:OFFER_REDEEMED:INITIAL_BUY'],
    ['PRICE_INCREASE', 'PENDING', 'unhandled_notification_type:PRICE_INCREASE:PENDING'],
    ['CONSUMPTION_REQUEST', undefined, 'unhandled_notification_type:CONSUMPTION_REQUEST'],
    ['REFUND_DECLINED', undefined, 'unhandled_notification_type:REFUND_DECLINED'],
    ['REFUND_REVERSED', undefined, 'unhandled_notification_type:REFUND_REVERSED'],
    ['RENEWAL_EXTENSION', 'SUMMARY', 'unhandled_notification_type:RENEWAL_EXTENSION:SUMMARY'],
    ['ONE_TIME_CHARGE', undefined, 'unhandled_notification_type:ONE_TIME_CHARGE'],
    ['METADATA_UPDATE', undefined, 'unhandled_notification_type:METADATA_UPDATE'],
    ['MIGRATION', undefined, 'unhandled_notification_type:MIGRATION'],
    ['PRICE_CHANGE', undefined, 'unhandled_notification_type:PRICE_CHANGE'],
    ['RESCIND_CONSENT', undefined, 'unhandled_notification_type:RESCIND_CONSENT'],
    ['DID_CHANGE_RENEWAL_STATUS', 'SOMETHING_NEW', 'unhandled_notification_type:DID_CHANGE_RENEWAL_STATUS:SOMETHING_NEW'],
  ];
  for (const [notificationType, subtype, reason] of skipped) {
    it(`skips ${notificationType}${subtype ? `/${subtype}` : ''} as ${reason}`, async () => {
      const { appAccountToken } = await customer();
      const originalTransactionId = newTransactionId();
      const notificationUUID = randomUUID();
      const isTest = notificationType === 'TEST';
      const response = await post({
        notificationType,
        subtype,
        notificationUUID,
        originalTransactionId,
        appAccountToken,
        ...(isTest ? { transaction: null, renewalInfo: null } : {}),
      });
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(response.json(), { status: 'skipped', reason });
      assert.equal(await subscriptionRecord(server.database, 'apple', originalTransactionId), undefined);
      assert.equal((await webhookEvent(server.database, 'apple', notificationUUID))?.reason, reason);
    });
  }

  it('skips a refund of a purchase that is not a subscription', async () => {
    const { appAccountToken } = await customer();
    const response = await post({ notificationType: 'REFUND', appAccountToken, transaction: { type: 'Consumable', expiresDate: undefined } });
    assert.deepEqual(response.json(), { status: 'skipped', reason: 'non_subscription_transaction:REFUND:Consumable' });
  });

  it('skips a notification whose appAccountToken no user holds, or that carries none, as unknown_user', async () => {
    for (const appAccountToken of [randomUUID(), undefined]) {
      const originalTransactionId = newTransactionId();
      const response = await post({ notificationType: 'SUBSCRIBED', subtype: 'INITIAL_BUY', originalTransactionId, appAccountToken });
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json(), { status: 'skipped', reason: 'unknown_user' });
      assert.equal(await subscriptionRecord(server.database, 'apple', originalTransactionId), undefined);
    }
  });

  it('follows a subscription through the stored record when later notifications carry no appAccountToken', async () => {
    const { userId, appAccountToken } = await customer();
    const originalTransactionId = newTransactionId();
    await post({ notificationType: 'SUBSCRIBED', subtype: 'INITIAL_BUY', originalTransactionId, appAccountToken, signedDate: Date.now() - 5000 });
    const response = await post({ notificationType: 'DID_FAIL_TO_RENEW', subtype: 'GRACE_PERIOD', originalTransactionId });
    assert.equal(response.json().status, 'processed');
    const record = await subscriptionRecord(server.database, 'apple', originalTransactionId);
    assert.equal(record?.user_id, userId);
    assert.equal(record?.status, 'GRACE_PERIOD');
  });

  it('answers a repeated notificationUUID as duplicate and a stale notification as stale_event', async () => {
    const { appAccountToken } = await customer();
    const originalTransactionId = newTransactionId();
    const newer = { notificationType: 'DID_CHANGE_RENEWAL_STATUS', subtype: 'AUTO_RENEW_DISABLED', notificationUUID: randomUUID(), originalTransactionId, appAccountToken, signedDate: Date.now() - 1000 };
    const first = await post(newer);
    assert.equal(first.json().subscription_status, 'CANCELED');
    const id = first.json().subscription_id;
    assert.deepEqual((await post(newer)).json(), { status: 'duplicate', subscription_id: id });
    const older = await post({ notificationType: 'SUBSCRIBED', subtype: 'INITIAL_BUY', originalTransactionId, appAccountToken, signedDate: Date.now() - 60_000 });
    assert.deepEqual(older.json(), { status: 'skipped', reason: 'stale_event', subscription_id: id });
    const record = await subscriptionRecord(server.database, 'apple', originalTransactionId);
    assert.equal(record?.status, 'CANCELED');
    assert.equal(record?.canceled_at, newer.signedDate);
  });

  it('rejects data signed under another root, in whole or in the nested transaction, with INVALID_SIGNATURE', async () => {
    const { appAccountToken } = await customer();
    await rejected(appleNotificationBody(providers.apple, { notificationType: 'DID_RENEW', appAccountToken, signer: providers.impostor }), 'INVALID_SIGNATURE');
    const genuine = appleNotificationBody(providers.apple, { notificationType: 'DID_RENEW', appAccountToken, transaction: null });
    const claims = JSON.parse(Buffer.from(genuine.signedPayload.split('.')[1] ?? '', 'base64url').toString());
    claims.data.signedTransactionInfo = providers.impostor.signJws({ originalTransactionId: '1', bundleId: 'com.trackstack.app', environment: 'Sandbox', type: 'Auto-Renewable Subscription', signedDate: Date.now() });
    await rejected({ signedPayload: providers.apple.signJws(claims) }, 'INVALID_SIGNATURE');
  });

  it('rejects another environment or another app (notification, transaction or renewal info) with INVALID_SIGNATURE', async () => {
    const { appAccountToken } = await customer();
    const specs: AppleNotificationSpec[] = [
      { notificationType: 'DID_RENEW', appAccountToken, data: { environment: 'Production' } },
      { notificationType: 'DID_RENEW', appAccountToken, transaction: { environment: 'Production' } },
      { notificationType: 'DID_RENEW', appAccountToken, renewalInfo: { environment: 'Production' } },
      { notificationType: 'DID_RENEW', appAccountToken, data: { bundleId: 'com.example.other' } },
      { notificationType: 'DID_RENEW', appAccountToken, transaction: { bundleId: 'com.example.other' } },
    ];
    for (const spec of specs) await rejected(appleNotificationBody(providers.apple, spec), 'INVALID_SIGNATURE');
  });

  it('rejects a tampered payload, a forged signature and data signed after the certificate expired', async () => {
    const { appAccountToken } = await customer();
    const [header, payload, signature] = appleNotificationBody(providers.apple, { notificationType: 'EXPIRED', appAccountToken }).signedPayload.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const forged = Buffer.from(JSON.stringify({ ...claims, notificationType: 'DID_RENEW' })).toString('base64url');
    await rejected({ signedPayload: `${header}.${forged}.${signature}` }, 'INVALID_SIGNATURE');
    const flipped = Buffer.from(signature, 'base64url');
    flipped[5] = (flipped[5] ?? 0) ^ 0xff;
    await rejected({ signedPayload: `${header}.${payload}.${flipped.toString('base64url')}` }, 'INVALID_SIGNATURE');
    await rejected({ signedPayload: 'not-a-jws' }, 'INVALID_SIGNATURE');
    const afterExpiry = providers.apple.notAfter.getTime() + DAY_MS;
    await rejected(appleNotificationBody(providers.apple, { notificationType: 'DID_RENEW', appAccountToken, signedDate: afterExpiry }), 'INVALID_SIGNATURE');
  });

  it('rejects a body that is not a signed notification with INVALID_PAYLOAD', async () => {
    await rejected({}, 'INVALID_PAYLOAD');
    await rejected({ signedPayload: 42 }, 'INVALID_PAYLOAD');
    await rejected({ signedPayload: '' }, 'INVALID_PAYLOAD');
    await rejected({ signedPayload: 'x'.repeat(300_000) }, 'INVALID_PAYLOAD');
    await rejected('[1, 2', 'INVALID_PAYLOAD');
    await rejected('', 'INVALID_PAYLOAD');
    await rejected('null', 'INVALID_PAYLOAD');
    await rejected(appleNotificationBody(providers.apple, { notificationType: 'DID_RENEW', transaction: null }), 'INVALID_PAYLOAD');
  });
});
