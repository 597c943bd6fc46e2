export interface GroupCommitOptions<T> {
  /** Rows one write takes at most (an item is never split; one larger than this is written alone). */
  batchSize: number;
  /** How long an idle writer waits for more items before it writes; 0 writes on the next turn of the event loop. */
  delayMs: number;
  /** How many rows an item adds to a batch. */
  rowsOf(item: T): number;
  /** Makes the items durable, all or none; resolves once they are. */
  write(items: T[]): Promise<void>;
}

interface Waiter<T> {
  item: T;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Group commit: items queued while a write is in flight go together into the next one, so the
 * number of transactions stays low however many devices send at once, and each caller learns
 * when its own item is durable. Writes never overlap. When a batch fails, its items are written
 * one by one, so a single bad item fails alone.
 */
export class GroupCommit<T> {
  readonly #options: GroupCommitOptions<T>;
  #queue: Waiter<T>[] = [];
  #queuedRows = 0;
  #timer: { kind: 'timeout'; handle: NodeJS.Timeout } | { kind: 'immediate'; handle: NodeJS.Immediate } | undefined;
  #writing: Promise<void> | undefined;

  constructor(options: GroupCommitOptions<T>) {
    this.#options = options;
  }

  /** Resolves once the item is durable; rejects with the write's error. */
  add(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      this.#queuedRows += this.#options.rowsOf(item);
      this.#schedule();
    });
  }

  /** Resolves once everything queued so far has been written (or has failed). */
  async drain(): Promise<void> {
    while (this.#queue.length > 0 || this.#writing) {
      if (!this.#writing) this.#start();
      await this.#writing;
    }
  }

  /**
   * A write starts on a later turn of the event loop, never synchronously: with an embedded
   * database whose calls never wait on I/O, writes started from each other's callbacks would
   * otherwise run back to back and starve the sockets and timers.
   */
  #schedule(): void {
    // A write in flight takes the queue when it ends.
    if (this.#writing) return;
    const full = this.#queuedRows >= this.#options.batchSize || this.#options.delayMs === 0;
    if (full && this.#timer?.kind !== 'immediate') {
      this.#clearTimer();
      this.#timer = { kind: 'immediate', handle: setImmediate(() => this.#start()) };
    } else if (this.#timer === undefined) {
      this.#timer = { kind: 'timeout', handle: setTimeout(() => this.#start(), this.#options.delayMs) };
    }
  }

  #start(): void {
    this.#clearTimer();
    if (this.#writing || this.#queue.length === 0) return;
    this.#writing = this.#writeAll().finally(() => {
      this.#writing = undefined;
      // Items added between the last look at the queue and now found a write in flight.
      if (this.#queue.length > 0) this.#schedule();
    });
  }

  #clearTimer(): void {
    if (this.#timer?.kind === 'timeout') clearTimeout(this.#timer.handle);
    if (this.#timer?.kind === 'immediate') clearImmediate(this.#timer.handle);
    this.#timer = undefined;
  }

  async #writeAll(): Promise<void> {
    for (;;) {
      await this.#writeBatch(this.#take());
      if (this.#queue.length === 0) return;
      // I/O first: it grows the next batch (see #schedule).
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  #take(): Waiter<T>[] {
    let rows = 0;
    let count = 0;
    while (count < this.#queue.length) {
      const itemRows = this.#options.rowsOf((this.#queue[count] as Waiter<T>).item);
      if (count > 0 && rows + itemRows > this.#options.batchSize) break;
      rows += itemRows;
      count++;
    }
    this.#queuedRows -= rows;
    return this.#queue.splice(0, count);
  }

  async #writeBatch(batch: Waiter<T>[]): Promise<void> {
    try {
      await this.#options.write(batch.map((waiter) => waiter.item));
    } catch (error) {
      if (batch.length === 1) {
        (batch[0] as Waiter<T>).reject(error);
        return;
      }
      for (const waiter of batch) await this.#writeBatch([waiter]);
      return;
    }
    for (const waiter of batch) waiter.resolve();
  }
}
