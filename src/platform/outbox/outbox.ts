import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { DomainEvents, EventBus, Topic } from '../bus.ts';
import type { Database } from '../db/database.ts';
import { OutboxRepository } from './repository.ts';
import type { OutboxRow } from './repository.ts';

/** Which modules act on each fact: declared by the consuming modules, known to every process. */
export type FactConsumers = Partial<Record<Topic, readonly string[]>>;

type FactHandler<T extends Topic> = (payload: DomainEvents[T]) => Promise<void> | void;

/** What a repository needs to record a fact inside its own transaction. */
export interface FactRecorder {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the caller's transaction, over its own tables
  record<T extends Topic>(trx: Kysely<any>, topic: T, payload: DomainEvents[T]): Promise<void>;
}

export interface OutboxOptions {
  database: Database;
  consumers: FactConsumers;
  bus: EventBus;
  log: FastifyBaseLogger;
  /** How often due work is looked for without a hint (split mode without Redis relies on it). */
  pollMs?: number;
  /** How long a claimed fact stays invisible to other instances; a crashed claimer's facts come back after it. */
  leaseMs?: number;
  /** The delay before a failed handler's first retry; it doubles with each attempt up to a minute. */
  firstRetryMs?: number;
}

/** Rows one claim takes at most; their handled facts are deleted together. */
export const OUTBOX_CLAIM_SIZE = 50;
const MAX_RETRY_MS = 60_000;

/**
 * Facts that other modules must act on (DESIGN §1): recorded in the same transaction as the change,
 * one row per consuming module, and handed to that module's handler by whichever instance claims
 * the row first. A row is deleted only after its handler succeeded, together with the other rows of
 * its claim that succeeded (one statement, one commit), so a crash or a failing handler delays the
 * effect, never loses it; handlers are idempotent because a crash after the effect and before the
 * delete runs them again. A failing handler is retried with backoff and delays only its own rows.
 */
export class Outbox implements FactRecorder {
  private readonly repository: OutboxRepository;
  private readonly consumers: FactConsumers;
  private readonly handlers = new Map<string, FactHandler<Topic>>();
  private readonly log: FastifyBaseLogger;
  private readonly bus: EventBus;
  private readonly pollMs: number;
  private readonly leaseMs: number;
  private readonly firstRetryMs: number;
  private timer: NodeJS.Timeout | undefined;
  private draining: Promise<void> | undefined;
  private again = false;
  private stopped = true;

  constructor(options: OutboxOptions) {
    this.repository = new OutboxRepository(options.database);
    this.consumers = options.consumers;
    this.bus = options.bus;
    this.log = options.log;
    this.pollMs = options.pollMs ?? 1000;
    this.leaseMs = options.leaseMs ?? 10_000;
    this.firstRetryMs = options.firstRetryMs ?? 1000;
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

  /**
   * Refuses to go on when one of `modules` (those this process runs) declares a fact it registered
   * no handler for: its rows would wait forever. Call it once the modules are created.
   */
  assertHandled(modules: readonly string[]): void {
    for (const [topic, consumers] of Object.entries(this.consumers)) {
      for (const module of consumers ?? []) {
        if (modules.includes(module) && !this.handlers.has(key(module, topic))) throw new Error(`${module} consumes ${topic} but registered no handler for it`);
      }
    }
  }

  start(): void {
    if (this.handlers.size === 0 || !this.stopped) return;
    this.stopped = false;
    this.timer = setInterval(() => this.wake(), this.pollMs);
    this.timer.unref();
    this.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.draining;
  }

  /** Looks for due facts now; a call during a pass makes the pass run once more. */
  wake(): void {
    if (this.stopped) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    this.draining = this.drain()
      .catch((error: unknown) => this.log.error({ err: error }, 'outbox: claiming facts failed'))
      .finally(() => {
        this.draining = undefined;
      });
  }

  /**
   * Runs every due fact of this process's consumers (tests and shutdown wait on it). Its pass is the
   * process's pass: a wake-up meanwhile makes it run once more instead of starting a second pass
   * that could claim a fact and leave this one to return before the fact is handled.
   */
  async drainNow(): Promise<void> {
    while (this.draining) await this.draining;
    if (this.handlers.size === 0) return;
    const pass = this.drain();
    this.draining = pass
      .catch(() => undefined)
      .finally(() => {
        this.draining = undefined;
      });
    await pass;
  }

  private async drain(): Promise<void> {
    const modules = [...new Set([...this.handlers.keys()].map((name) => name.split('\0')[0] as string))];
    do {
      this.again = false;
      const claimed = await this.repository.claim(modules, Date.now(), this.leaseMs, OUTBOX_CLAIM_SIZE);
      const handled: number[] = [];
      for (const row of claimed) if (await this.handle(row)) handled.push(row.id);
      await this.repository.complete(handled);
      if (claimed.length === OUTBOX_CLAIM_SIZE) this.again = true;
    } while (this.again && !this.stopped);
  }

  /** Runs the row's handler; true when it succeeded, else the row waits for its retry. */
  private async handle(row: OutboxRow): Promise<boolean> {
    const handler = this.handlers.get(key(row.consumer, row.topic));
    try {
      if (!handler) throw new Error(`no handler of ${row.topic} in ${row.consumer}`);
      await handler(JSON.parse(row.payload));
      return true;
    } catch (error) {
      const delay = Math.min(MAX_RETRY_MS, this.firstRetryMs * 2 ** Math.min(row.attempts - 1, 16));
      this.log.error({ err: error, consumer: row.consumer, topic: row.topic, attempts: row.attempts }, 'outbox: handler failed; retrying');
      await this.repository.retryLater(row.id, Date.now() + delay, String((error as Error)?.message ?? error).slice(0, 500));
      return false;
    }
  }
}

function key(module: string, topic: string): string {
  return `${module}\0${topic}`;
}
