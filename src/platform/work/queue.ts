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
  /**
   * Takes up to `limit` due items of `consumers` in id order for `leaseMs` under `lease`, counting an
   * attempt on each. `inHand` is what this process holds and has not settled yet (running, or
   * waiting for a free handler): a store with caps per key (per user, per host) leaves out the keys
   * at their cap and takes no more of each than its room.
   */
  claim(consumers: readonly string[], now: number, leaseMs: number, limit: number, lease: string, inHand: readonly I[]): Promise<I[]>;
  /** Pushes the lease of items still held to `until`. */
  renew(ids: readonly number[], lease: string, until: number): Promise<void>;
  /** The items whose handler succeeded: done. */
  complete(ids: readonly number[], lease: string): Promise<void>;
  /** A failed item, due again at `at`. */
  retryLater(id: number, lease: string, at: number, error: string): Promise<void>;
  /** Items claimed but not run (the process is stopping), or postponed by their handler: due at `at`, the attempt not counted, the claim over. */
  release(ids: readonly number[], lease: string, at: number): Promise<void>;
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

/** A handler's answer that its item cannot be handled before `until` (a rate, a busy target): not an attempt, and not claimed again before then. */
export interface Postponed {
  postponedUntil: number;
}

export function postponeUntil(until: number): Postponed {
  return { postponedUntil: until };
}

export interface WorkQueueOptions<I extends WorkItem> extends Partial<WorkSettings> {
  /** The queue's name: its dead letters' `queue` and its metrics' label. */
  name: string;
  store: WorkStore<I>;
  /** The consumers this process runs: it claims, restores and measures only theirs. */
  consumers(): readonly string[];
  /** Runs one item; should give up when `signal` aborts (the handler timed out or the process stops). */
  handle(item: I, signal: AbortSignal): Promise<void | Postponed>;
  log: FastifyBaseLogger;
  metrics?: QueueMetrics | undefined;
  /** How often due work is looked for without a wake-up (split mode without Redis relies on it). */
  pollMs?: number | undefined;
  /** The delay before a failed item's first retry; it doubles with each attempt up to a minute. */
  firstRetryMs?: number | undefined;
  /** Items one claim takes at most. */
  claimSize?: number | undefined;
  /**
   * Handlers running at once (1: one by one, in id order). A handler slot that frees claims again
   * while claims find work; this process holds at most max(concurrency, claimSize) items.
   */
  concurrency?: number | undefined;
  /** How often a pass looks for dead letters an administrator asked to retry (1 s; 0: every pass); retryRequested() makes the next pass look at once. */
  restoreEveryMs?: number | undefined;
  now?: (() => number) | undefined;
}

const MAX_RETRY_MS = 60_000;

/** What a handler that never settles is told, and what its item keeps as its last error. */
export class HandlerTimeoutError extends Error {
  constructor(ms: number) {
    super(`the handler did not finish within ${ms} ms`);
  }
}

/** The items of one claim: those that succeeded are completed together once none of them is left to settle. */
interface Claim {
  lease: string;
  unsettled: number;
  succeeded: number[];
}

interface Held<I> {
  item: I;
  claim: Claim;
}

type Outcome = 'succeeded' | 'postponed' | 'failed' | 'abandoned';

/**
 * Durable work with an end (DESIGN §1), and the one claim loop of the tree: items of a table,
 * claimed for a lease by whichever instance comes first, handed to up to `concurrency` handlers at
 * once in id order, and deleted only once their handler succeeded, so a crash delays work and never
 * loses it. While items are held their lease is renewed, so a slow but live handler keeps them; a
 * handler that does not finish within its timeout has failed, and the queue goes on. A failed item
 * is retried with backoff and delays only itself; past the attempt cap it moves to the dead letters,
 * where an administrator lists it and asks for a retry, which the queue's owner carries out at its
 * next pass. A handler may postpone its item instead (a rate, a busy target): that is no attempt.
 */
export class WorkQueue<I extends WorkItem> {
  readonly name: string;
  private readonly options: WorkQueueOptions<I>;
  private readonly settings: WorkSettings;
  private readonly pollMs: number;
  private readonly firstRetryMs: number;
  private readonly claimSize: number;
  private readonly concurrency: number;
  private readonly now: () => number;
  /** Set by stop(), cleared by start(): unlike `stopped`, false for a queue never started (drainNow in tests and tools). */
  private stopping = false;
  /** Claimed items waiting for a free handler, in claim order. */
  private readonly ready: Held<I>[] = [];
  /** Running handlers by item id: their item, their abort (for stop()), and their end (for drainNow() and stop()). */
  private readonly running = new Map<number, { item: I; abort: AbortController; done: Promise<void> }>();
  /** The lease of every item this process holds (waiting, running, or succeeded and not yet completed), renewed while any is. */
  private readonly leases = new Map<number, string>();
  private stopRenewing: (() => void) | undefined;
  /** Whether a handler slot that frees should claim again: the last claim took something, or items in hand may have kept some back. */
  private claimOnFree = false;
  private nextRestore = 0;
  private timer: NodeJS.Timeout | undefined;
  private draining: Promise<number> | undefined;
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
    this.concurrency = Math.max(1, options.concurrency ?? 1);
    this.now = options.now ?? Date.now;
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
   * Stops claiming and waits for the pass in flight: the claimed items not yet running are released
   * at once, and the running ones are told to stop (their signal) and left to their lease, which is
   * no longer renewed, so that a handler that does not listen cannot hold the shutdown.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.stopping = true;
    for (const { abort } of this.running.values()) abort.abort(new Error('the process is stopping'));
    await this.draining;
    await this.releaseReady();
    await Promise.allSettled([...this.running.values()].map(({ done }) => done));
  }

  /** Looks for due work now; a call during a pass makes the pass run once more. */
  wake(): void {
    if (this.stopped) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    const draining: Promise<number> = this.pass()
      .catch((error: unknown) => {
        this.options.log.error({ err: error, queue: this.name }, 'work queue: claiming failed');
        return 0;
      })
      .finally(() => {
        if (this.draining === draining) this.draining = undefined;
      });
    this.draining = draining;
  }

  /** An administrator asked to retry a dead letter of this queue: the next pass, now, takes it back. */
  retryRequested(): void {
    this.nextRestore = 0;
    this.wake();
  }

  /**
   * Runs every due item of this process's consumers (due by `dueBy`, else at each claim: a handler's
   * retry due meanwhile runs too) and waits for their handlers; tests and tools wait on it. A pass
   * already running is the same pass: a wake-up meanwhile makes it run once more.
   */
  async drainNow(dueBy?: number): Promise<void> {
    if (this.options.consumers().length === 0) return;
    // After stop(), as for a queue never started: the caller drains by hand.
    if (this.stopped) this.stopping = false;
    this.nextRestore = 0;
    for (;;) {
      while (this.draining) await this.draining;
      const pass = this.pass(dueBy);
      const draining = pass
        .catch(() => 0)
        .finally(() => {
          if (this.draining === draining) this.draining = undefined;
        });
      this.draining = draining;
      const taken = await pass;
      while (this.running.size > 0) await Promise.allSettled([...this.running.values()].map(({ done }) => done));
      // Done once a pass took nothing and no other pass (a wake-up's) began meanwhile.
      if (taken === 0 && this.ready.length === 0 && (this.draining ?? draining) === draining) return;
    }
  }

  /** Claims while claims find work and a handler slot is free, and starts their handlers; answers how many items it took. */
  private async pass(dueBy?: number): Promise<number> {
    const { store } = this.options;
    const consumers = this.options.consumers();
    const restoreEveryMs = this.options.restoreEveryMs ?? 1000;
    if (this.now() >= this.nextRestore) {
      this.nextRestore = this.now() + restoreEveryMs;
      // Due by the pass's time, so that drainNow takes them too.
      await store.restoreRequested(consumers, dueBy ?? this.now(), this.claimSize);
    }
    let taken = 0;
    do {
      this.again = false;
      if (this.stopping) break;
      if (this.ready.length > 0 || this.running.size >= this.concurrency) {
        // Busy: the slot that frees claims again.
        this.claimOnFree = true;
        break;
      }
      const inHand = [...this.ready.map(({ item }) => item), ...[...this.running.values()].map(({ item }) => item)];
      const limit = Math.min(this.claimSize, Math.max(this.concurrency, this.claimSize) - inHand.length);
      if (limit <= 0) break;
      const lease = randomToken(12);
      const claimed = await store.claim(consumers, dueBy ?? this.now(), this.settings.leaseMs, limit, lease, inHand);
      taken += claimed.length;
      this.claimOnFree = claimed.length > 0 || inHand.length > 0;
      if (claimed.length === 0) break;
      const claim: Claim = { lease, unsettled: claimed.length, succeeded: [] };
      for (const item of claimed) {
        this.ready.push({ item, claim });
        this.hold(item.id, lease);
      }
      this.startReady();
      // A claim that took something may have left work for the next one (other keys' turns, or more than its limit).
      this.again = true;
    } while (this.again);
    return taken;
  }

  /** Starts handlers for the claimed items waiting, in claim order, while a slot is free. */
  private startReady(): void {
    while (!this.stopping && this.running.size < this.concurrency) {
      const next = this.ready.shift();
      if (!next) return;
      const abort = new AbortController();
      const done = this.run(next.item, next.claim.lease, abort)
        .then((outcome) => this.settle(next, outcome))
        .catch((error: unknown) => this.options.log.error({ err: error, queue: this.name, item: next.item.id }, 'work queue: recording an outcome failed'))
        .finally(() => {
          this.running.delete(next.item.id);
          this.startReady();
          if (this.claimOnFree && this.ready.length === 0 && this.running.size < this.concurrency) this.wake();
        });
      this.running.set(next.item.id, { item: next.item, abort, done });
    }
  }

  /** Settles an item's claim: the succeeded ones stay held until the claim's last item settles, then are completed together. */
  private async settle({ item, claim }: Held<I>, outcome: Outcome): Promise<void> {
    if (outcome === 'succeeded') claim.succeeded.push(item.id);
    else this.unhold(item.id);
    claim.unsettled -= 1;
    if (claim.unsettled > 0 || claim.succeeded.length === 0) return;
    try {
      await this.options.store.complete(claim.succeeded, claim.lease);
    } finally {
      for (const id of claim.succeeded) this.unhold(id);
    }
  }

  /** Gives back the claimed items no handler took (the process is stopping): due at once, their attempt not counted. */
  private async releaseReady(): Promise<void> {
    const left = this.ready.splice(0);
    const byLease = new Map<string, Held<I>[]>();
    for (const held of left) byLease.set(held.claim.lease, [...(byLease.get(held.claim.lease) ?? []), held]);
    for (const [lease, items] of byLease) {
      await this.options.store.release(
        items.map(({ item }) => item.id),
        lease,
        this.now(),
      );
      for (const held of items) await this.settle(held, 'abandoned');
    }
  }

  private hold(id: number, lease: string): void {
    this.leases.set(id, lease);
    this.stopRenewing ??= renewEvery(this.settings.leaseMs, () => this.renew(), this.options.log, this.name);
  }

  private unhold(id: number): void {
    this.leases.delete(id);
    if (this.leases.size > 0) return;
    this.stopRenewing?.();
    this.stopRenewing = undefined;
  }

  private async renew(): Promise<void> {
    // Not once stopping: an abandoned handler's item comes back after its lease.
    if (this.stopping) return;
    const byLease = new Map<string, number[]>();
    for (const [id, lease] of this.leases) byLease.set(lease, [...(byLease.get(lease) ?? []), id]);
    const until = this.now() + this.settings.leaseMs;
    for (const [lease, ids] of byLease) await this.options.store.renew(ids, lease, until);
  }

  /**
   * Runs the item's handler: it succeeded, was postponed (given back, due at the time its handler
   * named), failed (it waits for its retry or went to the dead letters), or was abandoned as the
   * process stops.
   */
  private async run(item: I, lease: string, abort: AbortController): Promise<Outcome> {
    const { store, log, metrics } = this.options;
    const { maxAttempts } = this.settings;
    let error: unknown;
    if (item.attempts > maxAttempts) {
      // Claimed past the cap without an outcome: its handler ended the process (or its lease) every time.
      error = new Error(`claimed ${item.attempts - 1} times without an outcome`);
    } else {
      try {
        const answer = await runWithTimeout(this.settings.handlerTimeoutMs, abort, (signal) => this.options.handle(item, signal));
        if (!answer) return 'succeeded';
        await store.release([item.id], lease, answer.postponedUntil);
        return 'postponed';
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
      await store.deadLetter(item, lease, message, this.now());
      metrics?.failed(this.name, item.consumer, 'dead_letter');
      return 'failed';
    }
    log.error(context, timedOut ? 'work queue: a handler timed out; retrying' : 'work queue: a handler failed; retrying');
    await store.retryLater(item.id, lease, this.now() + retryDelay(this.firstRetryMs, item.attempts), message);
    metrics?.failed(this.name, item.consumer, timedOut ? 'timeout' : 'retry');
    return 'failed';
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
