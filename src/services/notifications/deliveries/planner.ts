import { randomUUID } from 'node:crypto';
import type { Entitlement } from '../../billing/entitlement.ts';
import type { DeviceAccess, DeviceAccessApi } from '../../devices/access.ts';
import type { StoredEventFact } from '../../tracking/domain-events.ts';
import type { NewDeliveryRow, NotificationsRepository, TargetRow } from '../repository.ts';
import type { RuleIndex } from './rule-index.ts';
import type { Channel } from '../schemas.ts';

/** Mail and push repeats of the same (rule, device, type, alarm) within this window fold into one message. */
export const COLLAPSE_WINDOW_MS = 60_000;

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
  now?: () => number;
}

/**
 * Turns stored events (the fact 'tracking.event.created') into deliveries: for each event the rules
 * of its type that may apply to its device, kept when their owner may be notified of the device now
 * and, for alarm rules, when the alarm is one they name; then one delivery per channel and target.
 * Runs again harmlessly: a delivery is unique per (event, rule, channel, target).
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
    for (const event of events) {
      for (const { row: rule, alarms } of await this.#options.rules.rulesFor(event.type, event.deviceId)) {
        if (!matchesAlarm(alarms, event)) continue;
        const userId = Number(rule.user_id);
        if (!mayNotify(await accessOf(userId), event.deviceId, rule.always === 1)) continue;
        const payload = JSON.stringify(event);
        const base = { user_id: userId, rule_id: Number(rule.id), event_id: event.id, device_id: event.deviceId, payload, attempts: 0, claimed_at: null, collapsed_into: null, sent_at: null, last_error: null, created_at: now, expires_at: now + this.#options.retryWindowMs, available_at: now };
        for (const channel of JSON.parse(rule.channels) as string[]) {
          if (!available.has(channel as Channel)) continue;
          // Billing caches the plan: this costs a map lookup per rule and channel.
          if (this.#options.plans && !(await this.#options.plans.hasFeature(userId, { channel }))) {
            // Recorded, so its owner sees why nothing came; never sent nor retried.
            rows.push({ ...base, delivery_id: randomUUID(), channel, target: '', state: 'dropped', last_error: notInPlan(channel), collapse_key: null });
            continue;
          }
          const collapse = (target: string) => (COLLAPSING.has(channel) ? [rule.id, event.deviceId, event.type, alarmOf(event) ?? '', channel, target].join(':') : null);
          if (channel === 'web') {
            // The live socket already carries the event; the web app shows it as a browser notification.
            rows.push({ ...base, delivery_id: randomUUID(), channel, target: '', state: 'sent', sent_at: now, collapse_key: null });
          } else if (PUSH.has(channel)) {
            for (const target of (await targetsOf(userId)).filter((row) => row.kind === channel)) {
              rows.push({ ...base, delivery_id: randomUUID(), channel, target: String(target.id), state: 'pending', collapse_key: collapse(String(target.id)) });
            }
          } else {
            rows.push({ ...base, delivery_id: randomUUID(), channel, target: '', state: 'pending', collapse_key: collapse('') });
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
