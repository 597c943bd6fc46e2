import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { vetWebhookUrl } from './addresses.ts';
import type { ResolvedAddress } from './addresses.ts';
import { outcomeOfStatus } from './notification.ts';
import type { ChannelSender, Notification, SendOutcome } from './notification.ts';

/** The JSON a webhook receives (docs/notifications.md). */
export function webhookBody(notification: Notification): string {
  const { event, device } = notification;
  const { position, geofence, ...spec } = event;
  return JSON.stringify({
    id: event.id,
    type: event.type,
    eventTime: event.eventTime,
    device,
    event: spec,
    ...(position ? { position } : {}),
    ...(geofence ? { geofence } : {}),
    ...(notification.count > 1 ? { count: notification.count } : {}),
  });
}

/** `t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`: the receiver recomputes it and compares in constant time. */
export function webhookSignature(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

/**
 * POSTs the event to the rule's URL, signed. The URL is vetted again at every attempt (its host may
 * resolve elsewhere since the rule was saved) and the request connects to the very address vetted.
 */
export class WebhookSender implements ChannelSender {
  readonly #allowPrivate: boolean;
  readonly #userAgent: string;

  constructor(options: { allowPrivateUrls: boolean; userAgent: string }) {
    this.#allowPrivate = options.allowPrivateUrls;
    this.#userAgent = options.userAgent;
  }

  async send(notification: Notification, signal: AbortSignal): Promise<SendOutcome> {
    const { webhookUrl } = notification.rule.attributes;
    const secret = notification.rule.webhookSecret;
    if (typeof webhookUrl !== 'string' || !secret) return { kind: 'final', error: 'the rule has no webhook URL' };
    const verdict = await vetWebhookUrl(webhookUrl, this.#allowPrivate);
    if (!verdict.ok) return { kind: 'final', error: `webhook URL refused: ${verdict.reason}` };
    const body = webhookBody(notification);
    const headers = {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'user-agent': this.#userAgent,
      'trackstack-delivery': notification.deliveryId,
      'trackstack-signature': webhookSignature(secret, body, Math.floor(Date.now() / 1000)),
    };
    try {
      const { status, retryAfter } = await post(verdict.url, verdict.address, headers, body, signal);
      return outcomeOfStatus(status, retryAfter);
    } catch (error) {
      return { kind: 'retry', error: `network: ${(error as Error).message}`.slice(0, 300) };
    }
  }
}

function post(url: URL, address: ResolvedAddress, headers: Record<string, string>, body: string, signal: AbortSignal) {
  // Every name resolves to the vetted address; TLS still checks the certificate against the URL's host.
  const lookup: LookupFunction = (_hostname, options, callback) => {
    if (options.all) (callback as unknown as (error: null, addresses: ResolvedAddress[]) => void)(null, [address]);
    else callback(null, address.address, address.family);
  };
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<{ status: number; retryAfter: string | undefined }>((resolve, reject) => {
    const request = client.request(url, { method: 'POST', headers, lookup, signal, agent: false }, (response) => {
      // The answer's body is not needed; reading it lets the socket close cleanly.
      response.resume();
      response.on('end', () => resolve({ status: response.statusCode ?? 0, retryAfter: response.headers['retry-after'] }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}
