import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { KeyObject } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT } from 'jose';
import { createGoogleNotificationParser } from '../../../../src/services/billing/providers/google.ts';
import type { GoogleNotificationParser } from '../../../../src/services/billing/providers/google.ts';
import { WebhookError } from '../../../../src/services/billing/providers/types.ts';
import type { SubscriptionStatus } from '../../../../src/services/billing/providers/types.ts';
import { pushEnvelope, rsaSigningKey } from '../support/providers.ts';

const AUDIENCE = 'https://api.trackstack.test/billing/google/push';
const SERVICE_ACCOUNT = 'play-rtdn-push@trackstack-test.iam.gserviceaccount.com';
const PACKAGE_NAME = 'com.trackstack.app';
const PURCHASE_TOKEN = 'opaque-purchase-token.AO-J1Ow';
const EVENT_TIME_MS = 1_767_225_600_000;
const MAX_AGE_SECONDS = 3600;

const currentKey = rsaSigningKey('current');
const rotatedKey = rsaSigningKey('rotated');

/** The stand-in for https://www.googleapis.com/oauth2/v1/certs. */
const certsEndpoint = {
  certificates: {} as Record<string, string>,
  cacheControl: `public, max-age=${MAX_AGE_SECONDS}, must-revalidate, no-transform`,
  status: 200,
  fetches: 0,
};
const server = createServer((_request, response) => {
  certsEndpoint.fetches += 1;
  response.writeHead(certsEndpoint.status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': certsEndpoint.cacheControl });
  response.end(JSON.stringify(certsEndpoint.certificates));
});
let certsUrl = '';
let clockMs = Date.now();

before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  certsUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/oauth2/v1/certs`;
});
after(() => new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve()))));
beforeEach(() => {
  certsEndpoint.certificates = { [currentKey.kid]: currentKey.pem };
  certsEndpoint.status = 200;
  certsEndpoint.fetches = 0;
  clockMs = Date.now();
});

function newParser(): GoogleNotificationParser {
  return createGoogleNotificationParser({ audience: AUDIENCE, serviceAccountEmail: SERVICE_ACCOUNT, packageName: PACKAGE_NAME, certsUrl, now: () => clockMs });
}

interface TokenSpec {
  claims?: Record<string, unknown>;
  kid?: string;
  privateKey?: KeyObject;
  alg?: string;
  issuedAtMs?: number;
}

async function bearer(spec: TokenSpec = {}): Promise<string> {
  const iat = Math.floor((spec.issuedAtMs ?? clockMs) / 1000);
  const token = await new SignJWT({
    iss: 'https://accounts.google.com',
    aud: AUDIENCE,
    azp: '113774264463038321964',
    sub: '113774264463038321964',
    email: SERVICE_ACCOUNT,
    email_verified: true,
    iat,
    exp: iat + 3600,
    ...spec.claims,
  })
    .setProtectedHeader({ alg: spec.alg ?? 'RS256', kid: spec.kid ?? currentKey.kid, typ: 'JWT' })
    .sign(spec.privateKey ?? currentKey.privateKey);
  return `Bearer ${token}`;
}

const MESSAGE_ID = '136969346945';

const pushBody = (developerNotification: unknown) => pushEnvelope(developerNotification, MESSAGE_ID);

function subscriptionNotification(notificationType: number, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    version: '1.0',
    packageName: PACKAGE_NAME,
    eventTimeMillis: String(EVENT_TIME_MS),
    subscriptionNotification: { version: '1.0', notificationType, purchaseToken: PURCHASE_TOKEN, subscriptionId: 'pro_monthly', ...fields },
  };
}

async function rejects(parse: Promise<unknown>, code: WebhookError['code']): Promise<void> {
  await assert.rejects(parse, (error: unknown) => {
    assert.ok(error instanceof WebhookError, `expected WebhookError, got ${String(error)}`);
    assert.equal(error.code, code);
    return true;
  });
}

describe('Google Play real-time developer notifications over Pub/Sub push', () => {
  describe('mapping', () => {
    const applied: [number, string, SubscriptionStatus][] = [
      [1, 'RECOVERED', 'ACTIVE'],
      [2, 'RENEWED', 'ACTIVE'],
      [3, 'CANCELED', 'CANCELED'],
      [4, 'PURCHASED', 'ACTIVE'],
      [5, 'ON_HOLD', 'PAST_DUE'],
      [6, 'IN_GRACE_PERIOD', 'GRACE_PERIOD'],
      [7, 'RESTARTED', 'ACTIVE'],
      [9, 'DEFERRED', 'ACTIVE'],
      [10, 'PAUSED', 'PAST_DUE'],
      [12, 'REVOKED', 'EXPIRED'],
      [13, 'EXPIRED', 'EXPIRED'],
    ];
    for (const [notificationType, name, status] of applied) {
      it(`${notificationType} SUBSCRIPTION_${name} -> ${status}`, async () => {
        const notification = await newParser().parse(await bearer(), pushBody(subscriptionNotification(notificationType)));
        assert.equal(notification.change.kind === 'apply' && notification.change.status, status);
      });
    }

    it('fills every field it can; periods stay unknown', async () => {
      const notification = await newParser().parse(await bearer(), pushBody(subscriptionNotification(4)));
      assert.deepEqual(notification, {
        provider: 'google',
        idempotencyKey: MESSAGE_ID,
        eventTime: new Date(EVENT_TIME_MS),
        providerSubscriptionId: PURCHASE_TOKEN,
        user: {},
        change: { kind: 'apply', status: 'ACTIVE', planId: 'pro_monthly', planName: null, currentPeriodStart: null, currentPeriodEnd: null, canceledAt: null },
      });
    });

    it('dates a cancellation or revocation at the event time', async () => {
      const parser = newParser();
      for (const notificationType of [3, 12]) {
        const notification = await parser.parse(await bearer(), pushBody(subscriptionNotification(notificationType)));
        assert.deepEqual(notification.change.kind === 'apply' && notification.change.canceledAt, new Date(EVENT_TIME_MS));
      }
    });

    it('accepts a numeric eventTimeMillis and a notification without subscriptionId', async () => {
      const developerNotification = { ...subscriptionNotification(2, { subscriptionId: undefined }), eventTimeMillis: EVENT_TIME_MS };
      const notification = await newParser().parse(await bearer(), pushBody(developerNotification));
      assert.deepEqual(notification.eventTime, new Date(EVENT_TIME_MS));
      assert.equal(notification.change.kind === 'apply' && notification.change.planId, null);
    });

    for (const notificationType of [8, 11, 19, 20]) {
      it(`skips subscription notification type ${notificationType}`, async () => {
        const notification = await newParser().parse(await bearer(), pushBody(subscriptionNotification(notificationType)));
        assert.deepEqual(notification.change, { kind: 'skip', reason: `unhandled_subscription_notification_type:${notificationType}` });
        assert.equal(notification.providerSubscriptionId, PURCHASE_TOKEN);
      });
    }

    const others: [string, Record<string, unknown>, string][] = [
      ['testNotification', { testNotification: { version: '1.0' } }, 'test_notification'],
      ['oneTimeProductNotification', { oneTimeProductNotification: { version: '1.0', notificationType: 1, purchaseToken: 'tok', sku: 'coins_100' } }, 'one_time_product_notification'],
      ['voidedPurchaseNotification', { voidedPurchaseNotification: { purchaseToken: 'tok', orderId: 'GS.0000-0000', productType: 1, refundType: 1 } }, 'voided_purchase_notification'],
      ['an unknown notification kind', { futureNotification: {} }, 'unhandled_developer_notification'],
    ];
    for (const [label, fields, reason] of others) {
      it(`skips ${label}`, async () => {
        const developerNotification = { version: '1.0', packageName: PACKAGE_NAME, eventTimeMillis: String(EVENT_TIME_MS), ...fields };
        const notification = await newParser().parse(await bearer(), pushBody(developerNotification));
        assert.deepEqual(notification.change, { kind: 'skip', reason });
        assert.equal(notification.providerSubscriptionId, null);
      });
    }
  });

  describe('push token verification', () => {
    const body = pushBody(subscriptionNotification(2));

    it('rejects a push without a Bearer token', async () => {
      const parser = newParser();
      await rejects(parser.parse(undefined, body), 'INVALID_SIGNATURE');
      await rejects(parser.parse('', body), 'INVALID_SIGNATURE');
      await rejects(parser.parse('Basic dXNlcjpwYXNz', body), 'INVALID_SIGNATURE');
      await rejects(parser.parse('Bearer not.a.jwt', body), 'INVALID_SIGNATURE');
    });

    it('rejects an expired token, a token from the future and one issued too long ago', async () => {
      const parser = newParser();
      await rejects(parser.parse(await bearer({ issuedAtMs: clockMs - 3600_000 - 60_000 }), body), 'INVALID_SIGNATURE');
      await rejects(parser.parse(await bearer({ issuedAtMs: clockMs + 120_000 }), body), 'INVALID_SIGNATURE');
      const iat = Math.floor(clockMs / 1000) - 2 * 3600;
      await rejects(parser.parse(await bearer({ claims: { iat, exp: iat + 3 * 3600 } }), body), 'INVALID_SIGNATURE');
    });

    it('tolerates small clock skew', async () => {
      const notification = await newParser().parse(await bearer({ issuedAtMs: clockMs + 10_000 }), body);
      assert.equal(notification.idempotencyKey, MESSAGE_ID);
    });

    it('rejects a token for another audience', async () => {
      await rejects(newParser().parse(await bearer({ claims: { aud: 'https://elsewhere.example/push' } }), body), 'INVALID_SIGNATURE');
    });

    it('rejects a token from another issuer and accepts the bare accounts.google.com issuer', async () => {
      const parser = newParser();
      await rejects(parser.parse(await bearer({ claims: { iss: 'https://evil.example' } }), body), 'INVALID_SIGNATURE');
      const notification = await parser.parse(await bearer({ claims: { iss: 'accounts.google.com' } }), body);
      assert.equal(notification.change.kind, 'apply');
    });

    it('rejects a token for another service account or with an unverified email', async () => {
      const parser = newParser();
      await rejects(parser.parse(await bearer({ claims: { email: 'attacker@other-project.iam.gserviceaccount.com' } }), body), 'INVALID_SIGNATURE');
      await rejects(parser.parse(await bearer({ claims: { email_verified: false } }), body), 'INVALID_SIGNATURE');
      await rejects(parser.parse(await bearer({ claims: { email_verified: 'true' } }), body), 'INVALID_SIGNATURE');
      await rejects(parser.parse(await bearer({ claims: { email: undefined } }), body), 'INVALID_SIGNATURE');
    });

    it('rejects a token signed by a key other than the one its kid names, or with another algorithm', async () => {
      const parser = newParser();
      await rejects(parser.parse(await bearer({ privateKey: rotatedKey.privateKey }), body), 'INVALID_SIGNATURE');
      await rejects(parser.parse(await bearer({ alg: 'RS384' }), body), 'INVALID_SIGNATURE');
    });

    it('rejects a token whose kid is not published', async () => {
      await rejects(newParser().parse(await bearer({ kid: rotatedKey.kid, privateKey: rotatedKey.privateKey }), body), 'INVALID_SIGNATURE');
    });

    it('reports an unreachable certificate endpoint as a server fault, not a bad request', async () => {
      certsEndpoint.status = 503;
      await assert.rejects(newParser().parse(await bearer(), body), (error: unknown) => error instanceof Error && !(error instanceof WebhookError));
    });
  });

  describe('signing key cache', () => {
    const body = pushBody(subscriptionNotification(2));

    it('reuses the certificates until Cache-Control max-age runs out', async () => {
      const parser = newParser();
      await parser.parse(await bearer(), body);
      clockMs += (MAX_AGE_SECONDS - 1) * 1000;
      await parser.parse(await bearer(), body);
      assert.equal(certsEndpoint.fetches, 1);
      clockMs += 2000;
      await parser.parse(await bearer(), body);
      assert.equal(certsEndpoint.fetches, 2);
    });

    it('shares one fetch between concurrent pushes', async () => {
      const parser = newParser();
      const token = await bearer();
      await Promise.all([parser.parse(token, body), parser.parse(token, body), parser.parse(token, body)]);
      assert.equal(certsEndpoint.fetches, 1);
    });

    it('refetches for an unknown kid at most once per minute, which picks up rotated keys', async () => {
      const parser = newParser();
      await parser.parse(await bearer(), body);
      const rotatedToken = async () => bearer({ kid: rotatedKey.kid, privateKey: rotatedKey.privateKey });

      await rejects(parser.parse(await rotatedToken(), body), 'INVALID_SIGNATURE');
      assert.equal(certsEndpoint.fetches, 1, 'no refetch within a minute of the last fetch');

      clockMs += 61_000;
      await rejects(parser.parse(await rotatedToken(), body), 'INVALID_SIGNATURE');
      await rejects(parser.parse(await rotatedToken(), body), 'INVALID_SIGNATURE');
      assert.equal(certsEndpoint.fetches, 2, 'one refetch, then rate-limited again');

      certsEndpoint.certificates = { [currentKey.kid]: currentKey.pem, [rotatedKey.kid]: rotatedKey.pem };
      clockMs += 61_000;
      const notification = await parser.parse(await rotatedToken(), body);
      assert.equal(notification.change.kind, 'apply');
      assert.equal(certsEndpoint.fetches, 3);
    });

    it('caches for a default period when the response carries no max-age', async () => {
      certsEndpoint.cacheControl = 'no-transform';
      try {
        const parser = newParser();
        await parser.parse(await bearer(), body);
        clockMs += 60_000;
        await parser.parse(await bearer(), body);
        assert.equal(certsEndpoint.fetches, 1);
        clockMs += 5 * 60_000;
        await parser.parse(await bearer(), body);
        assert.equal(certsEndpoint.fetches, 2);
      } finally {
        certsEndpoint.cacheControl = `public, max-age=${MAX_AGE_SECONDS}`;
      }
    });
  });

  describe('push body', () => {
    it('rejects a body that is not a push envelope', async () => {
      const parser = newParser();
      for (const body of [null, 'text', {}, { message: {} }, { message: { data: 'e30=' } }, { message: { messageId: '1' } }]) {
        await rejects(parser.parse(await bearer(), body), 'INVALID_PAYLOAD');
      }
    });

    it('rejects data that is not base64, not JSON or not an object', async () => {
      const parser = newParser();
      const withData = (data: string) => ({ message: { data, messageId: '1' } });
      await rejects(parser.parse(await bearer(), withData('%%% not base64 %%%')), 'INVALID_PAYLOAD');
      await rejects(parser.parse(await bearer(), withData(Buffer.from('{"packageName":').toString('base64'))), 'INVALID_PAYLOAD');
      await rejects(parser.parse(await bearer(), withData(Buffer.from('[1,2]').toString('base64'))), 'INVALID_PAYLOAD');
    });

    it('rejects a notification for another package', async () => {
      const developerNotification = { ...subscriptionNotification(2), packageName: 'com.example.other' };
      await rejects(newParser().parse(await bearer(), pushBody(developerNotification)), 'INVALID_PAYLOAD');
    });

    it('rejects a notification without a usable eventTimeMillis, notificationType or purchaseToken', async () => {
      const parser = newParser();
      const malformed = [
        { ...subscriptionNotification(2), eventTimeMillis: undefined },
        { ...subscriptionNotification(2), eventTimeMillis: 'yesterday' },
        subscriptionNotification(2, { purchaseToken: undefined }),
        subscriptionNotification(2, { notificationType: '2' }),
      ];
      for (const developerNotification of malformed) {
        await rejects(parser.parse(await bearer(), pushBody(developerNotification)), 'INVALID_PAYLOAD');
      }
    });

    it('checks the token before looking at the body', async () => {
      await rejects(newParser().parse(undefined, { message: { data: '%%%', messageId: '1' } }), 'INVALID_SIGNATURE');
    });
  });
});
