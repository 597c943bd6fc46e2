import { randomUUID } from 'node:crypto';
import type { RateLimiter, RateRule } from '../../../platform/rate-limit.ts';
import type { UserDirectory } from '../../auth/users/directory.ts';
import type { Entitlement } from '../../billing/entitlement.ts';
import type { ChannelSender, Notification, SendOutcome } from '../channels/notification.ts';
import { AppError } from '../errors.ts';
import type { DeliveryRow, NotificationsRepository } from '../repository.ts';
import type { Channel, DeliveryView } from '../schemas.ts';

/** Test notifications a user may ask for per minute. */
export const TEST_RULE: RateRule = { name: 'notification-test', limit: 10, windowSeconds: 60 };
const LISTED = 100;

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(Number(ms)).toISOString();
}

export function toDeliveryView(row: DeliveryRow): DeliveryView {
  return {
    id: Number(row.id),
    deliveryId: row.delivery_id,
    ruleId: Number(row.rule_id),
    eventId: Number(row.event_id),
    deviceId: Number(row.device_id),
    channel: row.channel,
    targetId: row.target === '' ? null : Number(row.target),
    status: row.state,
    attempts: row.attempts,
    lastError: row.last_error,
    createdAt: new Date(Number(row.created_at)).toISOString(),
    nextAttemptAt: row.state === 'pending' ? iso(row.available_at) : null,
    sentAt: iso(row.sent_at),
  };
}

export interface TestResultEntry {
  channel: string;
  target?: string;
  outcome: 'sent' | 'failed';
  error?: string;
}

export interface DeliveryServiceOptions {
  repository: NotificationsRepository;
  users: UserDirectory;
  senders: ReadonlyMap<Channel, ChannelSender>;
  channels: () => readonly Channel[];
  /** Billing's plans: a test goes only on the channels the caller's plan includes; undefined: no plan applies. */
  plans: Entitlement | undefined;
  limiter: RateLimiter;
  retryWindowMs: number;
  sendTimeoutMs: number;
  /** Called when a delivery is queued again. */
  queued: () => void;
}

/** A user's deliveries: failures to look at and retry, and test notifications. */
export class DeliveryService {
  readonly #options: DeliveryServiceOptions;

  constructor(options: DeliveryServiceOptions) {
    this.#options = options;
  }

  async list(userId: number, status: string | undefined): Promise<DeliveryView[]> {
    return (await this.#options.repository.listDeliveries(userId, status, LISTED)).map(toDeliveryView);
  }

  async retry(userId: number, id: number): Promise<DeliveryView> {
    const { repository } = this.#options;
    const row = await repository.findDelivery(userId, id);
    if (!row) throw new AppError('NOT_FOUND', 'No such delivery');
    const now = Date.now();
    if (!(await repository.requeue(userId, id, now, now + this.#options.retryWindowMs))) throw new AppError('DELIVERY_NOT_FAILED');
    this.#options.queued();
    return toDeliveryView((await repository.findDelivery(userId, id)) as DeliveryRow);
  }

  /**
   * Sends a test notification to the caller now, on one channel or on every configured one: the
   * mail address, every push target of the kind, every webhook URL of the caller's rules.
   */
  async test(userId: number, channel: Channel | undefined): Promise<TestResultEntry[]> {
    const { repository, senders, limiter, plans } = this.#options;
    if (channel !== undefined && !this.#options.channels().includes(channel)) throw new AppError('CHANNEL_NOT_AVAILABLE', `This server has no ${channel} channel configured`);
    if (channel !== undefined) await plans?.assertFeature(userId, { channel });
    const decision = await limiter.hit(TEST_RULE, String(userId));
    if (!decision.allowed) throw new AppError('RATE_LIMITED', undefined, { headers: { 'retry-after': String(Math.ceil(decision.retryAfterMs / 1000)) } });
    const user = await this.#options.users.get(userId);
    if (!user) throw new AppError('NOT_FOUND', 'No such user');
    const now = new Date();
    const base = {
      user,
      device: { id: 0, name: 'Test device', uniqueId: 'test' },
      event: { id: 0, type: 'test', eventTime: now.toISOString(), deviceId: 0, positionId: null, geofenceId: null, maintenanceId: null, attributes: {} },
      count: 1,
      rule: { id: 0, attributes: {}, webhookSecret: null },
    };
    const results: TestResultEntry[] = [];
    const run = async (entry: Omit<TestResultEntry, 'outcome'>, notification: Notification) => {
      const sender = senders.get(notification.channel);
      const outcome: SendOutcome = sender ? await sender.send(notification, AbortSignal.timeout(this.#options.sendTimeoutMs)) : { kind: 'final', error: 'not configured' };
      results.push(outcome.kind === 'sent' ? { ...entry, outcome: 'sent' } : { ...entry, outcome: 'failed', error: outcome.error });
    };
    for (const name of channel ? [channel] : this.#options.channels()) {
      if (plans && !(await plans.hasFeature(userId, { channel: name }))) {
        results.push({ channel: name, outcome: 'failed', error: `your plan does not include the ${name} channel` });
      } else if (name === 'web') {
        results.push({ channel: name, outcome: 'sent' });
      } else if (name === 'webhook') {
        const rules = (await repository.listRules(userId)).filter((rule) => rule.webhook_secret !== null && (JSON.parse(rule.channels) as string[]).includes('webhook'));
        const seen = new Set<string>();
        for (const rule of rules) {
          const attributes = JSON.parse(rule.attributes) as Record<string, unknown>;
          if (typeof attributes.webhookUrl !== 'string' || seen.has(attributes.webhookUrl)) continue;
          seen.add(attributes.webhookUrl);
          await run({ channel: name, target: attributes.webhookUrl }, { ...base, deliveryId: randomUUID(), channel: name, rule: { id: Number(rule.id), attributes, webhookSecret: rule.webhook_secret } });
        }
        if (seen.size === 0) results.push({ channel: name, outcome: 'failed', error: 'no rule of yours has a webhook' });
      } else if (name === 'mail') {
        await run({ channel: name, target: user.email }, { ...base, deliveryId: randomUUID(), channel: name });
      } else {
        const targets = await repository.listTargets(userId, [name]);
        for (const target of targets) await run({ channel: name, target: String(target.id) }, { ...base, deliveryId: randomUUID(), channel: name, target });
        if (targets.length === 0) results.push({ channel: name, outcome: 'failed', error: `no ${name} target registered` });
      }
    }
    return results;
  }
}
