import type { FastifyBaseLogger } from 'fastify';
import { randomToken } from '../crypto.ts';
import type { QueueMetrics } from './metrics.ts';

/** What a queue's store hands the queue: its row's id, its consumer (label of the metrics and letters), and the claims it has had. */
export interface WorkItem {
  id: number;
  consumer: string;
  /** Claims so far, this one included: a claim counts an attempt, so a handler that crashes its process counts too. */
  attempts: number;
}

/** How many items of one consumer wait (due, retrying or held), and since when the oldest. */
export interface QueueDepth {
  consumer: string;
  depth: number;
  oldestAt: number | null;
}

/**
 * A queue's table, as the queue drives it (DESIGN §2: one table-backed queue over Kysely). Every
 * write after the claim names the claim's lease: a claim whose lease lapsed, and which another
 * instance has taken since, changes nothing.
 */
export interface WorkStore<I extends WorkItem> {
  /** Takes up to `limit` due items of `consumers` in id order for `leaseMs` under `lease`, counting an attempt on each. */
  claim(consumers: readonly string[], now: number, leaseMs: number, limit: number, lease: string): Promise<I[]>;
  /** Pushes the lease of items still held to `until`. */
  renew(ids: readonly number[], lease: string, until: number): Promise<void>;
  /** The items whose handler succeeded: done. */
  complete(ids: readonly number[], lease: string): Promise<void>;
  /** A failed item, due again at `at`. */
  retryLater(id: number, lease: string, at: number, error: string): Promise<void>;
  /** Items claimed but not run (the process is stopping): due at once, the attempt not counted. */
  release(ids: readonly number[], lease: string, now: number): Promise<void>;
  /** Moves an item past the cap to the dead letters, in one transaction. */
  deadLetter(item: I, lease: string, error: string, now: number): Promise<void>;
  /** Puts the dead letters of `consumers` an administrator asked to retry back in the queue, attempts from zero; how many. */
  restoreRequested(consumers: readonly string[], now: number, limit: number): Promise<number>;
  depth(consumers: readonly string[]): Promise<QueueDepth[]>;
}

/** The settings every queue shares (QUEUE_MAX_ATTEMPTS, QUEUE_HANDLER_TIMEOUT, QUEUE_LEASE; docs/architecture.md). */
export interface WorkSettings {
  /** Attempts before an item goes to the dead letters. */
  maxAttempts: number;
  /** How long a handler may run; past it the attempt has failed, and its signal is aborted. */
  handlerTimeoutMs: number;
  /** How long a claim holds its items; renewed every third of it while they are held, so it only lapses when the holder is gone. */
  leaseMs: number;
}

export const DEFAULT_WORK_SETTINGS: WorkSettings = { maxAttempts: 20, handlerTimeoutMs: 120_000, leaseMs: 10_000 };

export interface WorkQueueOptions<I extends WorkItem> extends Partial<WorkSettings> {
  /** The queue's name: its dead letters' `queue` and its metrics' label. */
  name: string;
  store: WorkStore<I>;
  /** The consumers this process runs: it claims, restores and measures only theirs. */
  consumers(): readonly string[];
  /** Runs one item; should give up when `signal` aborts (the handler timed out or the process stops). */
  handle(item: I, signal: AbortSignal): Promise<void>;
  log: FastifyBaseLogger;
  metrics?: QueueMetrics;
  /** How often due work is looked for without a wake-up (split mode without Redis relies on it). */
  pollMs?: number;
  /** The delay before a failed item's first retry; it doubles with each attempt up to a minute. */
  firstRetryMs?: number;
  /** Items one claim takes at most. */
  claimSize?: number;
}

const MAX_RETRY_MS = 60_000;

/** What a handler that never settles is told, and what its item keeps as its last error. */
export class HandlerTimeoutError extends Error {
  constructor(ms: number) {
    super(`the handler did not finish within ${ms} ms`);
  }
}

/**
 * Durable work with an end (DESIGN §1): items of a table, claimed for a lease by whichever
 * instance comes first, handed one by one in id order to the handler, and deleted only once it
 * succeeded, so a crash delays work and never loses it. While a claim's items are held their lease
 * is renewed, so a slow but live handler keeps them; a handler that does not finish within its
 * timeout has failed, and the queue goes on. A failed item is retried with backoff and delays only
 * itself; past the attempt cap it moves to the dead letters, where an administrator lists it and
 * asks for a retry, which the queue's owner carries out at its next pass.
 */
export class WorkQueue<I extends WorkItem> {
  readonly name: string;
  private readonly options: WorkQueueOptions<I>;
  private readonly settings: WorkSettings;
  private readonly pollMs: number;
  private readonly firstRetryMs: number;
  private readonly claimSize: number;
  /** Set by stop(), cleared by start(): unlike `stopped`, false for a queue never started (drainNow in tests and tools). */
  private stopping = false;
  /** The running handler's abort, for stop(). */
  private current: AbortController | undefined;
  private timer: NodeJS.Timeout | undefined;
  private draining: Promise<void> | undefined;
  private again = false;
  private stopped = true;

  constructor(options: WorkQueueOptions<I>) {
    this.name = options.name;
    this.options = options;
    this.settings = {
      maxAttempts: options.maxAttempts ?? DEFAULT_WORK_SETTINGS.maxAttempts,
      handlerTimeoutMs: options.handlerTimeoutMs ?? DEFAULT_WORK_SETTINGS.handlerTimeoutMs,
      leaseMs: options.leaseMs ?? DEFAULT_WORK_SETTINGS.leaseMs,
    };
    this.pollMs = options.pollMs ?? 1000;
    this.firstRetryMs = options.firstRetryMs ?? 1000;
    this.claimSize = options.claimSize ?? 50;
    options.metrics?.watch(this.name, options.consumers, (consumers) => options.store.depth(consumers));
  }

  start(): void {
    if (this.options.consumers().length === 0 || !this.stopped) return;
    this.stopped = false;
    this.stopping = false;
    this.timer = setInterval(() => this.wake(), this.pollMs);
    this.timer.unref();
    this.wake();
  }

  /**
   * Stops claiming and waits for the pass in flight: the rest of its claim is released at once, and
   * the item being handled is told to stop (its signal) and left to its lease, which is no longer
   * renewed, so that a handler that does not listen cannot hold the shutdown.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.stopping = true;
    this.current?.abort(new Error('the process is stopping'));
    await this.draining;
  }

  /** Looks for due work now; a call during a pass makes the pass run once more. */
  wake(): void {
    if (this.stopped) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    this.draining = this.drain()
      .catch((error: unknown) => this.options.log.error({ err: error, queue: this.name }, 'work queue: claiming failed'))
      .finally(() => {
        this.draining = undefined;
      });
  }

  /**
   * Runs every due item of this process's consumers (tests and shutdown wait on it). Its pass is the
   * process's pass: a wake-up meanwhile makes it run once more instead of starting a second pass
   * that could claim an item and leave this one to return before the item is handled.
   */
  async drainNow(): Promise<void> {
    while (this.draining) await this.draining;
    if (this.options.consumers().length === 0) return;
    const pass = this.drain();
    this.draining = pass
      .catch(() => undefined)
      .finally(() => {
        this.draining = undefined;
      });
    await pass;
  }

  private async drain(): Promise<void> {
    const consumers = this.options.consumers();
    await this.options.store.restoreRequested(consumers, Date.now(), this.claimSize);
    do {
      this.again = false;
      const lease = randomToken(12);
      const claimed = await this.options.store.claim(consumers, Date.now(), this.settings.leaseMs, this.claimSize, lease);
      if (claimed.length > 0) await this.runClaim(claimed, lease);
      if (claimed.length === this.claimSize) this.again = true;
    } while (this.again && !this.stopped);
  }

  /** Runs a claim's items in order while renewing the lease of those not yet settled; the succeeded ones are deleted together. */
  private async runClaim(claimed: readonly I[], lease: string): Promise<void> {
    const { store, log } = this.options;
    const held = new Set(claimed.map((item) => item.id));
    const stopRenewing = renewEvery(this.settings.leaseMs, () => store.renew([...held], lease, Date.now() + this.settings.leaseMs), log, this.name);
    try {
      const succeeded: number[] = [];
      for (const item of claimed) {
        if (this.stopping) break;
        const outcome = await this.run(item, lease);
        if (outcome === 'succeeded') succeeded.push(item.id);
        else held.delete(item.id);
      }
      await store.complete(succeeded, lease);
      for (const id of succeeded) held.delete(id);
      if (held.size > 0) await store.release([...held], lease, Date.now());
    } finally {
      stopRenewing();
    }
  }

  /** Runs the item's handler: it succeeded, or failed (it waits for its retry or went to the dead letters), or was abandoned as the process stops. */
  private async run(item: I, lease: string): Promise<'succeeded' | 'failed' | 'abandoned'> {
    const { store, log, metrics } = this.options;
    const { maxAttempts } = this.settings;
    let error: unknown;
    if (item.attempts > maxAttempts) {
      // Claimed past the cap without an outcome: its handler ended the process (or its lease) every time.
      error = new Error(`claimed ${item.attempts - 1} times without an outcome`);
    } else {
      try {
        await this.withTimeout(item);
        return 'succeeded';
      } catch (failure) {
        if (this.stopping) return 'abandoned';
        error = failure;
      }
    }
    const message = String((error as Error)?.message ?? error).slice(0, 500);
    const timedOut = error instanceof HandlerTimeoutError;
    const context = { err: error, queue: this.name, consumer: item.consumer, item: item.id, attempts: item.attempts };
    if (item.attempts >= maxAttempts) {
      log.error(context, 'work queue: an item failed past its attempt cap; moved to the dead letters');
      await store.deadLetter(item, lease, message, Date.now());
      metrics?.failed(this.name, item.consumer, 'dead_letter');
      return 'failed';
    }
    log.error(context, timedOut ? 'work queue: a handler timed out; retrying' : 'work queue: a handler failed; retrying');
    await store.retryLater(item.id, lease, Date.now() + retryDelay(this.firstRetryMs, item.attempts), message);
    metrics?.failed(this.name, item.consumer, timedOut ? 'timeout' : 'retry');
    return 'failed';
  }

  private async withTimeout(item: I): Promise<void> {
    const abort = new AbortController();
    this.current = abort;
    try {
      await runWithTimeout(this.settings.handlerTimeoutMs, abort, (signal) => this.options.handle(item, signal));
    } finally {
      this.current = undefined;
    }
  }
}

/**
 * Runs `run` with `abort`'s signal, which aborts past `ms` with a HandlerTimeoutError; rejects with
 * the signal's reason as soon as it aborts (the timeout, or the caller's stop) even if `run` does
 * not listen. Every queue's handler runs through it.
 */
export async function runWithTimeout<T>(ms: number, abort: AbortController, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  // Settles only when the signal aborts: at the timeout, or when the caller stops it.
  const aborted = new Promise<never>((_resolve, reject) => {
    abort.signal.addEventListener('abort', () => reject(abort.signal.reason as Error), { once: true });
    timer = setTimeout(() => abort.abort(new HandlerTimeoutError(ms)), ms);
  });
  try {
    return await Promise.race([Promise.resolve().then(() => run(abort.signal)), aborted]);
  } finally {
    clearTimeout(timer);
  }
}

/** Calls `renew` every third of `leaseMs` until the returned function is called: a claim's holder keeps its items while it lives. */
export function renewEvery(leaseMs: number, renew: () => Promise<void>, log: FastifyBaseLogger, queue: string): () => void {
  const timer = setInterval(() => {
    renew().catch((error: unknown) => log.warn({ err: error, queue }, 'work queue: renewing a lease failed'));
  }, Math.max(1, Math.floor(leaseMs / 3)));
  return () => clearInterval(timer);
}

/** The delay before an item's next try after `attempts` failed ones: `firstMs` doubling up to a minute. */
export function retryDelay(firstMs: number, attempts: number): number {
  return Math.min(MAX_RETRY_MS, firstMs * 2 ** Math.min(attempts - 1, 16));
}
