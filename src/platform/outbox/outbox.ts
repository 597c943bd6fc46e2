import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { DomainEvents, EventBus, Topic } from '../bus.ts';
import type { Database } from '../db/database.ts';
import type { QueueMetrics } from '../work/metrics.ts';
import { WorkQueue } from '../work/queue.ts';
import type { WorkSettings } from '../work/queue.ts';
import { DEAD_LETTER_RETRY_TOPIC } from '../work/dead-letter-service.ts';
import { OUTBOX_QUEUE, OutboxRepository } from './repository.ts';
import type { OutboxRow } from './repository.ts';

/** Which modules act on each fact: declared by the consuming modules, known to every process. */
export type FactConsumers = Partial<Record<Topic, readonly string[]>>;

/** Acts on one fact; `signal` aborts when the handler has run past its timeout or the process stops. */
export type FactHandler<T extends Topic> = (payload: DomainEvents[T], signal: AbortSignal) => Promise<void> | void;

/** What a repository needs to record a fact inside its own transaction. */
export interface FactRecorder {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the caller's transaction, over its own tables
  record<T extends Topic>(trx: Kysely<any>, topic: T, payload: DomainEvents[T]): Promise<void>;
}

export interface OutboxOptions extends Partial<WorkSettings> {
  database: Database;
  consumers: FactConsumers;
  bus: EventBus;
  log: FastifyBaseLogger;
  /** Where the outbox reports its depth, age, dead letters and failures; absent where a test builds it by hand. */
  metrics?: QueueMetrics;
  /** How often due work is looked for without a hint (split mode without Redis relies on it). */
  pollMs?: number;
  /** The delay before a failed handler's first retry; it doubles with each attempt up to a minute. */
  firstRetryMs?: number;
}

/** Rows one claim takes at most; their handled facts are deleted together. */
export const OUTBOX_CLAIM_SIZE = 50;

/**
 * Facts that other modules must act on (DESIGN §1): recorded in the same transaction as the change,
 * one row per consuming module, and handed to that module's handler by whichever instance claims
 * the row first, through the durable-work queue (`../work/queue.ts`: leases renewed while a handler
 * runs, a handler timeout, an attempt cap, then the dead letters). A row is deleted only after its
 * handler succeeded, together with the other rows of its claim that succeeded (one statement, one
 * commit), so a crash or a failing handler delays the effect, never loses it; handlers are
 * idempotent because a crash after the effect and before the delete runs them again. A failing
 * handler is retried with backoff and delays only its own rows.
 */
export class Outbox implements FactRecorder {
  private readonly consumers: FactConsumers;
  private readonly handlers = new Map<string, FactHandler<Topic>>();
  private readonly bus: EventBus;
  private readonly queue: WorkQueue<OutboxRow>;

  constructor(options: OutboxOptions) {
    this.consumers = options.consumers;
    this.bus = options.bus;
    this.queue = new WorkQueue<OutboxRow>({
      name: OUTBOX_QUEUE,
      log: options.log,
      metrics: options.metrics,
      maxAttempts: options.maxAttempts,
      handlerTimeoutMs: options.handlerTimeoutMs,
      leaseMs: options.leaseMs,
      pollMs: options.pollMs,
      firstRetryMs: options.firstRetryMs,
      store: new OutboxRepository(options.database),
      consumers: () => [...new Set([...this.handlers.keys()].map((name) => name.split('\0')[0] as string))],
      handle: (row, signal) => this.handle(row, signal),
      claimSize: OUTBOX_CLAIM_SIZE,
    });
    // An administrator's retry of a dead letter, wherever it was asked: the owner of its consumer puts it back.
    this.bus.on(DEAD_LETTER_RETRY_TOPIC, ({ queue }) => {
      if (queue === OUTBOX_QUEUE) this.queue.retryRequested();
    });
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the caller's transaction, over its own tables
  async record<T extends Topic>(trx: Kysely<any>, topic: T, payload: DomainEvents[T]): Promise<void> {
    const consumers = this.consumers[topic] ?? [];
    if (consumers.length > 0) await OutboxRepository.insert(trx, consumers, topic, JSON.stringify(payload), Date.now());
  }

  /** Registers `module`'s handler of `topic`; the module must be declared among the topic's consumers. */
  consume<T extends Topic>(module: string, topic: T, handler: FactHandler<T>): void {
    if (!this.consumers[topic]?.includes(module)) throw new Error(`${module} is not declared as a consumer of ${topic}`);
    const followed = [...this.handlers.keys()].some((name) => name.endsWith(`\0${topic}`));
    this.handlers.set(key(module, topic), handler as FactHandler<Topic>);
    // Every fact is also published as a hint after its commit: it wakes the consumers of every instance at once.
    if (!followed) this.bus.on(topic, () => this.wake());
  }

  start(): void {
    this.queue.start();
  }

  /** Stops claiming and waits for the pass in flight (a handler that ignores its signal is left to its lease). */
  stop(): Promise<void> {
    return this.queue.stop();
  }

  /** Looks for due facts now; a call during a pass makes the pass run once more. */
  wake(): void {
    this.queue.wake();
  }

  /** Runs every due fact of this process's consumers, and the retries administrators asked for (tests and shutdown wait on it). */
  drainNow(): Promise<void> {
    return this.queue.drainNow();
  }

  private async handle(row: OutboxRow, signal: AbortSignal): Promise<void> {
    const handler = this.handlers.get(key(row.consumer, row.topic));
    if (!handler) throw new Error(`no handler of ${row.topic} in ${row.consumer}`);
    await handler(JSON.parse(row.payload), signal);
  }
}

function key(module: string, topic: string): string {
  return `${module}\0${topic}`;
}
