// Web Push (RFC 8030) with VAPID (RFC 8292) and aes128gcm payload encryption (RFC 8291), through web-push.
import { createECDH, createHash, ECDH, createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { isIP } from 'node:net';
import path from 'node:path';
import type { JWK } from 'jose';
import webPush from 'web-push';
import { ConfigError, isLoopbackHost } from '../../../config.ts';
import { nextTurn } from '../../../platform/turns.ts';
import type { PushConfig } from '../settings.ts';
import { readOrCreateSecret } from '../../../platform/secrets.ts';
import { AddressGuard } from '../channels/addresses.ts';
import type { HostLookup, PostResult } from '../channels/addresses.ts';
import { DEFAULT_REQUEST_TIMEOUT_MS, refusal, requestSignal } from './outcomes.ts';
import type { PushMessage, PushOutcome, PushSender, PushTarget } from './push-sender.ts';

/** The application server's VAPID identity; `publicKey` is what browsers subscribe with (`applicationServerKey`). */
export interface VapidKeys {
  /** Uncompressed P-256 point, base64url (65 bytes). */
  publicKey: string;
  /** P-256 private scalar, base64url (32 bytes). */
  privateKey: string;
  subject: string;
}

export interface WebPushSenderOptions {
  /** One request's time limit when the caller's signal allows longer. */
  timeoutMs?: number;
  /** NOTIFY_ALLOW_PRIVATE_URLS: endpoints over http, on localhost or at an IP address (local push services in tests). */
  allowPrivateEndpoints?: boolean;
  /** How endpoint hosts resolve (the system's resolver by default). */
  lookup?: HostLookup;
}

/** A push service keeps an undelivered message this long, the same 24 h a delivery is retried for. */
const TTL_SECONDS = 86_400;
const PROVIDER = 'Web Push service';
/**
 * A VAPID token names a push service (its origin) and an expiry, not a message: it is signed once per
 * push service and reused for an hour of the 12 h it is valid (RFC 8292 allows 24 h). Signing it at
 * every send cost more than encrypting the message.
 */
const VAPID_VALID_SECONDS = 12 * 60 * 60;
const VAPID_REUSE_MS = 60 * 60_000;
/** Push services are a handful (FCM, Mozilla, Apple, Microsoft); a bound all the same, as endpoints come from users. */
const VAPID_AUDIENCES = 256;

/** VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY, else a P-256 pair generated into DATA_DIR once. */
export function loadVapidKeys(config: PushConfig['vapid'], dataDir: string): VapidKeys {
  if (config.publicKey && config.privateKey) {
    const ecdh = createECDH('prime256v1');
    try {
      ecdh.setPrivateKey(Buffer.from(config.privateKey, 'base64url'));
    } catch {
      throw new ConfigError('VAPID_PRIVATE_KEY', 'not a P-256 private key');
    }
    if (!ecdh.getPublicKey().equals(Buffer.from(config.publicKey, 'base64url'))) {
      throw new ConfigError('VAPID_PUBLIC_KEY', 'is not the public key of VAPID_PRIVATE_KEY');
    }
    return { publicKey: config.publicKey, privateKey: config.privateKey, subject: config.subject };
  }
  const file = path.join(dataDir, 'vapid-private.pem');
  const pem = readOrCreateSecret(file, () =>
    generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
  );
  let jwk: JWK;
  try {
    jwk = createPrivateKey(pem).export({ format: 'jwk' });
  } catch {
    jwk = {};
  }
  if (jwk.crv !== 'P-256' || !jwk.d) throw new ConfigError('VAPID_PRIVATE_KEY', `unset, and ${file} is not a P-256 private key`);
  const point = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x as string, 'base64url'), Buffer.from(jwk.y as string, 'base64url')]);
  return { publicKey: point.toString('base64url'), privateKey: jwk.d as string, subject: config.subject };
}

/**
 * Why a browser's subscription cannot be used, or undefined when it can: for validating a target at registration.
 * Push services are public https hosts; anything else would let a user aim the server's requests elsewhere.
 */
export function subscriptionProblem(subscription: NonNullable<PushTarget['subscription']>, allowPrivateEndpoints = false): string | undefined {
  let endpoint: URL;
  try {
    endpoint = new URL(subscription.endpoint);
  } catch {
    return 'endpoint is not a URL';
  }
  if (!allowPrivateEndpoints) {
    if (endpoint.protocol !== 'https:') return 'endpoint must be an https URL';
    if (isIP(endpoint.hostname.replace(/^\[|\]$/g, '')) !== 0 || isLoopbackHost(endpoint.hostname) || endpoint.hostname.endsWith('.localhost')) {
      return 'endpoint must name a push service by its host name';
    }
  } else if (endpoint.protocol !== 'https:' && endpoint.protocol !== 'http:') {
    return 'endpoint must be an http(s) URL';
  }
  const p256dh = Buffer.from(subscription.keys.p256dh, 'base64url');
  try {
    // Decoding the point checks that it lies on the curve.
    if (p256dh.length !== 65) throw new Error('not an uncompressed point');
    ECDH.convertKey(p256dh, 'prime256v1');
  } catch {
    return 'keys.p256dh is not a P-256 public key';
  }
  if (Buffer.from(subscription.keys.auth, 'base64url').length !== 16) return 'keys.auth must be 16 bytes';
  return undefined;
}

/**
 * The JSON a service worker receives in its `push` event: `{title, body, url, data, tag?}`, `tag` being the
 * collapse key (show it as the Notification's tag so repeats replace each other).
 */
export function webPushPayload(message: PushMessage): string {
  return JSON.stringify({ title: message.title, body: message.body, url: message.url, data: message.data, tag: message.collapseKey });
}

export class WebPushSender implements PushSender {
  readonly kind = 'webpush' as const;
  readonly #keys: VapidKeys;
  readonly #timeoutMs: number;
  readonly #allowPrivateEndpoints: boolean;
  readonly #guard: AddressGuard;
  /** The `Authorization` header per push service origin, and until when it is reused. */
  readonly #vapidHeaders = new Map<string, { authorization: string; until: number }>();

  constructor(keys: VapidKeys, options: WebPushSenderOptions = {}) {
    this.#keys = keys;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#allowPrivateEndpoints = options.allowPrivateEndpoints ?? false;
    // The endpoint comes from a user's browser: vetted and connected to as a webhook URL is, at every send.
    this.#guard = new AddressGuard({ allowPrivate: this.#allowPrivateEndpoints, lookup: options.lookup });
  }

  /** The `applicationServerKey` the web app subscribes with (base64url). */
  get publicKey(): string {
    return this.#keys.publicKey;
  }

  async send(target: PushTarget, message: PushMessage, signal: AbortSignal): Promise<PushOutcome> {
    const subscription = target.subscription;
    if (!subscription) return { kind: 'final', error: 'webpush target without a subscription' };
    const problem = subscriptionProblem(subscription, this.#allowPrivateEndpoints);
    if (problem) return { kind: 'final', error: `unusable subscription: ${problem}` };
    // Encrypting takes half a millisecond of CPU: in a loop iteration of its own, so requests waiting meanwhile are not held.
    await nextTurn();
    let request: ReturnType<typeof webPush.generateRequestDetails>;
    try {
      request = webPush.generateRequestDetails(subscription, webPushPayload(message), {
        headers: { Authorization: this.#authorization(new URL(subscription.endpoint)) },
        TTL: TTL_SECONDS,
        urgency: 'high',
        ...(message.collapseKey ? { topic: topicOf(message.collapseKey) } : {}),
      });
    } catch (error) {
      return { kind: 'final', error: `cannot encrypt for this subscription: ${(error as Error).message}` };
    }
    const headers = Object.fromEntries(
      Object.entries(request.headers)
        .filter(([name]) => name.toLowerCase() !== 'content-length')
        .map(([name, value]) => [name, String(value)]),
    );
    let result: PostResult;
    try {
      result = await this.#guard.post(request.endpoint, headers, request.body ?? '', requestSignal(signal, this.#timeoutMs));
    } catch {
      // Nothing of the failure is kept: whether a connection was refused, reset or left unanswered would tell the
      // endpoint's owner (the delivery's last error is theirs to read) what listens where.
      return { kind: 'retry', error: `${PROVIDER} unreachable` };
    }
    if (result.kind === 'refused') return { kind: 'final', error: `Web Push endpoint refused: ${result.reason}` };
    // The body is not kept: the endpoint is the user's choice, and the delivery's last error is shown to them.
    if (result.status >= 200 && result.status < 300) return { kind: 'sent' };
    if (result.status === 404 || result.status === 410) return { kind: 'gone', error: `${PROVIDER} answered ${result.status}: subscription expired` };
    return refusal(PROVIDER, result.status, '', result.retryAfter);
  }

  /** `vapid t=<JWT>, k=<public key>` for the endpoint's push service, signed again once its reuse is over. */
  #authorization(endpoint: URL): string {
    // The audience as web-push writes it: scheme and host as the endpoint gives them.
    const audience = `${endpoint.protocol}//${endpoint.host}`;
    const now = Date.now();
    const cached = this.#vapidHeaders.get(audience);
    if (cached && cached.until > now) return cached.authorization;
    if (this.#vapidHeaders.size >= VAPID_AUDIENCES) this.#vapidHeaders.clear();
    const { subject, publicKey, privateKey } = this.#keys;
    const headers = webPush.getVapidHeaders(audience, subject, publicKey, privateKey, 'aes128gcm', Math.floor(now / 1000) + VAPID_VALID_SECONDS);
    const authorization = String(headers.Authorization);
    this.#vapidHeaders.set(audience, { authorization, until: now + VAPID_REUSE_MS });
    return authorization;
  }
}

/** The Topic header allows at most 32 base64url characters, so a collapse key is hashed into one. */
function topicOf(collapseKey: string): string {
  return createHash('sha256').update(collapseKey).digest('base64url').slice(0, 32);
}
