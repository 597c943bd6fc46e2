import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createAppleNotificationParser } from '../../../../src/services/billing/providers/apple.ts';
import type { AppleNotificationParserConfig } from '../../../../src/services/billing/providers/apple.ts';
import { WebhookError } from '../../../../src/services/billing/providers/types.ts';
import { createAppleTestPki } from './support/apple-pki.ts';
import type { AppleTestPki } from './support/apple-pki.ts';
import { APPLE_APPLIED_NOTIFICATIONS } from './support/apple-mapping.ts';

const BUNDLE_ID = 'com.trackstack.app';
const NOW = new Date();
const SIGNED_DATE = NOW.getTime() - 5_000;
const PURCHASE_DATE = NOW.getTime() - 10 * 24 * 3600_000;
const EXPIRES_DATE = NOW.getTime() + 20 * 24 * 3600_000;
const ORIGINAL_TRANSACTION_ID = '2000000123456789';
const APP_ACCOUNT_TOKEN = '7E3FB20B-4CDB-47CC-936D-99D65F608138';

const apple = createAppleTestPki('Trackstack Test Apple', NOW);
const impostor = createAppleTestPki('Impostor', NOW);

const sandboxConfig: AppleNotificationParserConfig = {
  rootCertificates: [apple.rootCertificate],
  bundleId: BUNDLE_ID,
  environment: 'Sandbox',
  enableOnlineChecks: false,
};
const parser = createAppleNotificationParser(sandboxConfig);

function transaction(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    originalTransactionId: ORIGINAL_TRANSACTION_ID,
    transactionId: '2000000999999999',
    bundleId: BUNDLE_ID,
    productId: 'trackstack.pro.monthly',
    purchaseDate: PURCHASE_DATE,
    originalPurchaseDate: PURCHASE_DATE,
    expiresDate: EXPIRES_DATE,
    type: 'Auto-Renewable Subscription',
    inAppOwnershipType: 'PURCHASED',
    appAccountToken: APP_ACCOUNT_TOKEN,
    environment: 'Sandbox',
    signedDate: SIGNED_DATE,
    ...overrides,
  };
}

function renewalInfo(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    originalTransactionId: ORIGINAL_TRANSACTION_ID,
    productId: 'trackstack.pro.monthly',
    autoRenewProductId: 'trackstack.pro.monthly',
    autoRenewStatus: 1,
    environment: 'Sandbox',
    signedDate: SIGNED_DATE,
    ...overrides,
  };
}

interface NotificationSpec {
  notificationType: string;
  subtype?: string;
  transaction?: Record<string, unknown> | null;
  renewalInfo?: Record<string, unknown> | null;
  data?: Record<string, unknown>;
  payload?: Record<string, unknown>;
  signer?: AppleTestPki;
}

function notificationBody(spec: NotificationSpec): { signedPayload: string } {
  const signer = spec.signer ?? apple;
  const transactionPayload = spec.transaction === undefined ? transaction() : spec.transaction;
  const renewalPayload = spec.renewalInfo === undefined ? renewalInfo() : spec.renewalInfo;
  const data: Record<string, unknown> = { bundleId: BUNDLE_ID, bundleVersion: '42', environment: 'Sandbox', status: 1, ...spec.data };
  if (transactionPayload !== null) data['signedTransactionInfo'] = signer.signJws(transactionPayload);
  if (renewalPayload !== null) data['signedRenewalInfo'] = signer.signJws(renewalPayload);
  return {
    signedPayload: signer.signJws({
      notificationType: spec.notificationType,
      ...(spec.subtype === undefined ? {} : { subtype: spec.subtype }),
      notificationUUID: '002e14d5-51f5-4503-b5a8-c3a1af68eb20',
      version: '2.0',
      signedDate: SIGNED_DATE,
      data,
      ...spec.payload,
    }),
  };
}

async function rejects(body: unknown, code: WebhookError['code'], withParser = parser): Promise<void> {
  await assert.rejects(withParser.parse(body), (error: unknown) => {
    assert.ok(error instanceof WebhookError, `expected WebhookError, got ${String(error)}`);
    assert.equal(error.code, code);
    return true;
  });
}

describe('Apple App Store Server Notifications V2', () => {
  describe('mapping', () => {
    for (const [notificationType, subtype, status] of APPLE_APPLIED_NOTIFICATIONS) {
      it(`${notificationType}${subtype === undefined ? '' : `/${subtype}`} -> ${status}`, async () => {
        const notification = await parser.parse(notificationBody({ notificationType, subtype }));
        assert.equal(notification.change.kind, 'apply');
        assert.equal(notification.change.kind === 'apply' && notification.change.status, status);
      });
    }

    it('fills every field from the notification and its signed transaction', async () => {
      const notification = await parser.parse(notificationBody({ notificationType: 'SUBSCRIBED', subtype: 'INITIAL_BUY' }));
      assert.deepEqual(notification, {
        provider: 'apple',
        idempotencyKey: '002e14d5-51f5-4503-b5a8-c3a1af68eb20',
        eventTime: new Date(SIGNED_DATE),
        providerSubscriptionId: ORIGINAL_TRANSACTION_ID,
        user: { appAccountToken: APP_ACCOUNT_TOKEN.toLowerCase() },
        change: {
          kind: 'apply',
          status: 'ACTIVE',
          planId: 'trackstack.pro.monthly',
          planName: null,
          currentPeriodStart: new Date(PURCHASE_DATE),
          currentPeriodEnd: new Date(EXPIRES_DATE),
          canceledAt: null,
        },
      });
    });

    it('dates a refund or revocation at the revocationDate', async () => {
      const revocationDate = NOW.getTime() - 60_000;
      for (const notificationType of ['REFUND', 'REVOKE']) {
        const notification = await parser.parse(notificationBody({ notificationType, transaction: transaction({ revocationDate, revocationReason: 0 }) }));
        assert.deepEqual(notification.change.kind === 'apply' && notification.change.canceledAt, new Date(revocationDate));
      }
    });

    it('dates turning auto-renew off at the notification signedDate', async () => {
      const notification = await parser.parse(notificationBody({ notificationType: 'DID_CHANGE_RENEWAL_STATUS', subtype: 'AUTO_RENEW_DISABLED' }));
      assert.deepEqual(notification.change.kind === 'apply' && notification.change.canceledAt, new Date(SIGNED_DATE));
    });

    it('takes appAccountToken from the renewal info when the transaction has none, and drops a non-UUID token', async () => {
      const fromRenewal = await parser.parse(notificationBody({
        notificationType: 'DID_RENEW',
        transaction: transaction({ appAccountToken: undefined }),
        renewalInfo: renewalInfo({ appAccountToken: APP_ACCOUNT_TOKEN }),
      }));
      assert.deepEqual(fromRenewal.user, { appAccountToken: APP_ACCOUNT_TOKEN.toLowerCase() });
      const malformed = await parser.parse(notificationBody({ notificationType: 'DID_RENEW', transaction: transaction({ appAccountToken: 'user-42' }) }));
      assert.deepEqual(malformed.user, {});
    });

    it('skips TEST notifications', async () => {
      const notification = await parser.parse(notificationBody({ notificationType: 'TEST', transaction: null, renewalInfo: null }));
      assert.deepEqual(notification.change, { kind: 'skip', reason: 'test_notification' });
      assert.equal(notification.providerSubscriptionId, null);
    });

    const skipped: [string, string | undefined][] = [
      ['DID_CHANGE_RENEWAL_PREF', 'UPGRADE'],
      ['DID_CHANGE_RENEWAL_PREF', 'DOWNGRADE'],
      ['OFFER_REDEEMED', 'INITIAL_BUY'],
      ['PRICE_INCREASE', 'PENDING'],
      ['CONSUMPTION_REQUEST', undefined],
      ['REFUND_DECLINED', undefined],
      ['REFUND_REVERSED', undefined],
      ['ONE_TIME_CHARGE', undefined],
      ['METADATA_UPDATE', undefined],
      ['MIGRATION', undefined],
      ['PRICE_CHANGE', undefined],
      ['DID_CHANGE_RENEWAL_STATUS', 'SOMETHING_NEW'],
    ];
    for (const [notificationType, subtype] of skipped) {
      const reason = `unhandled_notification_type:${notificationType}${subtype === undefined ? '' : `:${subtype}`}`;
      it(`skips ${notificationType}${subtype === undefined ? '' : `/${subtype}`} as ${reason}`, async () => {
        const notification = await parser.parse(notificationBody({ notificationType, subtype }));
        assert.deepEqual(notification.change, { kind: 'skip', reason });
        assert.equal(notification.providerSubscriptionId, ORIGINAL_TRANSACTION_ID);
      });
    }

    it('skips RENEWAL_EXTENSION summaries, which carry a summary instead of data', async () => {
      const summary = { requestIdentifier: 'a1', environment: 'Sandbox', bundleId: BUNDLE_ID, productId: 'trackstack.pro.monthly', succeededCount: 3, failedCount: 0 };
      const body = {
        signedPayload: apple.signJws({ notificationType: 'RENEWAL_EXTENSION', subtype: 'SUMMARY', notificationUUID: 'summary-1', signedDate: SIGNED_DATE, summary }),
      };
      const notification = await parser.parse(body);
      assert.deepEqual(notification.change, { kind: 'skip', reason: 'unhandled_notification_type:RENEWAL_EXTENSION:SUMMARY' });
    });

    it('skips EXTERNAL_PURCHASE_TOKEN notifications', async () => {
      const externalPurchaseToken = { externalPurchaseId: 'SANDBOX_b2f1', tokenCreationDate: SIGNED_DATE, bundleId: BUNDLE_ID };
      const body = {
        signedPayload: apple.signJws({ notificationType: 'EXTERNAL_PURCHASE_TOKEN', subtype: 'UNREPORTED', notificationUUID: 'ext-1', signedDate: SIGNED_DATE, externalPurchaseToken }),
      };
      const notification = await parser.parse(body);
      assert.deepEqual(notification.change, { kind: 'skip', reason: 'unhandled_notification_type:EXTERNAL_PURCHASE_TOKEN:UNREPORTED' });
    });

    it('skips a refund of a purchase that is not an auto-renewable subscription', async () => {
      const notification = await parser.parse(notificationBody({ notificationType: 'REFUND', transaction: transaction({ type: 'Consumable', expiresDate: undefined }) }));
      assert.deepEqual(notification.change, { kind: 'skip', reason: 'non_subscription_transaction:REFUND:Consumable' });
    });
  });

  describe('verification', () => {
    it('rejects a body without signedPayload as INVALID_PAYLOAD', async () => {
      await rejects({}, 'INVALID_PAYLOAD');
      await rejects(null, 'INVALID_PAYLOAD');
      await rejects('signedPayload', 'INVALID_PAYLOAD');
      await rejects({ signedPayload: 42 }, 'INVALID_PAYLOAD');
    });

    it('rejects data signed under a different root', async () => {
      await rejects(notificationBody({ notificationType: 'DID_RENEW', signer: impostor }), 'INVALID_SIGNATURE');
    });

    it('rejects a genuine notification whose nested transaction is signed under a different root', async () => {
      const body = notificationBody({ notificationType: 'DID_RENEW', transaction: null });
      const decoded = JSON.parse(Buffer.from(body.signedPayload.split('.')[1] ?? '', 'base64url').toString()) as Record<string, Record<string, unknown>>;
      const data = { ...decoded['data'], signedTransactionInfo: impostor.signJws(transaction()) };
      await rejects({ signedPayload: apple.signJws({ ...decoded, data }) }, 'INVALID_SIGNATURE');
    });

    it('rejects another app\'s notification and another app\'s transaction', async () => {
      await rejects(notificationBody({ notificationType: 'DID_RENEW', data: { bundleId: 'com.example.other' } }), 'INVALID_SIGNATURE');
      await rejects(notificationBody({ notificationType: 'DID_RENEW', transaction: transaction({ bundleId: 'com.example.other' }) }), 'INVALID_SIGNATURE');
    });

    it('rejects a notification, transaction or renewal info from another environment', async () => {
      await rejects(notificationBody({ notificationType: 'DID_RENEW', data: { environment: 'Production' } }), 'INVALID_SIGNATURE');
      await rejects(notificationBody({ notificationType: 'DID_RENEW', transaction: transaction({ environment: 'Production' }) }), 'INVALID_SIGNATURE');
      await rejects(notificationBody({ notificationType: 'DID_RENEW', renewalInfo: renewalInfo({ environment: 'Production' }) }), 'INVALID_SIGNATURE');
    });

    it('checks appAppleId in Production and requires it in the configuration', async () => {
      const production = createAppleNotificationParser({ ...sandboxConfig, environment: 'Production', appAppleId: 1234567890 });
      const productionBody = (appAppleId: number) => notificationBody({
        notificationType: 'DID_RENEW',
        data: { environment: 'Production', appAppleId },
        transaction: transaction({ environment: 'Production' }),
        renewalInfo: renewalInfo({ environment: 'Production' }),
      });
      const notification = await production.parse(productionBody(1234567890));
      assert.equal(notification.change.kind, 'apply');
      await rejects(productionBody(999), 'INVALID_SIGNATURE', production);
      assert.throws(() => createAppleNotificationParser({ ...sandboxConfig, environment: 'Production' }), /appAppleId/);
    });

    it('rejects a tampered payload and a tampered signature', async () => {
      const [header, payload, signature] = notificationBody({ notificationType: 'DID_RENEW' }).signedPayload.split('.') as [string, string, string];
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
      const forgedPayload = Buffer.from(JSON.stringify({ ...claims, notificationType: 'SUBSCRIBED' })).toString('base64url');
      await rejects({ signedPayload: `${header}.${forgedPayload}.${signature}` }, 'INVALID_SIGNATURE');
      const flipped = Buffer.from(signature, 'base64url');
      flipped[10] = (flipped[10] ?? 0) ^ 0xff;
      await rejects({ signedPayload: `${header}.${payload}.${flipped.toString('base64url')}` }, 'INVALID_SIGNATURE');
      await rejects({ signedPayload: 'not-a-jws' }, 'INVALID_SIGNATURE');
    });

    it('rejects data signed after the signing certificate expired', async () => {
      const afterExpiry = apple.notAfter.getTime() + 24 * 3600_000;
      await rejects(notificationBody({ notificationType: 'DID_RENEW', payload: { signedDate: afterExpiry } }), 'INVALID_SIGNATURE');
    });

    it('rejects a verified notification that cannot be processed as INVALID_PAYLOAD', async () => {
      await rejects(notificationBody({ notificationType: 'DID_RENEW', transaction: null }), 'INVALID_PAYLOAD');
      await rejects(notificationBody({ notificationType: 'DID_RENEW', payload: { notificationUUID: undefined } }), 'INVALID_PAYLOAD');
    });
  });
});
