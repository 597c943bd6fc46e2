// Apple Push Notification service over one HTTP/2 connection, with token-based authentication: an ES256 JWT
// (kid = the key's id, iss = the team, iat) signed with the .p8 key through jose.
import { createHash, createPrivateKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import http2 from 'node:http2';
import type { ClientHttp2Session, IncomingHttpHeaders } from 'node:http2';
import { SignJWT } from 'jose';
import { ConfigError } from '../../../config.ts';
import type { PushConfig } from '../settings.ts';
import { DEFAULT_REQUEST_TIMEOUT_MS, refusal, requestSignal, unreachable } from './outcomes.ts';
import type { PushMessage, PushOutcome, PushSender, PushTarget } from './push-sender.ts';

/**
 * Apple refuses provider tokens older than an hour and answers TooManyProviderTokenUpdates to a new one
 * more often than every 20 minutes, so one token serves 50 minutes.
 */
const PROVIDER_TOKEN_LIFETIME_MS = 50 * 60_000;
/** APNs keeps an undelivered notification this long, the same 24 h a delivery is retried for. */
const EXPIRATION_S = 86_400;
const MAX_COLLAPSE_ID_BYTES = 64;
const MAX_REASON_BYTES = 4096;
const PROVIDER = 'APNs';

export interface ApnsSenderOptions {
  /** Certificate authorities trusted for APNS_URL instead of the system's (a local APNs in tests). */
  ca?: string | Buffer;
  /** One request's time limit when the caller's signal allows longer. */
  timeoutMs?: number;
  /** The clock of provider token ages (ms since the epoch); tests move it forward. */
  now?: () => number;
}

interface ApnsCredentials {
  key: KeyObject;
  keyId: string;
  teamId: string;
  topic: string;
}

/** The APNs sender when APNS_KEY (with its id, team and topic) is set, else undefined (the channel is not offered). */
export function createApnsSender(config: PushConfig['apns'], options: ApnsSenderOptions = {}): ApnsSender | undefined {
  if (!config.keyPem || !config.keyId || !config.teamId || !config.topic) return undefined;
  let key: KeyObject;
  try {
    key = createPrivateKey(config.keyPem);
  } catch {
    throw new ConfigError('APNS_KEY', 'not a readable private key');
  }
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new ConfigError('APNS_KEY', 'must be the P-256 (ES256) key from Apple (.p8)');
  }
  return new ApnsSender({ key, keyId: config.keyId, teamId: config.teamId, topic: config.topic }, config.url, options);
}

interface ApnsResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export class ApnsSender implements PushSender {
  readonly kind = 'apns' as const;
  readonly #credentials: ApnsCredentials;
  readonly #origin: string;
  readonly #ca: string | Buffer | undefined;
  readonly #timeoutMs: number;
  readonly #now: () => number;
  #session: ClientHttp2Session | undefined;
  #providerToken: { jwt: string; issuedAt: number } | undefined;
  #signing: Promise<string> | undefined;
  #inFlight = 0;

  constructor(credentials: ApnsCredentials, origin: string, options: ApnsSenderOptions = {}) {
    this.#credentials = credentials;
    this.#origin = origin;
    this.#ca = options.ca;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#now = options.now ?? Date.now;
  }

  async send(target: PushTarget, message: PushMessage, signal: AbortSignal): Promise<PushOutcome> {
    if (!target.token) return { kind: 'final', error: 'apns target without a token' };
    const body = JSON.stringify(apnsPayload(message));
    for (let attempt = 1; ; attempt += 1) {
      const jwt = await this.#token();
      let response: ApnsResponse;
      try {
        response = await this.#post(target.token, jwt, message, body, requestSignal(signal, this.#timeoutMs));
      } catch (error) {
        return unreachable(PROVIDER, error);
      }
      if (response.status === 200) return { kind: 'sent' };
      const reason = apnsReason(response.body);
      // Apple expired the provider token before our 50 minutes were up (a clock apart): a new one, one more try.
      if (response.status === 403 && reason === 'ExpiredProviderToken' && attempt === 1) {
        if (this.#providerToken?.jwt === jwt) this.#providerToken = undefined;
        continue;
      }
      if (response.status === 410 || (response.status === 400 && (reason === 'BadDeviceToken' || reason === 'DeviceTokenNotForTopic'))) {
        return { kind: 'gone', error: `${PROVIDER} answered ${response.status}: ${reason}` };
      }
      const retryAfter = response.headers['retry-after'];
      return refusal(PROVIDER, response.status, reason, typeof retryAfter === 'string' ? retryAfter : undefined);
    }
  }

  /** Closes the connection; a later send opens a new one. */
  async close(): Promise<void> {
    const session = this.#session;
    this.#session = undefined;
    if (session && !session.closed) await new Promise<void>((resolve) => session.close(() => resolve()));
  }

  /** The provider token, signed anew once it is 50 minutes old, by one signer at a time. */
  #token(): Promise<string> {
    const current = this.#providerToken;
    if (current && this.#now() - current.issuedAt < PROVIDER_TOKEN_LIFETIME_MS) return Promise.resolve(current.jwt);
    this.#signing ??= this.#sign().finally(() => {
      this.#signing = undefined;
    });
    return this.#signing;
  }

  async #sign(): Promise<string> {
    const issuedAt = this.#now();
    const jwt = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: this.#credentials.keyId })
      .setIssuer(this.#credentials.teamId)
      .setIssuedAt(Math.floor(issuedAt / 1000))
      .sign(this.#credentials.key);
    this.#providerToken = { jwt, issuedAt };
    return jwt;
  }

  /** The open HTTP/2 session, or a new one when APNs (or the network) closed the last. */
  #connection(): ClientHttp2Session {
    const open = this.#session;
    if (open && !open.closed && !open.destroyed) return open;
    const session = http2.connect(this.#origin, this.#ca ? { ca: this.#ca } : {});
    const forget = () => {
      if (this.#session === session) this.#session = undefined;
    };
    // A failed session fails its streams, which report the error; the session itself is only forgotten.
    session.on('error', forget);
    session.on('goaway', forget);
    session.on('close', forget);
    // An idle connection does not keep the process alive; one with requests in flight does (see #post).
    session.unref();
    this.#session = session;
    return session;
  }

  #post(deviceToken: string, jwt: string, message: PushMessage, body: string, signal: AbortSignal): Promise<ApnsResponse> {
    const { topic } = this.#credentials;
    const headers: http2.OutgoingHttpHeaders = {
      ':method': 'POST',
      ':path': `/3/device/${encodeURIComponent(deviceToken)}`,
      authorization: `bearer ${jwt}`,
      'apns-topic': topic,
      'apns-push-type': 'alert',
      'apns-priority': '10',
      'apns-expiration': String(Math.floor(this.#now() / 1000) + EXPIRATION_S),
      'content-type': 'application/json',
      ...(message.collapseKey ? { 'apns-collapse-id': collapseId(message.collapseKey) } : {}),
    };
    const session = this.#connection();
    this.#inFlight += 1;
    session.ref();
    return new Promise<ApnsResponse>((resolve, reject) => {
      const stream = session.request(headers, { signal });
      let status = 0;
      let responseHeaders: IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      let length = 0;
      stream.on('response', (received) => {
        status = Number(received[':status']);
        responseHeaders = received;
      });
      stream.on('data', (chunk: Buffer) => {
        if (length < MAX_REASON_BYTES) chunks.push(chunk);
        length += chunk.length;
      });
      stream.on('end', () => resolve({ status, headers: responseHeaders, body: Buffer.concat(chunks).toString('utf8') }));
      stream.on('error', reject);
      // A stream reset before the answer ended (settles nothing once 'end' resolved).
      stream.on('close', () => reject(new Error(`stream closed before the answer (HTTP/2 code ${stream.rstCode})`)));
      stream.end(body);
    }).finally(() => {
      this.#inFlight -= 1;
      if (this.#inFlight === 0) session.unref();
    });
  }
}

/** The notification as iOS shows it, the click URL and the data beside `aps` for the app. */
function apnsPayload(message: PushMessage) {
  return {
    aps: {
      alert: { title: message.title, body: message.body },
      sound: 'default',
      ...(message.collapseKey ? { 'thread-id': message.collapseKey } : {}),
    },
    url: message.url,
    data: message.data,
  };
}

/** apns-collapse-id allows 64 bytes; a longer key is replaced by its hash. */
function collapseId(collapseKey: string): string {
  return Buffer.byteLength(collapseKey) <= MAX_COLLAPSE_ID_BYTES ? collapseKey : createHash('sha256').update(collapseKey).digest('base64url');
}

function apnsReason(body: string): string {
  try {
    const reason = (JSON.parse(body) as { reason?: unknown }).reason;
    return typeof reason === 'string' ? reason : body;
  } catch {
    return body;
  }
}
