import type { Generated } from 'kysely';

/** The notifications module's tables; times are epoch milliseconds, JSON objects are text. */
export interface NotificationsTables {
  notification_rules: {
    id: Generated<number>;
    user_id: number;
    type: string;
    /** 1: every device the user may see with the notifications permission; 0: the devices of notification_rule_devices. */
    always: number;
    /** JSON array of channel names. */
    channels: string;
    attributes: string;
    calendar_id: number | null;
    /** The webhook's signing secret, shown once at creation. */
    webhook_secret: string | null;
    created_at: number;
    updated_at: number;
  };
  notification_rule_devices: {
    rule_id: number;
    device_id: number;
  };
  notification_targets: {
    id: Generated<number>;
    user_id: number;
    kind: string;
    /** The FCM or APNs token, or the Web Push endpoint: what makes a target unique for its user. */
    address: string;
    /** The Web Push subscription as JSON; null for token targets. */
    subscription: string | null;
    name: string | null;
    created_at: number;
  };
  notification_deliveries: {
    id: Generated<number>;
    /** The stable id a receiver deduplicates by (Trackstack-Delivery). */
    delivery_id: string;
    user_id: number;
    /** The rule that queued it; for web, mail and push, the first of the owner's rules that matched the event. */
    rule_id: number;
    event_id: number;
    device_id: number;
    channel: string;
    /** A push target's id; '' for the other channels (web and mail: one per user; webhook: one per rule). */
    target: string;
    /** Who and where it reaches (`<user>:mail`, `<user>:<push kind>:<target>`, `<user>:webhook:<rule>`): one delivery per (event, recipient); null on rows written before. */
    recipient: string | null;
    /** A webhook's receiving host (host:port), or `mail` for the mail relay, counted by the per-host concurrency; null for push and web. */
    host: string | null;
    /** The event as the fact carried it (JSON). */
    payload: string;
    /** pending | sent | failed | collapsed | dropped */
    state: string;
    /** Mail and push: (user, device, type, alarm, channel, target); repeats within the window fold into one message. */
    collapse_key: string | null;
    /** A collapsed delivery: the one whose message counts it. */
    collapsed_into: number | null;
    attempts: number;
    /** When a pending delivery may next be claimed: now, a retry time, the end of a claim's lease or of a collapse window. */
    available_at: number;
    /** Set when a worker claims it: a pending row with a future available_at and no claim is waiting for its window. */
    claimed_at: number | null;
    /** The claim holding it (null before its first claim); every write after a claim names it. */
    lease: string | null;
    /** Claims since its last outcome (sent, refused, retried by its endpoint's answer): a handler that crashed or timed out; capped (QUEUE_MAX_ATTEMPTS). */
    claims: Generated<number>;
    /** The end of its retries. */
    expires_at: number;
    created_at: number;
    sent_at: number | null;
    last_error: string | null;
  };
}
