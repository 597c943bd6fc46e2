// The contract between notification delivery and the push providers (Web Push, FCM, APNs).

export type PushKind = 'webpush' | 'fcm' | 'apns';

/** A registered push target: an FCM or APNs device token, or a browser's Web Push subscription. */
export interface PushTarget {
  id: string;
  kind: PushKind;
  token?: string;
  subscription?: { endpoint: string; keys: { p256dh: string; auth: string } };
}

/** What a person sees, plus where a click leads. */
export interface PushMessage {
  title: string;
  body: string;
  /** Opened when the notification is clicked: a path into the web app, or the app's deep link data. */
  url: string;
  data: Record<string, string>;
  /** Messages with the same key replace each other on the device. */
  collapseKey?: string;
}

export type PushOutcome =
  | { kind: 'sent' }
  /** The provider says the target no longer exists: the target is deleted. */
  | { kind: 'gone'; error: string }
  /** 5xx, 408, 429 or a network error: tried again later, after `retryAfterMs` when the provider says so. */
  | { kind: 'retry'; error: string; retryAfterMs?: number }
  /** Any other refusal: not tried again. */
  | { kind: 'final'; error: string };

export interface PushSender {
  readonly kind: PushKind;
  send(target: PushTarget, message: PushMessage, signal: AbortSignal): Promise<PushOutcome>;
}
