// Locally signed Stripe, App Store and Google Play webhooks, verified by the real verification code of the server.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SignJWT } from 'jose';
import Stripe from 'stripe';
import type { LightMyRequestResponse } from 'fastify';
import { createAppleTestPki } from '../providers/support/apple-pki.ts';
import type { AppleTestPki } from '../providers/support/apple-pki.ts';
import { createCertificate } from '../../../support/x509.ts';
import type { HttpApp } from '../../../../src/platform/http/app.ts';

export const STRIPE_SECRET = 'whsec_billing_module_test_secret';
export const APPLE_BUNDLE_ID = 'com.trackstack.app';
export const GOOGLE_AUDIENCE = 'https://api.trackstack.test/webhooks/google';
export const GOOGLE_SERVICE_ACCOUNT = 'play-rtdn-push@trackstack-test.iam.gserviceaccount.com';
export const GOOGLE_PACKAGE_NAME = 'com.trackstack.app';

const DAY_MS = 86_400_000;

export interface BillingTestProviders {
  /** Server environment configuring all three providers against the local signers. */
  env: Record<string, string>;
  apple: AppleTestPki;
  /** A chain Apple never issued. */
  impostor: AppleTestPki;
  googleKey: RsaSigningKey;
  /** A key Google's certificate endpoint does not list. */
  strangerKey: RsaSigningKey;
  close(): Promise<void>;
}

export interface RsaSigningKey {
  kid: string;
  privateKey: KeyObject;
  pem: string;
}

/** An RSA key with a self-signed certificate, as Google's certificate endpoint publishes them. */
export function rsaSigningKey(name: string): RsaSigningKey {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const now = Date.now();
  const certificate = createCertificate({
    subject: name,
    subjectPublicKey: publicKey,
    issuer: name,
    issuerPrivateKey: privateKey,
    serialNumber: 1,
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + DAY_MS),
    isCertificateAuthority: false,
  });
  return { kid: `kid-${name}`, privateKey, pem: certificate.toString() };
}

export async function startBillingTestProviders(): Promise<BillingTestProviders> {
  const now = new Date();
  const apple = createAppleTestPki('Billing Test Apple', now);
  const impostor = createAppleTestPki('Billing Test Impostor', now);
  const googleKey = rsaSigningKey('google-current');
  const strangerKey = rsaSigningKey('stranger');
  const directory = mkdtempSync(path.join(tmpdir(), 'billing-test-'));
  const rootFile = path.join(directory, 'apple-root.der');
  writeFileSync(rootFile, apple.rootCertificate);

  const certs = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=3600' });
    response.end(JSON.stringify({ [googleKey.kid]: googleKey.pem }));
  });
  await new Promise<void>((resolve) => certs.listen(0, '127.0.0.1', resolve));
  const certsUrl = `http://127.0.0.1:${(certs.address() as AddressInfo).port}/oauth2/v1/certs`;

  return {
    env: {
      STRIPE_WEBHOOK_SECRET: STRIPE_SECRET,
      APPLE_ROOT_CERTS: rootFile,
      APPLE_BUNDLE_ID,
      APPLE_ENVIRONMENT: 'Sandbox',
      APPLE_ONLINE_CHECKS: 'off',
      GOOGLE_PUBSUB_AUDIENCE: GOOGLE_AUDIENCE,
      GOOGLE_PUBSUB_SERVICE_ACCOUNT: GOOGLE_SERVICE_ACCOUNT,
      GOOGLE_PACKAGE_NAME,
      GOOGLE_CERTS_URL: certsUrl,
    },
    apple,
    impostor,
    googleKey,
    strangerKey,
    async close() {
      await new Promise<void>((resolve) => certs.close(() => resolve()));
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

// Stripe

export interface StripeSubscriptionSpec {
  id: string;
  userId?: number | string;
  status?: string;
  cancelAtPeriodEnd?: boolean;
  periodStart?: number;
  periodEnd?: number;
  priceId?: string;
  /** Period fields on the subscription itself, as API versions before 2025-03-31 sent them. */
  legacy?: boolean;
}

/** An id no Stripe subscription in the suite's database has yet. */
export function newStripeSubscriptionId(): string {
  return `sub_${randomUUID().replaceAll('-', '')}`;
}

export function stripeSubscription(spec: StripeSubscriptionSpec): Record<string, unknown> {
  const periodStart = spec.periodStart ?? Math.floor(Date.now() / 1000) - DAY_MS / 1000;
  const periodEnd = spec.periodEnd ?? periodStart + 30 * 86_400;
  const period = { current_period_start: periodStart, current_period_end: periodEnd };
  const price = { id: spec.priceId ?? 'price_pro_monthly', object: 'price', nickname: 'Pro monthly', product: 'prod_pro' };
  return {
    id: spec.id,
    object: 'subscription',
    status: spec.status ?? 'active',
    cancel_at_period_end: spec.cancelAtPeriodEnd ?? false,
    cancel_at: null,
    canceled_at: null,
    metadata: spec.userId === undefined ? {} : { user_id: String(spec.userId) },
    ...(spec.legacy ? { ...period, plan: { id: price.id, object: 'plan' } } : {}),
    items: { object: 'list', data: [{ id: `si_${spec.id}`, object: 'subscription_item', ...(spec.legacy ? {} : period), price }] },
  };
}

export interface StripeInvoiceSpec {
  subscriptionId: string;
  userId?: number;
  periodStart: number;
  periodEnd: number;
  legacy?: boolean;
}

export function stripeInvoice(spec: StripeInvoiceSpec): Record<string, unknown> {
  const metadata = spec.userId === undefined ? {} : { user_id: String(spec.userId) };
  if (spec.legacy) {
    return {
      id: `in_${randomUUID()}`,
      object: 'invoice',
      subscription: spec.subscriptionId,
      subscription_details: { metadata },
      lines: { object: 'list', data: [{ id: 'il_1', object: 'line_item', type: 'subscription', proration: false, metadata, period: { start: spec.periodStart, end: spec.periodEnd }, price: { id: 'price_legacy', object: 'price' } }] },
    };
  }
  return {
    id: `in_${randomUUID()}`,
    object: 'invoice',
    parent: { type: 'subscription_details', subscription_details: { subscription: spec.subscriptionId, metadata } },
    lines: {
      object: 'list',
      data: [{
        id: 'il_1',
        object: 'line_item',
        metadata: {},
        period: { start: spec.periodStart, end: spec.periodEnd },
        parent: { type: 'subscription_item_details', subscription_item_details: { subscription: spec.subscriptionId, proration: false } },
        pricing: { type: 'price_details', price_details: { price: 'price_pro_monthly', product: 'prod_pro' } },
      }],
    },
  };
}

export function stripeEvent(type: string, object: Record<string, unknown>, options: { id?: string; created?: number } = {}): Record<string, unknown> {
  return {
    id: options.id ?? `evt_${randomUUID().replaceAll('-', '')}`,
    object: 'event',
    api_version: '2025-03-31.basil',
    created: options.created ?? Math.floor(Date.now() / 1000),
    type,
    livemode: false,
    data: { object },
  };
}

export interface StripeDelivery {
  secret?: string;
  timestamp?: number;
  /** Replaces the signed bytes after signing (a tampered body). */
  tamper?: (payload: string) => string;
  signature?: string | null;
  contentType?: string;
}

export function postStripe(app: HttpApp, event: object, delivery: StripeDelivery = {}): Promise<LightMyRequestResponse> {
  const payload = JSON.stringify(event);
  const signature =
    delivery.signature === undefined
      ? Stripe.webhooks.generateTestHeaderString({ payload, secret: delivery.secret ?? STRIPE_SECRET, timestamp: delivery.timestamp ?? Math.floor(Date.now() / 1000) })
      : delivery.signature;
  return app.inject({
    method: 'POST',
    url: '/webhooks/stripe',
    headers: { 'content-type': delivery.contentType ?? 'application/json; charset=utf-8', ...(signature === null ? {} : { 'stripe-signature': signature }) },
    payload: delivery.tamper ? delivery.tamper(payload) : payload,
  });
}

// App Store

export interface AppleNotificationSpec {
  notificationType: string;
  subtype?: string;
  notificationUUID?: string;
  signedDate?: number;
  originalTransactionId?: string;
  appAccountToken?: string;
  productId?: string;
  purchaseDate?: number;
  expiresDate?: number;
  transaction?: Record<string, unknown> | null;
  renewalInfo?: Record<string, unknown> | null;
  data?: Record<string, unknown>;
  signer?: AppleTestPki;
}

export function appleNotificationBody(pki: AppleTestPki, spec: AppleNotificationSpec): { signedPayload: string } {
  const signer = spec.signer ?? pki;
  const signedDate = spec.signedDate ?? Date.now() - 1000;
  const originalTransactionId = spec.originalTransactionId ?? '2000000000000001';
  const transaction =
    spec.transaction === null
      ? null
      : {
          originalTransactionId,
          transactionId: `${originalTransactionId}9`,
          bundleId: APPLE_BUNDLE_ID,
          productId: spec.productId ?? 'trackstack.pro.monthly',
          purchaseDate: spec.purchaseDate ?? signedDate - 10 * DAY_MS,
          originalPurchaseDate: spec.purchaseDate ?? signedDate - 10 * DAY_MS,
          expiresDate: spec.expiresDate ?? signedDate + 20 * DAY_MS,
          type: 'Auto-Renewable Subscription',
          inAppOwnershipType: 'PURCHASED',
          environment: 'Sandbox',
          signedDate,
          ...(spec.appAccountToken === undefined ? {} : { appAccountToken: spec.appAccountToken }),
          ...spec.transaction,
        };
  const renewal =
    spec.renewalInfo === null
      ? null
      : { originalTransactionId, productId: spec.productId ?? 'trackstack.pro.monthly', autoRenewStatus: 1, environment: 'Sandbox', signedDate, ...spec.renewalInfo };
  const data: Record<string, unknown> = { bundleId: APPLE_BUNDLE_ID, bundleVersion: '42', environment: 'Sandbox', status: 1, ...spec.data };
  if (transaction !== null) data['signedTransactionInfo'] = signer.signJws(transaction);
  if (renewal !== null) data['signedRenewalInfo'] = signer.signJws(renewal);
  return {
    signedPayload: signer.signJws({
      notificationType: spec.notificationType,
      ...(spec.subtype === undefined ? {} : { subtype: spec.subtype }),
      notificationUUID: spec.notificationUUID ?? randomUUID(),
      version: '2.0',
      signedDate,
      data,
    }),
  };
}

export function postApple(app: HttpApp, body: unknown, contentType = 'application/json'): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/webhooks/apple',
    headers: { 'content-type': contentType },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

// Google Play

export interface PushTokenSpec {
  claims?: Record<string, unknown>;
  key?: RsaSigningKey;
  issuedAtMs?: number;
}

export async function googleBearer(key: RsaSigningKey, spec: PushTokenSpec = {}): Promise<string> {
  const signingKey = spec.key ?? key;
  const iat = Math.floor((spec.issuedAtMs ?? Date.now()) / 1000);
  const token = await new SignJWT({
    iss: 'https://accounts.google.com',
    aud: GOOGLE_AUDIENCE,
    azp: '113774264463038321964',
    sub: '113774264463038321964',
    email: GOOGLE_SERVICE_ACCOUNT,
    email_verified: true,
    iat,
    exp: iat + 3600,
    ...spec.claims,
  })
    .setProtectedHeader({ alg: 'RS256', kid: signingKey.kid, typ: 'JWT' })
    .sign(signingKey.privateKey);
  return `Bearer ${token}`;
}

export interface GoogleNotificationSpec {
  notificationType: number;
  purchaseToken: string;
  eventTimeMillis?: number;
  subscriptionId?: string | null;
  packageName?: string;
}

export function googleDeveloperNotification(spec: GoogleNotificationSpec): Record<string, unknown> {
  return {
    version: '1.0',
    packageName: spec.packageName ?? GOOGLE_PACKAGE_NAME,
    eventTimeMillis: String(spec.eventTimeMillis ?? Date.now()),
    subscriptionNotification: {
      version: '1.0',
      notificationType: spec.notificationType,
      purchaseToken: spec.purchaseToken,
      ...(spec.subscriptionId === null ? {} : { subscriptionId: spec.subscriptionId ?? 'pro_monthly' }),
    },
  };
}

export function pushEnvelope(developerNotification: unknown, messageId = String(Date.now()) + String(Math.floor(Math.random() * 1e6))): Record<string, unknown> {
  return {
    message: {
      attributes: {},
      data: Buffer.from(JSON.stringify(developerNotification)).toString('base64'),
      messageId,
      message_id: messageId,
      publishTime: new Date().toISOString(),
    },
    subscription: 'projects/trackstack-test/subscriptions/play-rtdn',
  };
}

export function postGoogle(app: HttpApp, body: unknown, authorization: string | undefined, contentType = 'application/json'): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/webhooks/google',
    headers: { 'content-type': contentType, ...(authorization === undefined ? {} : { authorization }) },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}
