import { errors, importX509, jwtVerify } from 'jose';
import type { CryptoKey, JWTHeaderParameters } from 'jose';
import { bearerToken } from '../../../platform/http/identity.ts';
import { isRecord, nonEmptyStringAt, recordAt } from './json.ts';
import { WebhookError } from './types.ts';
import type { ProviderNotification, SubscriptionStatus } from './types.ts';

export interface GoogleNotificationParserConfig {
  /** The audience configured on the Pub/Sub push subscription (defaults to the push endpoint URL there). */
  audience: string;
  /** The service account the push subscription signs its OIDC tokens as. */
  serviceAccountEmail: string;
  packageName: string;
  /** JSON map {kid: PEM X.509 certificate}, e.g. https://www.googleapis.com/oauth2/v1/certs */
  certsUrl: string;
  /** Epoch milliseconds; injectable so tests can age tokens and the key cache. */
  now?: () => number;
}

export interface GoogleNotificationParser {
  parse(authorizationHeader: string | undefined, body: unknown): Promise<ProviderNotification>;
}

const GOOGLE_ISSUERS = ['https://accounts.google.com', 'accounts.google.com'];
const CLOCK_TOLERANCE_SECONDS = 30;
/** Google-issued OIDC tokens live one hour; an older iat means a replayed token. */
const MAX_TOKEN_AGE_SECONDS = 3600;
/** An unknown kid may mean Google rotated keys, but refetching for every forged kid would let anyone drive our traffic. */
const UNKNOWN_KID_REFETCH_INTERVAL_MS = 60_000;
/** Used when the certs response carries no max-age. */
const DEFAULT_CERTS_TTL_MS = 5 * 60_000;
const CERTS_FETCH_TIMEOUT_MS = 5_000;

const STATUS_BY_SUBSCRIPTION_NOTIFICATION_TYPE: ReadonlyMap<number, SubscriptionStatus> = new Map([
  [1, 'ACTIVE'], // SUBSCRIPTION_RECOVERED
  [2, 'ACTIVE'], // SUBSCRIPTION_RENEWED
  [3, 'CANCELED'], // SUBSCRIPTION_CANCELED
  [4, 'ACTIVE'], // SUBSCRIPTION_PURCHASED
  [5, 'PAST_DUE'], // SUBSCRIPTION_ON_HOLD
  [6, 'GRACE_PERIOD'], // SUBSCRIPTION_IN_GRACE_PERIOD
  [7, 'ACTIVE'], // SUBSCRIPTION_RESTARTED
  [9, 'ACTIVE'], // SUBSCRIPTION_DEFERRED
  [10, 'PAST_DUE'], // SUBSCRIPTION_PAUSED
  [12, 'EXPIRED'], // SUBSCRIPTION_REVOKED
  [13, 'EXPIRED'], // SUBSCRIPTION_EXPIRED
]);

/** Types whose moment of cancellation is the event itself. */
const CANCELLING_NOTIFICATION_TYPES: ReadonlySet<number> = new Set([3, 12]);

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function createGoogleNotificationParser(config: GoogleNotificationParserConfig): GoogleNotificationParser {
  const now = config.now ?? Date.now;
  const keys = new CertificateKeyCache(config.certsUrl, now);
  return {
    async parse(authorizationHeader, body) {
      await verifyPushToken(authorizationHeader, config, keys, now);
      return mapPushBody(body, config.packageName);
    },
  };
}

async function verifyPushToken(
  authorizationHeader: string | undefined,
  config: GoogleNotificationParserConfig,
  keys: CertificateKeyCache,
  now: () => number,
): Promise<void> {
  const token = bearerToken(authorizationHeader);
  if (token === undefined) throw new WebhookError('INVALID_SIGNATURE', 'Pub/Sub push lacks a Bearer token');
  let claims: Record<string, unknown>;
  try {
    ({ payload: claims } = await jwtVerify(token, (header: JWTHeaderParameters) => keyFor(header, keys), {
      algorithms: ['RS256'],
      issuer: GOOGLE_ISSUERS,
      audience: config.audience,
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      maxTokenAge: MAX_TOKEN_AGE_SECONDS,
      requiredClaims: ['exp'],
      currentDate: new Date(now()),
    }));
  } catch (error) {
    if (error instanceof errors.JOSEError) {
      throw new WebhookError('INVALID_SIGNATURE', `Pub/Sub push token rejected: ${error.code}`, { cause: error });
    }
    // WebhookError from the key lookup, or a failure to fetch the certificates (a 5xx: our side, retried).
    throw error;
  }
  // Any Google service account can mint a token for our audience; only ours may push.
  if (claims['email'] !== config.serviceAccountEmail || claims['email_verified'] !== true) {
    throw new WebhookError('INVALID_SIGNATURE', 'Pub/Sub push token was not issued to the configured service account');
  }
}

async function keyFor(header: JWTHeaderParameters, keys: CertificateKeyCache): Promise<CryptoKey> {
  if (header.kid === undefined) throw new WebhookError('INVALID_SIGNATURE', 'Pub/Sub push token has no kid');
  const key = await keys.keyFor(header.kid);
  if (key === undefined) throw new WebhookError('INVALID_SIGNATURE', `Pub/Sub push token signed with unknown kid ${header.kid}`);
  return key;
}

function mapPushBody(body: unknown, packageName: string): ProviderNotification {
  const message = recordAt(body, 'message');
  const messageId = nonEmptyStringAt(message, 'messageId');
  const data = nonEmptyStringAt(message, 'data');
  if (messageId === undefined || data === undefined) {
    throw new WebhookError('INVALID_PAYLOAD', 'Pub/Sub push body lacks message.data or message.messageId');
  }
  const notification = decodeDeveloperNotification(data);
  if (notification['packageName'] !== packageName) {
    throw new WebhookError('INVALID_PAYLOAD', 'Developer notification is for another package');
  }
  const eventTime = eventTimeOf(notification['eventTimeMillis']);
  const base = { provider: 'google' as const, idempotencyKey: messageId, eventTime, user: {} };

  const subscription = recordAt(notification, 'subscriptionNotification');
  if (subscription === undefined) {
    return { ...base, providerSubscriptionId: null, change: { kind: 'skip', reason: otherNotificationReason(notification) } };
  }
  const notificationType = subscription['notificationType'];
  const purchaseToken = nonEmptyStringAt(subscription, 'purchaseToken');
  if (typeof notificationType !== 'number' || !Number.isInteger(notificationType) || purchaseToken === undefined) {
    throw new WebhookError('INVALID_PAYLOAD', 'Subscription notification lacks notificationType or purchaseToken');
  }
  const status = STATUS_BY_SUBSCRIPTION_NOTIFICATION_TYPE.get(notificationType);
  if (status === undefined) {
    return {
      ...base,
      providerSubscriptionId: purchaseToken,
      change: { kind: 'skip', reason: `unhandled_subscription_notification_type:${notificationType}` },
    };
  }
  return {
    ...base,
    providerSubscriptionId: purchaseToken,
    change: {
      kind: 'apply',
      status,
      // Newer notification versions drop subscriptionId; the purchase itself then has to be read from the Play API.
      planId: nonEmptyStringAt(subscription, 'subscriptionId') ?? null,
      planName: null,
      currentPeriodStart: null,
      currentPeriodEnd: null,
      canceledAt: CANCELLING_NOTIFICATION_TYPES.has(notificationType) ? eventTime : null,
    },
  };
}

function decodeDeveloperNotification(data: string): Record<string, unknown> {
  // Buffer's decoder silently drops characters outside the alphabet, so check the shape first.
  if (!BASE64.test(data)) throw new WebhookError('INVALID_PAYLOAD', 'Pub/Sub message.data is not base64');
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(data, 'base64').toString('utf8'));
  } catch (error) {
    throw new WebhookError('INVALID_PAYLOAD', 'Pub/Sub message.data is not JSON', { cause: error });
  }
  if (!isRecord(decoded)) throw new WebhookError('INVALID_PAYLOAD', 'Developer notification is not an object');
  return decoded;
}

/** eventTimeMillis is an int64, which Google's JSON encodes as a string; accept a number too. */
function eventTimeOf(eventTimeMillis: unknown): Date {
  const millis = typeof eventTimeMillis === 'string' && /^[0-9]+$/.test(eventTimeMillis) ? Number(eventTimeMillis) : eventTimeMillis;
  if (typeof millis !== 'number' || !Number.isSafeInteger(millis) || millis <= 0) {
    throw new WebhookError('INVALID_PAYLOAD', 'Developer notification lacks a valid eventTimeMillis');
  }
  return new Date(millis);
}

function otherNotificationReason(notification: Record<string, unknown>): string {
  if (isRecord(notification['testNotification'])) return 'test_notification';
  if (isRecord(notification['oneTimeProductNotification'])) return 'one_time_product_notification';
  if (isRecord(notification['voidedPurchaseNotification'])) return 'voided_purchase_notification';
  return 'unhandled_developer_notification';
}

/** Google's signing certificates keyed by kid, cached per Cache-Control max-age. */
class CertificateKeyCache {
  readonly #certsUrl: string;
  readonly #now: () => number;
  #keys = new Map<string, CryptoKey>();
  #expiresAt = 0;
  #lastFetchStartedAt = Number.NEGATIVE_INFINITY;
  #inFlight: Promise<void> | undefined;

  constructor(certsUrl: string, now: () => number) {
    this.#certsUrl = certsUrl;
    this.#now = now;
  }

  async keyFor(kid: string): Promise<CryptoKey | undefined> {
    const now = this.#now();
    const expired = now >= this.#expiresAt;
    const mayRefetchForUnknownKid = !this.#keys.has(kid) && now - this.#lastFetchStartedAt >= UNKNOWN_KID_REFETCH_INTERVAL_MS;
    if (expired || mayRefetchForUnknownKid) await this.#refresh();
    return this.#keys.get(kid);
  }

  #refresh(): Promise<void> {
    // Concurrent pushes share one fetch.
    this.#inFlight ??= this.#fetchKeys().finally(() => {
      this.#inFlight = undefined;
    });
    return this.#inFlight;
  }

  async #fetchKeys(): Promise<void> {
    this.#lastFetchStartedAt = this.#now();
    const response = await fetch(this.#certsUrl, { signal: AbortSignal.timeout(CERTS_FETCH_TIMEOUT_MS) });
    if (!response.ok) throw new Error(`Fetching Google signing certificates failed: HTTP ${response.status}`);
    const certificates: unknown = await response.json();
    if (!isRecord(certificates)) throw new Error('Google signing certificates response is not a JSON object');
    const keys = new Map<string, CryptoKey>();
    for (const [kid, pem] of Object.entries(certificates)) {
      if (typeof pem !== 'string') throw new Error(`Google signing certificate ${kid} is not a PEM string`);
      keys.set(kid, await importX509(pem, 'RS256'));
    }
    this.#keys = keys;
    this.#expiresAt = this.#now() + ttlFromCacheControl(response.headers.get('cache-control'));
  }
}

function ttlFromCacheControl(cacheControl: string | null): number {
  const maxAge = /(?:^|,)\s*max-age\s*=\s*"?(\d+)"?/i.exec(cacheControl ?? '')?.[1];
  return maxAge === undefined ? DEFAULT_CERTS_TTL_MS : Number(maxAge) * 1000;
}
