/** The wire types of the notifications API (DESIGN §5.6), as a client sees them. */

export type NotificationChannel = 'web' | 'mail' | 'webhook' | 'webpush' | 'fcm' | 'apns';

export interface NotificationRule {
  id: number;
  type: string;
  always: boolean;
  deviceIds: number[];
  channels: string[];
  attributes: Record<string, unknown>;
  calendarId: number | null;
  createdAt: string;
  /** The webhook signing secret: only in the answer that gave the rule its first webhook. */
  webhookSecret?: string;
}

export interface NotificationRuleRequest {
  type: string;
  always?: boolean;
  deviceIds?: number[];
  channels: NotificationChannel[];
  attributes?: Record<string, unknown>;
}

export interface NotificationTestResult {
  channel: string;
  target?: string;
  outcome: 'sent' | 'failed';
  error?: string;
}

/** A browser's PushSubscription as JSON. */
export interface WebPushSubscription {
  endpoint: string;
  expirationTime?: number | null;
  keys: { p256dh: string; auth: string };
}

export type PushTargetRequest = { kind: 'webpush'; subscription: WebPushSubscription; name?: string } | { kind: 'fcm' | 'apns'; token: string; name?: string };

export interface PushTarget {
  id: number;
  kind: string;
  name: string | null;
  hint: string;
  createdAt: string;
}

export type DeliveryStatus = 'pending' | 'sent' | 'failed' | 'collapsed' | 'dropped';

export interface NotificationDelivery {
  id: number;
  deliveryId: string;
  ruleId: number;
  eventId: number;
  deviceId: number;
  channel: string;
  targetId: number | null;
  status: string;
  attempts: number;
  lastError: string | null;
  createdAt: string;
  nextAttemptAt: string | null;
  sentAt: string | null;
}
