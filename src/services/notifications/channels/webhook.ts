import { createHmac } from 'node:crypto';
import type { AddressGuard } from './addresses.ts';
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
  readonly #guard: AddressGuard;
  readonly #userAgent: string;

  constructor(options: { guard: AddressGuard; userAgent: string }) {
    this.#guard = options.guard;
    this.#userAgent = options.userAgent;
  }

  async send(notification: Notification, signal: AbortSignal): Promise<SendOutcome> {
    const { webhookUrl } = notification.rule.attributes;
    const secret = notification.rule.webhookSecret;
    if (typeof webhookUrl !== 'string' || !secret) return { kind: 'final', error: 'the rule has no webhook URL' };
    const body = webhookBody(notification);
    const headers = {
      'content-type': 'application/json',
      'user-agent': this.#userAgent,
      'trackstack-delivery': notification.deliveryId,
      'trackstack-signature': webhookSignature(secret, body, Math.floor(Date.now() / 1000)),
    };
    try {
      const result = await this.#guard.post(webhookUrl, headers, body, signal);
      if (result.kind === 'refused') return { kind: 'final', error: `webhook URL refused: ${result.reason}` };
      return outcomeOfStatus(result.status, result.retryAfter);
    } catch (error) {
      return { kind: 'retry', error: `network: ${(error as Error).message}`.slice(0, 300) };
    }
  }
}
