import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { RateLimiter, RateRule } from '../../../platform/rate-limit.ts';
import { nextTurn } from '../../../platform/turns.ts';
import type { QueueMetrics } from '../../../platform/work/metrics.ts';
import { postponeUntil, WorkQueue } from '../../../platform/work/queue.ts';
import type { Postponed, WorkSettings } from '../../../platform/work/queue.ts';
import type { UserDirectory } from '../../auth/users/directory.ts';
import type { Entitlement } from '../../billing/entitlement.ts';
import type { DeviceAccessApi } from '../../devices/access.ts';
import type { StoredEventFact } from '../../tracking/domain-events.ts';
import { eventSeenBy } from '../channels/notification.ts';
import type { ChannelSender, SendOutcome } from '../channels/notification.ts';
import type { DeliveryMetrics } from '../metrics.ts';
import { DELIVERIES_QUEUE } from '../repository.ts';
import type { DeliveryRow, NotificationsRepository } from '../repository.ts';
import type { Channel } from '../schemas.ts';
import { TargetGuard } from './circuit.ts';
import { mayNotify, notInPlan } from './planner.ts';
import { DeliveryStore } from './store.ts';
import type { DeliveryItem } from './store.ts';

/** Mail and push messages one user receives per minute at most; the rest wait (and fold together). */
export const USER_MESSAGE_RULE: RateRule = { name: 'notification-messages', limit: 30, windowSeconds: 60 };
const MESSAGE_CHANNELS = ['mail', 'webpush', 'fcm', 'apns'] as const;
/** Deliveries one claim takes at most. */
const CLAIM_SIZE = 100;
/** Done deliveries one prune statement deletes; the prune pauses four times as long as each took. */
const PRUNE_CHUNK = 500;
const PRUNE_EVERY_MS = 10 * 60_000;

/** The webhook calls one user's deliveries make per minute at most (NOTIFY_WEBHOOK_RATE); the rest wait for the next minute. */
export function webhookRule(perMinute: number): RateRule {
  return { name: 'notification-webhooks', limit: perMinute, windowSeconds: 60 };
}

/** A rate and the channels it counts. */
interface ChannelRate {
  rule: RateRule;
  channels: readonly string[];
}

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
  /** The durable-work rules every queue shares (QUEUE_MAX_ATTEMPTS, QUEUE_HANDLER_TIMEOUT): the cap on claims without an outcome, and how long one delivery's handling may take. */
  work: Pick<WorkSettings, 'maxAttempts' | 'handlerTimeoutMs'>;
  /** A delivery an administrator takes back from the dead letters gets a new retry window of this length. */
  retryWindowMs: number;
  queueMetrics?: QueueMetrics | undefined;
  /** Deliveries this process holds at once (sending, or waiting for their target), and sends per target. */
  concurrency?: number;
  perTarget?: number;
  /** Deliveries one user has in hand in this process, and calls to one webhook host (host:port) or to the mail relay. */
  perUser: number;
  perHost: number;
  webhookRatePerMinute: number;
  /** How long sent, collapsed and dropped deliveries are kept. */
  retentionMs: number;
  pollMs?: number;
  now?: () => number;
}

/**
 * Sends due deliveries; every instance runs one, as a consumer of the durable-work queue
 * (`platform/work/queue.ts`), which claims, renews leases, times handlers out and dead-letters. A
 * delivery is claimed for a lease before its send and marked sent after it, so a process killed
 * mid-send leaves it to be sent again (same delivery id) once the lease ends, and one recorded as
 * sent is never sent again.
 *
 * Fair between users: claims go turn by turn across users and skip users and webhook hosts at
 * their concurrency here (`store.ts`); a user over a rate has every waiting delivery of those
 * channels moved to the end of the window at once, so nothing held back is claimed again before then.
 */
export class DeliveryWorker {
  readonly #options: WorkerOptions;
  readonly #now: () => number;
  readonly #guard: TargetGuard;
  readonly #queue: WorkQueue<DeliveryItem>;
  readonly #rates: ReadonlyMap<string, ChannelRate>;
  /** Until when a user's channels are held back by a rate: `<rate name>:<user>` → end of the window. */
  readonly #holds = new Map<string, number>();
  #pruneTimer: NodeJS.Timeout | undefined;
  #pruning: Promise<number> | undefined;
  #stopped = true;

  constructor(options: WorkerOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#guard = new TargetGuard(options.perTarget ?? 4, this.#now);
    const messages: ChannelRate = { rule: USER_MESSAGE_RULE, channels: MESSAGE_CHANNELS };
    const webhooks: ChannelRate = { rule: webhookRule(options.webhookRatePerMinute), channels: ['webhook'] };
    this.#rates = new Map([...MESSAGE_CHANNELS.map((channel) => [channel, messages] as const), ['webhook', webhooks]]);
    const { repository, perUser, perHost, retryWindowMs } = options;
    this.#queue = new WorkQueue<DeliveryItem>({
      name: DELIVERIES_QUEUE,
      store: new DeliveryStore({ repository, perUser, perHost, retryWindowMs }),
      // The channels this process sends: the consumers of the deliveries queue, for its dead letters and metrics.
      consumers: () => [...options.senders.keys()],
      handle: ({ row }, signal) => this.#dispatch(row, signal),
      log: options.log,
      metrics: options.queueMetrics,
      maxAttempts: options.work.maxAttempts,
      handlerTimeoutMs: options.work.handlerTimeoutMs,
      leaseMs: options.leaseMs,
      firstRetryMs: options.retryDelayMs,
      pollMs: options.pollMs ?? 500,
      concurrency: options.concurrency ?? 256,
      claimSize: CLAIM_SIZE,
      now: this.#now,
    });
  }

  /** Until when the user's deliveries on the channel are held back by its rate; undefined when they are not. */
  heldUntil(userId: number, channel: string): number | undefined {
    const rate = this.#rates.get(channel);
    if (!rate) return undefined;
    const key = `${rate.rule.name}:${userId}`;
    const until = this.#holds.get(key);
    if (until === undefined) return undefined;
    if (until > this.#now()) return until;
    this.#holds.delete(key);
    return undefined;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#pruneTimer = setInterval(() => {
      this.pruneNow().catch((error: unknown) => this.#options.log.error({ err: error }, 'notifications: pruning deliveries failed'));
    }, PRUNE_EVERY_MS);
    this.#pruneTimer.unref();
    this.#queue.start();
  }

  /** Stops claiming; the sends in flight are told to stop and left to their lease (the queue's stop). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#pruneTimer);
    await this.#queue.stop();
    await this.#pruning?.catch(() => undefined);
  }

  /**
   * Deletes the sent, collapsed and dropped deliveries older than the retention, in chunks with
   * pauses between them, so the table holds what is waiting, failed, or recent; answers how many.
   * One prune at a time per process; concurrent ones on other instances delete disjoint chunks or nothing.
   */
  pruneNow(): Promise<number> {
    this.#pruning ??= this.#prune().finally(() => {
      this.#pruning = undefined;
    });
    return this.#pruning;
  }

  async #prune(): Promise<number> {
    for (const [key, until] of this.#holds) if (until <= this.#now()) this.#holds.delete(key);
    const before = this.#now() - this.#options.retentionMs;
    let deleted = 0;
    for (;;) {
      const started = performance.now();
      const count = await this.#options.repository.pruneDone(before, PRUNE_CHUNK);
      deleted += count;
      if (count < PRUNE_CHUNK || this.#stopped) return deleted;
      await sleep(4 * (performance.now() - started));
    }
  }

  /** Looks for due deliveries now; a call during a pass makes the pass run once more. */
  wake(): void {
    this.#queue.wake();
  }

  /** Claims and sends every delivery due now, waiting for the sends; what they put off till later stays (tests). */
  drainNow(): Promise<void> {
    return this.#queue.drainNow(this.#now());
  }

  /** An administrator asked to retry a dead-lettered delivery: the next pass takes it back. */
  retryRequested(): void {
    this.#queue.retryRequested();
  }

  /**
   * Handles one claimed delivery: drops it, sends it and records the answer of its endpoint, or
   * postpones it (no sender for its channel, a busy target or open circuit, a rate). A handling
   * that throws or times out is the queue's to retry, or past the cap to dead-letter.
   */
  async #dispatch(row: DeliveryRow, signal: AbortSignal): Promise<void | Postponed> {
    // Each delivery starts in a loop iteration of its own: on SQLite its queries complete without giving
    // the event loop back, so a claim's deliveries run back to back would hold requests waiting meanwhile.
    await nextTurn();
    const { repository, metrics } = this.#options;
    // The claim's: every write names it, so a handling that outlived its claim writes nothing.
    const lease = row.lease as string;
    const channel = row.channel as Channel;
    const sender = this.#options.senders.get(channel);
    if (!sender) {
      // The channel's configuration went away; it goes again once the channel is back.
      return postponeUntil(this.#now() + 60_000);
    }
    const rules = await repository.rulesById([Number(row.rule_id)]);
    const rule = rules.get(Number(row.rule_id));
    if (!rule) return this.#drop(row, lease, 'the rule was deleted');
    const userId = Number(row.user_id);
    const deviceId = Number(row.device_id);
    // Recipients are decided now: a share, a permission or a device removed since the event stops the message.
    const access = await this.#options.devices.accessFor(userId);
    if (!mayNotify(access, deviceId, rule.always === 1)) return this.#drop(row, lease, 'the user may no longer be notified of this device');
    const [user, [device]] = await Promise.all([this.#options.users.get(userId), this.#options.devices.getDevices([deviceId])]);
    if (!user || user.disabled) return this.#drop(row, lease, 'the account is gone or disabled');
    if (!device) return this.#drop(row, lease, 'the device is gone');
    const target = row.target === '' ? undefined : await repository.findTarget(Number(row.target));
    if (row.target !== '' && (!target || Number(target.user_id) !== userId)) return this.#drop(row, lease, 'the push target is gone');
    // A downgrade since the delivery was queued stops it; a retry would not change the answer.
    if (this.#options.plans && !(await this.#options.plans.hasFeature(userId, { channel }))) return this.#drop(row, lease, notInPlan(channel));

    const targetKey = row.target === '' ? `${channel}:${channel === 'mail' ? 'mail' : row.rule_id}` : `${channel}:${row.target}`;
    const admission = await this.#guard.acquire(targetKey);
    if (!admission.go) {
      metrics.outcome(channel, 'postponed');
      // An open circuit: the target's other waiting deliveries wait for the cool-down too, unclaimed.
      if (admission.open) await repository.holdBackTarget(row.target !== '' ? { channel, target: row.target } : channel === 'mail' ? { channel } : { channel, ruleId: Number(row.rule_id) }, admission.retryAt);
      return postponeUntil(admission.retryAt);
    }
    // Timed out while it waited for the slot: the delivery is back in the queue already.
    if (signal.aborted) {
      this.#guard.giveBack(targetKey);
      return;
    }
    // Counted once the target takes the message, so deliveries held back by a busy or open target spend none of the user's quota.
    const rate = this.#rates.get(channel);
    if (rate) {
      const decision = await this.#options.limiter.hit(rate.rule, String(userId));
      if (!decision.allowed) {
        this.#guard.giveBack(targetKey);
        metrics.outcome(channel, 'postponed');
        const until = this.#now() + Math.ceil(decision.retryAfterMs);
        // Everything of the user's that this rate counts waits for the window to reopen, this one included.
        this.#holds.set(`${rate.rule.name}:${userId}`, until);
        await repository.holdBack(userId, rate.channels, until);
        return postponeUntil(until);
      }
    }
    let outcome: SendOutcome;
    try {
      const event = eventSeenBy(access, JSON.parse(row.payload) as StoredEventFact);
      const count = row.collapse_key === null ? 1 : 1 + (await repository.collapsedCount(Number(row.id)));
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
        AbortSignal.any([signal, AbortSignal.timeout(this.#options.sendTimeoutMs)]),
      );
    } catch (error) {
      outcome = { kind: 'retry', error: String((error as Error)?.message ?? error).slice(0, 300) };
    }
    // Timed out meanwhile: the handling has failed and the delivery is back in the queue already.
    if (signal.aborted) {
      this.#guard.release(targetKey, false);
      return;
    }
    // Only what calls for a retry counts against the target's health: a refusal is an answer.
    this.#guard.release(targetKey, outcome.kind !== 'retry');
    await this.#record(row, lease, outcome);
  }

  async #record(row: DeliveryRow, lease: string, outcome: SendOutcome): Promise<void> {
    const { repository, metrics } = this.#options;
    const id = Number(row.id);
    const now = this.#now();
    switch (outcome.kind) {
      case 'sent':
        await repository.markSent(id, lease, now);
        metrics.outcome(row.channel, 'sent');
        metrics.latency(row.channel, Math.max(0, now - Number(row.created_at)) / 1000);
        return;
      case 'gone':
        await repository.deleteTarget(Number(row.user_id), Number(row.target));
        await repository.markDropped(id, lease, `the push target is gone: ${outcome.error}`);
        metrics.outcome(row.channel, 'gone');
        return;
      case 'final':
        await repository.markFailed(id, lease, outcome.error, undefined);
        metrics.outcome(row.channel, 'failed');
        return;
      case 'retry': {
        const at = now + Math.max(this.#backoff(row.attempts), Math.round(outcome.retryAfterMs ?? 0));
        const final = at > Number(row.expires_at);
        await repository.markFailed(id, lease, outcome.error, final ? undefined : at);
        metrics.outcome(row.channel, final ? 'failed' : 'retry');
        return;
      }
    }
  }

  /** Exponential backoff with jitter: the first retry within 1 to 2 delays, doubling per attempt. */
  #backoff(attempts: number): number {
    return Math.round(this.#options.retryDelayMs * 2 ** Math.min(attempts, 20) * (1 + Math.random()));
  }

  async #drop(row: DeliveryRow, lease: string, reason: string): Promise<void> {
    await this.#options.repository.markDropped(Number(row.id), lease, reason);
    this.#options.metrics.outcome(row.channel, 'dropped');
  }
}
