// Firebase Cloud Messaging HTTP v1, authenticated with an OAuth access token obtained from the service account's
// own token_uri through the JWT-bearer grant (RFC 7523), the assertion signed RS256 with jose.
import { createPrivateKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import { ConfigError, isLoopbackHost } from '../../../config.ts';
import type { PushConfig } from '../settings.ts';
import { boundedText, DEFAULT_REQUEST_TIMEOUT_MS, refusal, requestSignal, unreachable } from './outcomes.ts';
import type { PushMessage, PushOutcome, PushSender, PushTarget } from './push-sender.ts';

const FCM_SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';
const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const DEFAULT_TOKEN_URI = 'https://oauth2.googleapis.com/token';
/** Google accepts assertions valid for at most an hour. */
const ASSERTION_LIFETIME_S = 3600;
/** An access token is replaced this long before it expires, so no request carries one that expires in flight. */
const REFRESH_MARGIN_MS = 5 * 60_000;
const PROVIDER = 'FCM';
const TOKEN_PROVIDER = 'FCM token endpoint';

export interface ServiceAccount {
  projectId: string;
  clientEmail: string;
  privateKey: KeyObject;
  privateKeyId: string | undefined;
  tokenUri: string;
}

export interface FcmSenderOptions {
  /** One request's time limit when the caller's signal allows longer. */
  timeoutMs?: number;
  /** The clock of token ages (ms since the epoch); tests move it forward. */
  now?: () => number;
}

/** Reads FCM_SERVICE_ACCOUNT (the JSON Firebase's console downloads); every problem is a ConfigError at start. */
export function parseServiceAccount(text: string): ServiceAccount {
  const problem = (message: string) => new ConfigError('FCM_SERVICE_ACCOUNT', message);
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw problem('not valid JSON');
  }
  const field = (name: string): string => {
    const value = json[name];
    if (typeof value !== 'string' || value === '') throw problem(`missing ${name}`);
    return value;
  };
  const projectId = field('project_id');
  const clientEmail = field('client_email');
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(field('private_key'));
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw problem('private_key is not a readable private key');
  }
  if (privateKey.asymmetricKeyType !== 'rsa') throw problem('private_key must be an RSA key');
  const tokenUri = typeof json.token_uri === 'string' ? json.token_uri : DEFAULT_TOKEN_URI;
  let url: URL;
  try {
    url = new URL(tokenUri);
  } catch {
    throw problem(`token_uri is not a URL: '${tokenUri}'`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    throw problem(`token_uri must be https (http only for localhost), got '${tokenUri}'`);
  }
  const privateKeyId = typeof json.private_key_id === 'string' ? json.private_key_id : undefined;
  return { projectId, clientEmail, privateKey, privateKeyId, tokenUri };
}

/** The FCM sender when FCM_SERVICE_ACCOUNT is set, else undefined (the channel is not offered). */
export function createFcmSender(config: PushConfig['fcm'], options: FcmSenderOptions = {}): FcmSender | undefined {
  return config.serviceAccount ? new FcmSender(parseServiceAccount(config.serviceAccount), config.url, options) : undefined;
}

/** A token request that failed, with the outcome the delivery gets. */
class TokenFailure extends Error {
  readonly outcome: PushOutcome;
  constructor(outcome: PushOutcome) {
    super(outcome.kind === 'sent' ? '' : outcome.error);
    this.outcome = outcome;
  }
}

/** The cached access token, refreshed shortly before it expires, by one request at a time. */
class AccessTokens {
  readonly #account: ServiceAccount;
  readonly #timeoutMs: number;
  readonly #now: () => number;
  #current: { token: string; refreshAt: number } | undefined;
  #pending: Promise<string> | undefined;

  constructor(account: ServiceAccount, timeoutMs: number, now: () => number) {
    this.#account = account;
    this.#timeoutMs = timeoutMs;
    this.#now = now;
  }

  get(): Promise<string> {
    if (this.#current && this.#now() < this.#current.refreshAt) return Promise.resolve(this.#current.token);
    this.#pending ??= this.#fetch().finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  /** Drops `token` when FCM refused it, unless a newer one already replaced it. */
  invalidate(token: string): void {
    if (this.#current?.token === token) this.#current = undefined;
  }

  async #fetch(): Promise<string> {
    const account = this.#account;
    const issuedAt = Math.floor(this.#now() / 1000);
    const assertion = await new SignJWT({ scope: FCM_SCOPE })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...(account.privateKeyId ? { kid: account.privateKeyId } : {}) })
      .setIssuer(account.clientEmail)
      .setAudience(account.tokenUri)
      .setIssuedAt(issuedAt)
      .setExpirationTime(issuedAt + ASSERTION_LIFETIME_S)
      .sign(account.privateKey);
    let response: Response;
    try {
      response = await fetch(account.tokenUri, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: JWT_BEARER_GRANT, assertion }).toString(),
        redirect: 'manual',
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (error) {
      throw new TokenFailure(unreachable(TOKEN_PROVIDER, error));
    }
    const text = await boundedText(response);
    if (!response.ok) throw new TokenFailure(refusal(TOKEN_PROVIDER, response.status, oauthReason(text), response.headers.get('retry-after')));
    let grant: { access_token?: unknown; expires_in?: unknown };
    try {
      grant = JSON.parse(text) as typeof grant;
    } catch {
      grant = {};
    }
    if (typeof grant.access_token !== 'string' || typeof grant.expires_in !== 'number' || grant.expires_in <= 0) {
      throw new TokenFailure({ kind: 'retry', error: `${TOKEN_PROVIDER} answered without an access token` });
    }
    const lifetimeMs = grant.expires_in * 1000;
    this.#current = { token: grant.access_token, refreshAt: this.#now() + Math.max(lifetimeMs - REFRESH_MARGIN_MS, lifetimeMs / 2) };
    return grant.access_token;
  }
}

export class FcmSender implements PushSender {
  readonly kind = 'fcm' as const;
  readonly #sendUrl: string;
  readonly #tokens: AccessTokens;
  readonly #timeoutMs: number;

  constructor(account: ServiceAccount, origin: string, options: FcmSenderOptions = {}) {
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#sendUrl = `${origin}/v1/projects/${encodeURIComponent(account.projectId)}/messages:send`;
    this.#tokens = new AccessTokens(account, this.#timeoutMs, options.now ?? Date.now);
  }

  async send(target: PushTarget, message: PushMessage, signal: AbortSignal): Promise<PushOutcome> {
    if (!target.token) return { kind: 'final', error: 'fcm target without a token' };
    const body = JSON.stringify(fcmMessage(target.token, message));
    for (let attempt = 1; ; attempt += 1) {
      let accessToken: string;
      try {
        accessToken = await this.#tokens.get();
      } catch (error) {
        if (error instanceof TokenFailure) return error.outcome;
        throw error;
      }
      let response: Response;
      try {
        response = await fetch(this.#sendUrl, {
          method: 'POST',
          headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
          body,
          redirect: 'manual',
          signal: requestSignal(signal, this.#timeoutMs),
        });
      } catch (error) {
        return unreachable(PROVIDER, error);
      }
      const text = await boundedText(response);
      if (response.ok) return { kind: 'sent' };
      // An access token revoked or expired early: one fresh token, one more try.
      if (response.status === 401 && attempt === 1) {
        this.#tokens.invalidate(accessToken);
        continue;
      }
      return fcmRefusal(response.status, text, response.headers.get('retry-after'));
    }
  }
}

/** The HTTP v1 message: a notification, the data (with the click URL), and Android's collapse key. */
function fcmMessage(token: string, message: PushMessage) {
  return {
    message: {
      token,
      notification: { title: message.title, body: message.body },
      data: { ...message.data, url: message.url },
      android: { priority: 'high', ...(message.collapseKey ? { collapse_key: message.collapseKey } : {}) },
    },
  };
}

interface FcmErrorBody {
  error?: {
    status?: string;
    message?: string;
    details?: { '@type'?: string; errorCode?: string; fieldViolations?: { field?: string }[] }[];
  };
}

/**
 * FCM's refusals: UNREGISTERED (the app is gone from the device), INVALID_ARGUMENT on message.token (never a valid
 * token) and SENDER_ID_MISMATCH (a token of another Firebase project) mean the target is gone for good.
 */
function fcmRefusal(status: number, text: string, retryAfter: string | null): PushOutcome {
  let body: FcmErrorBody = {};
  try {
    body = JSON.parse(text) as FcmErrorBody;
  } catch {
    // Not Google's JSON (a proxy's page): the status alone decides.
  }
  const details = body.error?.details ?? [];
  const errorCode = details.find((detail) => detail.errorCode)?.errorCode ?? body.error?.status ?? '';
  const badToken = details.some((detail) => detail.fieldViolations?.some((violation) => violation.field === 'message.token'));
  const reason = [errorCode, body.error?.message].filter(Boolean).join(': ') || text;
  if (errorCode === 'UNREGISTERED' || errorCode === 'SENDER_ID_MISMATCH' || (status === 400 && badToken)) {
    return { kind: 'gone', error: `${PROVIDER} answered ${status}: ${reason.slice(0, 200)}` };
  }
  return refusal(PROVIDER, status, reason, retryAfter);
}

function oauthReason(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: string; error_description?: string };
    return [body.error, body.error_description].filter(Boolean).join(': ');
  } catch {
    return text;
  }
}
