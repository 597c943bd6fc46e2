import type { PushSender, PushTarget } from '../push/push-sender.ts';
import { renderMessage } from '../templates/index.ts';
import type { ChannelSender, Notification, SendOutcome } from './notification.ts';

/** A push channel: the message rendered for the recipient, handed to the provider's PushSender with the target. */
export class PushChannel implements ChannelSender {
  readonly #sender: PushSender;
  readonly #webUrl: string;

  constructor(sender: PushSender, webUrl: string) {
    this.#sender = sender;
    this.#webUrl = webUrl;
  }

  async send(notification: Notification, signal: AbortSignal): Promise<SendOutcome> {
    const row = notification.target;
    if (!row) return { kind: 'final', error: 'the push target is gone' };
    const target: PushTarget = { id: String(row.id), kind: this.#sender.kind };
    if (row.subscription === null) target.token = row.address;
    else target.subscription = JSON.parse(row.subscription) as NonNullable<PushTarget['subscription']>;
    const message = renderMessage(notification, this.#webUrl);
    const { event, device } = notification;
    return this.#sender.send(
      target,
      {
        title: message.title,
        body: message.body,
        url: message.url,
        data: { eventId: String(event.id), deviceId: String(device.id), type: event.type, ruleId: String(notification.rule.id) },
        collapseKey: `${notification.rule.id}:${device.id}:${event.type}`,
      },
      signal,
    );
  }
}
