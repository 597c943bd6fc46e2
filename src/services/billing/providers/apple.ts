import {
  Environment,
  NotificationTypeV2,
  SignedDataVerifier,
  Subtype,
  Type,
  VerificationException,
  VerificationStatus,
} from '@apple/app-store-server-library';
import type { JWSRenewalInfoDecodedPayload, JWSTransactionDecodedPayload } from '@apple/app-store-server-library';
import { dateFromUnixMillis, nonEmptyStringAt } from './json.ts';
import { WebhookError } from './types.ts';
import type { ProviderNotification, SubscriptionStatus } from './types.ts';

export type AppleEnvironment = 'Production' | 'Sandbox' | 'Xcode' | 'LocalTesting';

export interface AppleNotificationParserConfig {
  /** DER-encoded Apple root CA certificates (Apple Root CA - G3 in production). */
  rootCertificates: Buffer[];
  bundleId: string;
  /** Required by the library for Production; Apple omits it in Sandbox. */
  appAppleId?: number;
  /** Xcode and LocalTesting data is unsigned: the library then skips signature checks entirely. */
  environment: AppleEnvironment;
  /** OCSP revocation checks and certificate validity at the current time instead of at signedDate. */
  enableOnlineChecks: boolean;
}

export interface AppleNotificationParser {
  parse(body: unknown): Promise<ProviderNotification>;
}

const LIBRARY_ENVIRONMENTS: Record<AppleEnvironment, Environment> = {
  Production: Environment.PRODUCTION,
  Sandbox: Environment.SANDBOX,
  Xcode: Environment.XCODE,
  LocalTesting: Environment.LOCAL_TESTING,
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function createAppleNotificationParser(config: AppleNotificationParserConfig): AppleNotificationParser {
  const verifier = new SignedDataVerifier(
    config.rootCertificates,
    config.enableOnlineChecks,
    LIBRARY_ENVIRONMENTS[config.environment],
    config.bundleId,
    config.appAppleId,
  );
  return { parse: (body) => parseNotification(verifier, body) };
}

async function parseNotification(verifier: SignedDataVerifier, body: unknown): Promise<ProviderNotification> {
  const signedPayload = nonEmptyStringAt(body, 'signedPayload');
  if (signedPayload === undefined) throw new WebhookError('INVALID_PAYLOAD', 'Apple notification body lacks signedPayload');

  const notification = await verified('signedPayload', () => verifier.verifyAndDecodeNotification(signedPayload));
  const signedTransactionInfo = notification.data?.signedTransactionInfo;
  const signedRenewalInfo = notification.data?.signedRenewalInfo;
  const transaction = signedTransactionInfo === undefined
    ? undefined
    : await verified('signedTransactionInfo', () => verifier.verifyAndDecodeTransaction(signedTransactionInfo));
  const renewalInfo = signedRenewalInfo === undefined
    ? undefined
    : await verified('signedRenewalInfo', () => verifier.verifyAndDecodeRenewalInfo(signedRenewalInfo));

  const { notificationUUID, signedDate, notificationType, subtype } = notification;
  if (notificationUUID === undefined || notificationUUID === '' || signedDate === undefined || notificationType === undefined) {
    throw new WebhookError('INVALID_PAYLOAD', 'Apple notification lacks notificationUUID, signedDate or notificationType');
  }
  const eventTime = new Date(signedDate);
  const base = {
    provider: 'apple' as const,
    idempotencyKey: notificationUUID,
    eventTime,
    providerSubscriptionId: transaction?.originalTransactionId ?? null,
    user: userOf(transaction, renewalInfo),
  };

  const status = statusFor(notificationType, subtype);
  if (status === undefined) {
    const reason = notificationType === NotificationTypeV2.TEST
      ? 'test_notification'
      : `unhandled_notification_type:${notificationType}${subtype === undefined ? '' : `:${subtype}`}`;
    return { ...base, change: { kind: 'skip', reason } };
  }
  if (transaction?.originalTransactionId === undefined) {
    throw new WebhookError('INVALID_PAYLOAD', `Apple ${notificationType} notification lacks a transaction with originalTransactionId`);
  }
  // REFUND and REVOKE also arrive for consumables and one-time purchases, which are not subscriptions.
  if (transaction.type !== undefined && transaction.type !== Type.AUTO_RENEWABLE_SUBSCRIPTION) {
    return { ...base, change: { kind: 'skip', reason: `non_subscription_transaction:${notificationType}:${transaction.type}` } };
  }
  return {
    ...base,
    change: {
      kind: 'apply',
      status,
      planId: transaction.productId ?? null,
      planName: null,
      currentPeriodStart: dateFromUnixMillis(transaction.purchaseDate),
      currentPeriodEnd: dateFromUnixMillis(transaction.expiresDate),
      canceledAt: canceledAtFor(notificationType, subtype, transaction, eventTime),
    },
  };
}

function statusFor(notificationType: string, subtype: string | undefined): SubscriptionStatus | undefined {
  switch (notificationType) {
    case NotificationTypeV2.SUBSCRIBED:
    case NotificationTypeV2.DID_RENEW:
    case NotificationTypeV2.RENEWAL_EXTENDED:
      return 'ACTIVE';
    case NotificationTypeV2.DID_CHANGE_RENEWAL_STATUS:
      if (subtype === Subtype.AUTO_RENEW_ENABLED) return 'ACTIVE';
      if (subtype === Subtype.AUTO_RENEW_DISABLED) return 'CANCELED';
      return undefined;
    case NotificationTypeV2.DID_FAIL_TO_RENEW:
      return subtype === Subtype.GRACE_PERIOD ? 'GRACE_PERIOD' : 'PAST_DUE';
    case NotificationTypeV2.GRACE_PERIOD_EXPIRED:
      return 'PAST_DUE';
    case NotificationTypeV2.EXPIRED:
    case NotificationTypeV2.REFUND:
    case NotificationTypeV2.REVOKE:
      return 'EXPIRED';
    default:
      return undefined;
  }
}

/**
 * Refunds and Family Sharing revocations end access at revocationDate. Turning auto-renew off is recorded at the
 * moment Apple signed the notification, i.e. when the customer asked to cancel (as Stripe's canceled_at does).
 */
function canceledAtFor(
  notificationType: string,
  subtype: string | undefined,
  transaction: JWSTransactionDecodedPayload,
  eventTime: Date,
): Date | null {
  if (notificationType === NotificationTypeV2.REFUND || notificationType === NotificationTypeV2.REVOKE) {
    return dateFromUnixMillis(transaction.revocationDate) ?? eventTime;
  }
  if (notificationType === NotificationTypeV2.DID_CHANGE_RENEWAL_STATUS && subtype === Subtype.AUTO_RENEW_DISABLED) {
    return eventTime;
  }
  return null;
}

function userOf(
  transaction: JWSTransactionDecodedPayload | undefined,
  renewalInfo: JWSRenewalInfoDecodedPayload | undefined,
): ProviderNotification['user'] {
  const token = transaction?.appAccountToken ?? renewalInfo?.appAccountToken;
  // UUIDs compare case-insensitively; store and look them up in one canonical form.
  return token !== undefined && UUID.test(token) ? { appAccountToken: token.toLowerCase() } : {};
}

async function verified<T>(field: string, verify: () => Promise<T>): Promise<T> {
  try {
    return await verify();
  } catch (error) {
    if (!(error instanceof VerificationException)) throw error;
    const status = VerificationStatus[error.status];
    if (error.status === VerificationStatus.RETRYABLE_VERIFICATION_FAILURE) {
      // OCSP could not be reached: not the sender's fault, let Apple retry after a 5xx.
      throw new Error(`Apple ${field} verification could not complete (${status})`, { cause: error });
    }
    throw new WebhookError('INVALID_SIGNATURE', `Apple ${field} rejected: ${status}`, { cause: error });
  }
}
