import { ConfigError } from '../../platform/env.ts';
import type { EnvReader } from '../../platform/env.ts';

export interface PushConfig {
  /** Web Push: both keys (base64url, as web-push generates them) or neither (a pair generated into DATA_DIR). */
  vapid: { publicKey: string | undefined; privateKey: string | undefined; subject: string };
  /** FCM HTTP v1: the service-account JSON (read from its file when given a path); `url` is an origin. */
  fcm: { serviceAccount: string | undefined; url: string };
  /** APNs token auth: the .p8 key's PEM, its key id, the team and the app's bundle id (topic); `url` is an origin. */
  apns: { keyPem: string | undefined; keyId: string | undefined; teamId: string | undefined; topic: string | undefined; url: string };
}

/** Notification delivery (docs/notifications.md). */
export interface NotificationsConfig {
  /** NOTIFY_ALLOW_PRIVATE_URLS: webhook URLs may reach loopback, private and link-local addresses. */
  allowPrivateUrls: boolean;
  /** NOTIFY_RETRY_DELAY: ms before a failed delivery's first retry (doubled with jitter per attempt). */
  retryDelayMs: number;
  /** NOTIFY_RETRY_WINDOW: ms during which a failing delivery is tried again before it is failed for good. */
  retryWindowMs: number;
  /** NOTIFY_DELIVERY_LEASE: ms a claimed delivery stays invisible to other workers; a crashed sender's come back after it. */
  leaseMs: number;
  /** NOTIFY_SEND_TIMEOUT: ms one attempt (a webhook call, a push request, a mail) may take. */
  sendTimeoutMs: number;
  /** NOTIFY_WEBHOOK_RATE: webhook calls one user's deliveries make per minute; the rest wait for the next minute. */
  webhookRatePerMinute: number;
  /** NOTIFY_USER_CONCURRENCY and NOTIFY_HOST_CONCURRENCY: deliveries in hand per user, and webhook calls per receiving host, in one process. */
  userConcurrency: number;
  hostConcurrency: number;
  /** NOTIFY_DELIVERY_RETENTION: ms sent, collapsed and dropped deliveries are kept (failed ones stay until their rule goes). */
  deliveryRetentionMs: number;
  /** MAX_NOTIFICATION_RULES_PER_USER and MAX_PUSH_TARGETS_PER_USER. */
  rulesPerUser: number;
  targetsPerUser: number;
}

/** The notifications module's settings, read by config.ts with every module's. */
export interface NotificationsSettings {
  notifications: NotificationsConfig;
  /** The push providers of notifications (docs/notifications.md); a provider whose variables are unset is not offered. */
  push: PushConfig;
}

export function readNotificationsSettings(read: EnvReader, process: { mail: { from: string } }): NotificationsSettings {
  const notifications = {
    allowPrivateUrls: read.bool('NOTIFY_ALLOW_PRIVATE_URLS', false),
    retryDelayMs: read.int('NOTIFY_RETRY_DELAY', 5000, 1, 3_600_000),
    retryWindowMs: read.int('NOTIFY_RETRY_WINDOW', 86_400_000, 1, 7 * 86_400_000),
    leaseMs: read.int('NOTIFY_DELIVERY_LEASE', 60_000, 100, 3_600_000),
    sendTimeoutMs: read.int('NOTIFY_SEND_TIMEOUT', 10_000, 100, 300_000),
    webhookRatePerMinute: read.int('NOTIFY_WEBHOOK_RATE', 600, 1, 1_000_000),
    userConcurrency: read.int('NOTIFY_USER_CONCURRENCY', 16, 1, 256),
    hostConcurrency: read.int('NOTIFY_HOST_CONCURRENCY', 8, 1, 256),
    deliveryRetentionMs: read.int('NOTIFY_DELIVERY_RETENTION', 7 * 86_400_000, 60_000, 365 * 86_400_000),
    rulesPerUser: read.int('MAX_NOTIFICATION_RULES_PER_USER', 1000, 1, 1_000_000),
    targetsPerUser: read.int('MAX_PUSH_TARGETS_PER_USER', 20, 1, 1000),
  };
  // A claim must outlast the send it covers, or another worker could send the same delivery meanwhile.
  if (notifications.leaseMs <= notifications.sendTimeoutMs) throw new ConfigError('NOTIFY_DELIVERY_LEASE', 'must be longer than NOTIFY_SEND_TIMEOUT');
  return { notifications, push: readPushConfig(read, process.mail.from) };
}

function readPushConfig(read: EnvReader, mailFrom: string): PushConfig {
  const publicKey = read.base64url('VAPID_PUBLIC_KEY', 65);
  const privateKey = read.base64url('VAPID_PRIVATE_KEY', 32);
  if (publicKey && !privateKey) throw new ConfigError('VAPID_PRIVATE_KEY', 'required when VAPID_PUBLIC_KEY is set');
  if (privateKey && !publicKey) throw new ConfigError('VAPID_PUBLIC_KEY', 'required when VAPID_PRIVATE_KEY is set');
  const subject = read.string('VAPID_SUBJECT', `mailto:${mailAddress(mailFrom)}`);
  if (!/^mailto:[^\s@]+@[^\s@]+$/.test(subject) && !/^https:\/\/[^\s]+$/.test(subject)) {
    throw new ConfigError('VAPID_SUBJECT', `expected mailto:address or an https: URL, got '${subject}'`);
  }
  const apns = {
    keyPem: read.pem('APNS_KEY'),
    keyId: read.optional('APNS_KEY_ID'),
    teamId: read.optional('APNS_TEAM_ID'),
    topic: read.optional('APNS_TOPIC'),
    url: read.providerOrigin('APNS_URL', 'https://api.push.apple.com'),
  };
  const apnsRequired = { APNS_KEY: apns.keyPem, APNS_KEY_ID: apns.keyId, APNS_TEAM_ID: apns.teamId, APNS_TOPIC: apns.topic };
  if (Object.values(apnsRequired).some(Boolean)) {
    for (const [variable, value] of Object.entries(apnsRequired)) {
      if (!value) throw new ConfigError(variable, 'required when any of APNS_KEY, APNS_KEY_ID, APNS_TEAM_ID, APNS_TOPIC is set');
    }
  }
  return {
    vapid: { publicKey, privateKey, subject },
    fcm: { serviceAccount: read.jsonText('FCM_SERVICE_ACCOUNT'), url: read.providerOrigin('FCM_URL', 'https://fcm.googleapis.com') },
    apns,
  };
}

/** The address of a `Name <address>` sender, or the whole value when it is a bare address. */
function mailAddress(from: string): string {
  return /<([^<>\s]+)>/.exec(from)?.[1] ?? from.trim();
}
