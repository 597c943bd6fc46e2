import type { FastifyBaseLogger } from 'fastify';
import type { RateLimiter, RateRule } from '../../../platform/rate-limit.ts';
import type { UserDirectory } from '../../auth/users/directory.ts';
import type { Entitlement } from '../../billing/entitlement.ts';
import type { DeviceAccessApi } from '../../devices/access.ts';
import type { StoredEventFact } from '../../tracking/domain-events.ts';
import { eventSeenBy } from '../channels/notification.ts';
import type { ChannelSender, SendOutcome } from '../channels/notification.ts';
import type { DeliveryMetrics } from '../metrics.ts';
import type { DeliveryRow, NotificationsRepository } from '../repository.ts';
import type { Channel } from '../schemas.ts';
import { TargetGuard } from './circuit.ts';
import { mayNotify, notInPlan } from './planner.ts';

/** Mail and push messages one user receives per minute at most; the rest wait (and fold together). */
export const USER_MESSAGE_RULE: RateRule = { name: 'notification-messages', limit: 30, windowSeconds: 60 };
const RATE_LIMITED = new Set<string>(['mail', 'webpush', 'fcm', 'apns']);

export interface WorkerOptions {
  repository: NotificationsRepository;
  devices: DeviceAccessApi;
  users: UserDirectory;
  senders: ReadonlyMap<Channel, ChannelSender>;
  /** Billing's plans: a delivery on a channel its owner's plan no longer includes is dropped; undefined: no plan applies. */
  plans: Entitlement | undefined;
  limiter: RateLimiter;
  metrics: DeliveryMetrics;
  log: FastifyBaseLogger;
  /** First retry after this many ms (times 1 to 2), doubling per attempt. */
  retryDelayMs: number;
  leaseMs: number;
  sendTimeoutMs: number;
  /** Deliveries this process holds at once (sending, or waiting for their target), and sends per target. */
  concurrency?: number;
  perTarget?: number;
  pollMs?: number;
  now?: () => number;
}

/**
 * Sends due deliveries; every instance runs one. A delivery is claimed for a lease before its send
 * and marked sent after it, so a process killed mid-send leaves it to be sent again (same
 * delivery id) once the lease ends, and one recorded as sent is never sent again.
 */
export class DeliveryWorker {
  readonly #options: WorkerOptions;
  readonly #now: () => number;
  readonly #guard: TargetGuard;
  readonly #concurrency: number;
  readonly #inFlight = new Set<Promise<void>>();
  #timer: NodeJS.Timeout | undefined;
  #draining: Promise<void> | undefined;
  #again = false;
  #stopped = true;

  constructor(options: WorkerOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#guard = new TargetGuard(options.perTarget ?? 4, this.#now);
    this.#concurrency = options.concurrency ?? 256;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#timer = setInterval(() => this.wake(), this.#options.pollMs ?? 500);
    this.#timer.unref();
    this.wake();
  }

  /** Stops claiming and waits for the sends in flight. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#draining;
    await Promise.allSettled(this.#inFlight);
  }

  /** Looks for due deliveries now; a call during a pass makes the pass run once more. */
  wake(): void {
    if (this.#stopped) return;
    if (this.#draining) {
      this.#again = true;
      return;
    }
    this.#draining = this.#drain()
      .catch((error: unknown) => this.#options.log.error({ err: error }, 'notifications: claiming deliveries failed'))
      .finally(() => {
        this.#draining = undefined;
      });
  }

  /** Claims and sends every due delivery, waiting for the sends (tests). */
  async drainNow(): Promise<void> {
    while (this.#draining) await this.#draining;
    await this.#drain();
    await Promise.allSettled(this.#inFlight);
  }

  async #drain(): Promise<void> {
    do {
      this.#again = false;
      const free = this.#concurrency - this.#inFlight.size;
      if (free <= 0) return;
      const claimed = await this.#options.repository.claim(this.#now(), this.#options.leaseMs, Math.min(free, 100));
      for (const row of claimed) {
        const sending = this.#dispatch(row)
          .catch((error: unknown) => this.#options.log.error({ err: error, delivery: row.delivery_id }, 'notifications: a delivery failed unexpectedly'))
          .finally(() => {
            this.#inFlight.delete(sending);
            this.wake();
          });
        this.#inFlight.add(sending);
      }
      if (claimed.length === Math.min(free, 100)) this.#again = true;
    } while (this.#again && !this.#stopped);
  }

  async #dispatch(row: DeliveryRow): Promise<void> {
    const { repository, metrics } = this.#options;
    const id = Number(row.id);
    const channel = row.channel as Channel;
    const sender = this.#options.senders.get(channel);
    if (!sender) {
      // The channel's configuration went away; it goes again once the channel is back.
      await repository.postpone(id, this.#now() + 60_000);
      return;
    }
    const rules = await repository.rulesById([Number(row.rule_id)]);
    const rule = rules.get(Number(row.rule_id));
    if (!rule) return this.#drop(row, 'the rule was deleted');
    const userId = Number(row.user_id);
    const deviceId = Number(row.device_id);
    // Recipients are decided now: a share, a permission or a device removed since the event stops the message.
    const access = await this.#options.devices.accessFor(userId);
    if (!mayNotify(access, deviceId, rule.always === 1)) return this.#drop(row, 'the user may no longer be notified of this device');
    const [user, [device]] = await Promise.all([this.#options.users.get(userId), this.#options.devices.getDevices([deviceId])]);
    if (!user || user.disabled) return this.#drop(row, 'the account is gone or disabled');
    if (!device) return this.#drop(row, 'the device is gone');
    const target = row.target === '' ? undefined : await repository.findTarget(Number(row.target));
    if (row.target !== '' && (!target || Number(target.user_id) !== userId)) return this.#drop(row, 'the push target is gone');
    // A downgrade since the delivery was queued stops it; a retry would not change the answer.
    if (this.#options.plans && !(await this.#options.plans.hasFeature(userId, { channel }))) return this.#drop(row, notInPlan(channel));

    const targetKey = row.target === '' ? `${channel}:${channel === 'mail' ? 'mail' : row.rule_id}` : `${channel}:${row.target}`;
    const admission = await this.#guard.acquire(targetKey);
    if (!admission.go) {
      metrics.outcome(channel, 'postponed');
      await repository.postpone(id, admission.retryAt);
      return;
    }
    // Waited for a slot so long that the claim may lapse before the send ends: back to the queue, for anyone.
    if (this.#now() + this.#options.sendTimeoutMs > Number(row.available_at)) {
      this.#guard.giveBack(targetKey);
      await repository.postpone(id, this.#now());
      return;
    }
    // Counted once the target takes the message, so deliveries held back by a busy or open target spend none of the user's quota.
    if (RATE_LIMITED.has(channel)) {
      const decision = await this.#options.limiter.hit(USER_MESSAGE_RULE, String(userId));
      if (!decision.allowed) {
        this.#guard.giveBack(targetKey);
        metrics.outcome(channel, 'postponed');
        await repository.postpone(id, this.#now() + Math.ceil(decision.retryAfterMs));
        return;
      }
    }
    let outcome: SendOutcome;
    try {
      const event = eventSeenBy(access, JSON.parse(row.payload) as StoredEventFact);
      const count = row.collapse_key === null ? 1 : 1 + (await repository.collapsedCount(id));
      outcome = await sender.send(
        {
          deliveryId: row.delivery_id,
          channel,
          rule: { id: Number(rule.id), attributes: JSON.parse(rule.attributes) as Record<string, unknown>, webhookSecret: rule.webhook_secret },
          user,
          device: { id: device.id, name: device.name, uniqueId: device.uniqueId },
          event,
          count,
          ...(target ? { target } : {}),
        },
        AbortSignal.timeout(this.#options.sendTimeoutMs),
      );
    } catch (error) {
      outcome = { kind: 'retry', error: String((error as Error)?.message ?? error).slice(0, 300) };
    }
    // Only what calls for a retry counts against the target's health: a refusal is an answer.
    this.#guard.release(targetKey, outcome.kind !== 'retry');
    await this.#record(row, outcome);
  }

  async #record(row: DeliveryRow, outcome: SendOutcome): Promise<void> {
    const { repository, metrics } = this.#options;
    const id = Number(row.id);
    const now = this.#now();
    switch (outcome.kind) {
      case 'sent':
        await repository.markSent(id, now);
        metrics.outcome(row.channel, 'sent');
        metrics.latency(row.channel, Math.max(0, now - Number(row.created_at)) / 1000);
        return;
      case 'gone':
        await repository.deleteTarget(Number(row.user_id), Number(row.target));
        await repository.markDropped(id, `the push target is gone: ${outcome.error}`);
        metrics.outcome(row.channel, 'gone');
        return;
      case 'final':
        await repository.markFailed(id, outcome.error, undefined);
        metrics.outcome(row.channel, 'failed');
        return;
      case 'retry': {
        const at = now + Math.max(this.#backoff(row.attempts), Math.round(outcome.retryAfterMs ?? 0));
        const final = at > Number(row.expires_at);
        await repository.markFailed(id, outcome.error, final ? undefined : at);
        metrics.outcome(row.channel, final ? 'failed' : 'retry');
        return;
      }
    }
  }

  /** Exponential backoff with jitter: the first retry within 1 to 2 delays, doubling per attempt. */
  #backoff(attempts: number): number {
    return Math.round(this.#options.retryDelayMs * 2 ** Math.min(attempts, 20) * (1 + Math.random()));
  }

  async #drop(row: DeliveryRow, reason: string): Promise<void> {
    await this.#options.repository.markDropped(Number(row.id), reason);
    this.#options.metrics.outcome(row.channel, 'dropped');
  }
}
