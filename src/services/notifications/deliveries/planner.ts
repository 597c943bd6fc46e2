import { randomUUID } from 'node:crypto';
import { TimeSlice } from '../../../platform/turns.ts';
import type { Entitlement } from '../../billing/entitlement.ts';
import type { DeviceAccess, DeviceAccessApi } from '../../devices/access.ts';
import type { StoredEventFact } from '../../tracking/domain-events.ts';
import type { NewDeliveryRow, NotificationsRepository, TargetRow } from '../repository.ts';
import type { RuleIndex } from './rule-index.ts';
import type { Channel } from '../schemas.ts';

/** Mail and push repeats to the same user and target of the same (device, type, alarm) within this window fold into one message. */
export const COLLAPSE_WINDOW_MS = 60_000;

/** The `host` of mail deliveries: the relay every mail goes through, counted like a webhook's host. */
const MAIL_HOST = 'mail';

const COLLAPSING = new Set<string>(['mail', 'webpush', 'fcm', 'apns']);
const PUSH = new Set<string>(['webpush', 'fcm', 'apns']);

/** Why a delivery on a channel its owner's plan no longer includes is not made (a downgrade after the rule was saved). */
export function notInPlan(channel: string): string {
  return `the owner's plan does not include the ${channel} channel`;
}

/** Whether the user may be told of events of the device: owner, or a share with the notifications permission. */
export function mayNotify(access: DeviceAccess, deviceId: number, always: boolean): boolean {
  const grant = access.grant(deviceId);
  if (grant) return grant.permissions.notifications;
  // An administrator names any device explicitly; `always` covers the devices the user holds.
  return !always && access.administrator;
}

export interface PlannerOptions {
  repository: NotificationsRepository;
  rules: RuleIndex;
  devices: DeviceAccessApi;
  /** The channels this server delivers on now; a rule's others wait until they are configured again. */
  channels: () => readonly Channel[];
  /** Billing's plans: a channel the rule owner's plan lacks now is recorded as dropped, not sent; undefined: no plan applies. */
  plans: Entitlement | undefined;
  retryWindowMs: number;
  /** Until when a user's deliveries on the channel are held back by its rate (the worker's word); such deliveries are queued for then. */
  heldUntil?: (userId: number, channel: string) => number | undefined;
  now?: () => number;
}

/**
 * Turns stored events (the fact 'tracking.event.created') into deliveries: for each event the rules
 * of its type that may apply to its device, kept when their owner may be notified of the device now
 * and, for alarm rules, when the alarm is one they name; then one delivery per (event, recipient),
 * whatever the number of rules that match: a user's mail address, each of their push targets, and
 * each webhook rule's URL. A recipient's delivery carries the first of its rules that matched.
 * Runs again harmlessly: a delivery is unique per (event, recipient).
 */
export class DeliveryPlanner {
  readonly #options: PlannerOptions;
  readonly #now: () => number;

  constructor(options: PlannerOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  async plan(events: readonly StoredEventFact[]): Promise<number> {
    const { repository, devices } = this.#options;
    const available = new Set(this.#options.channels());
    const accesses = new Map<number, Promise<DeviceAccess>>();
    const accessOf = (userId: number) => {
      let access = accesses.get(userId);
      if (!access) accesses.set(userId, (access = devices.accessFor(userId)));
      return access;
    };
    const targets = new Map<number, Promise<TargetRow[]>>();
    const targetsOf = (userId: number) => {
      let list = targets.get(userId);
      if (!list) targets.set(userId, (list = repository.listTargets(userId)));
      return list;
    };
    const now = this.#now();
    const rows: NewDeliveryRow[] = [];
    const slice = new TimeSlice();
    for (const event of events) {
      const payload = JSON.stringify(event);
      const alarm = alarmOf(event) ?? '';
      // The recipients this event has reached already: a later rule adds nothing for them.
      const planned = new Set<string>();
      for (const { row: rule, alarms, webhookHost } of await this.#options.rules.rulesFor(event.type, event.deviceId)) {
        // Matching runs on cached answers that never give the event loop back: other requests get a turn every half millisecond.
        await slice.pause();
        if (!matchesAlarm(alarms, event)) continue;
        const userId = Number(rule.user_id);
        if (!mayNotify(await accessOf(userId), event.deviceId, rule.always === 1)) continue;
        const add = (channel: string, recipient: string, values: Pick<NewDeliveryRow, 'target' | 'state'> & Partial<NewDeliveryRow>) => {
          if (planned.has(recipient)) return;
          planned.add(recipient);
          const heldUntil = values.state === 'pending' ? (this.#options.heldUntil?.(userId, channel) ?? now) : now;
          rows.push({
            delivery_id: randomUUID(),
            user_id: userId,
            rule_id: Number(rule.id),
            event_id: event.id,
            device_id: event.deviceId,
            channel,
            recipient,
            host: null,
            payload,
            attempts: 0,
            claimed_at: null,
            lease: null,
            collapsed_into: null,
            collapse_key: COLLAPSING.has(channel) ? [userId, event.deviceId, event.type, alarm, channel, values.target].join(':') : null,
            sent_at: null,
            last_error: null,
            created_at: now,
            expires_at: now + this.#options.retryWindowMs,
            available_at: Math.max(now, heldUntil),
            ...values,
          });
        };
        for (const channel of JSON.parse(rule.channels) as string[]) {
          if (!available.has(channel as Channel)) continue;
          // Billing caches the plan: this costs a map lookup per rule and channel.
          if (this.#options.plans && !(await this.#options.plans.hasFeature(userId, { channel }))) {
            // Recorded, so its owner sees why nothing came; never sent nor retried.
            add(channel, `${userId}:${channel}`, { target: '', state: 'dropped', last_error: notInPlan(channel), collapse_key: null });
          } else if (channel === 'web') {
            // The live socket already carries the event; the web app shows it as a browser notification.
            add(channel, `${userId}:web`, { target: '', state: 'sent', sent_at: now });
          } else if (PUSH.has(channel)) {
            for (const target of (await targetsOf(userId)).filter((row) => row.kind === channel)) {
              add(channel, `${userId}:${channel}:${target.id}`, { target: String(target.id), state: 'pending' });
            }
          } else if (channel === 'webhook') {
            add(channel, `${userId}:webhook:${rule.id}`, { target: '', state: 'pending', host: webhookHost });
          } else {
            // Every user's mail goes through one relay: a host like a webhook's.
            add(channel, `${userId}:${channel}`, { target: '', state: 'pending', host: MAIL_HOST });
          }
        }
      }
    }
    return repository.queue(rows, now, COLLAPSE_WINDOW_MS);
  }
}

function alarmOf(event: StoredEventFact): string | undefined {
  const alarm = event.attributes.alarm;
  return typeof alarm === 'string' ? alarm : undefined;
}

function matchesAlarm(names: Set<string> | undefined, event: StoredEventFact): boolean {
  if (event.type !== 'alarm' || !names) return true;
  const alarm = alarmOf(event);
  // A device may report several alarms at once, comma-separated.
  return alarm !== undefined && alarm.split(',').some((name) => names.has(name.trim()));
}
