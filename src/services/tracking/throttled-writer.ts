/** The time, and timers on it: the system's in production, a fake one in tests. */
export interface Clock {
  now(): number;
  /** Calls back once `ms` have passed; returns what cancels it. Never keeps the process alive. */
  after(ms: number, callback: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, callback) {
    const timer = setTimeout(callback, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

export interface ThrottledWriterOptions {
  /** Least time between the starts of two writes. */
  intervalMs: number;
  clock: Clock;
  /** Whether changes wait that may be written now. */
  pending(): boolean;
  /**
   * Takes every waiting change and writes it; undefined when there was nothing to write after
   * all (the interval then does not start again). Must not reject.
   */
  write(): Promise<void> | undefined;
}

/**
 * Writes merged changes at most once per interval: a change that comes within the interval of the
 * last write waits for its end, and every change made meanwhile goes with it. Writes never
 * overlap: changes made during one are written after it, the interval permitting. Used for the
 * devices' status fields of ingestion and the devices messages of live updates.
 */
export class ThrottledWriter {
  readonly #options: ThrottledWriterOptions;
  #lastWriteAt = Number.NEGATIVE_INFINITY;
  #cancelTimer: (() => void) | undefined;
  #writing: Promise<void> | undefined;
  #stopped = false;

  constructor(options: ThrottledWriterOptions) {
    this.#options = options;
  }

  /** Changes wait: they are written now if the interval has passed, else when it has. */
  request(): void {
    if (this.#stopped || this.#writing || this.#cancelTimer || !this.#options.pending()) return;
    const wait = this.#lastWriteAt + this.#options.intervalMs - this.#options.clock.now();
    if (wait <= 0) {
      this.#start();
      return;
    }
    this.#cancelTimer = this.#options.clock.after(wait, () => {
      this.#cancelTimer = undefined;
      this.#start();
    });
  }

  /** Writes what waits now, whatever the interval (settling, shutting down); resolves once it is written. */
  async flush(): Promise<void> {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    while (this.#writing) await this.#writing;
    this.#start();
    await this.#writing;
  }

  /** No more timed writes; flush() still writes. */
  stop(): void {
    this.#stopped = true;
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
  }

  #start(): void {
    const writing = this.#options.write();
    if (!writing) return;
    this.#lastWriteAt = this.#options.clock.now();
    this.#writing = writing.finally(() => {
      this.#writing = undefined;
      this.request();
    });
  }
}
