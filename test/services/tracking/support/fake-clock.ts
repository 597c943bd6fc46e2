import { systemClock } from '../../../../src/services/tracking/throttled-writer.ts';
import type { Clock } from '../../../../src/services/tracking/throttled-writer.ts';

/** A clock that moves only when told: advance() runs the timers that fall due, in time order. */
export class FakeClock implements Clock {
  #now: number;
  #timers: { at: number; callback: () => void }[] = [];

  constructor(start = 1_000_000) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  after(ms: number, callback: () => void): () => void {
    const timer = { at: this.#now + ms, callback };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((other) => other !== timer);
    };
  }

  /** Timers waiting. */
  get pending(): number {
    return this.#timers.length;
  }

  advance(ms: number): void {
    const until = this.#now + ms;
    for (;;) {
      const next = this.#timers.filter((timer) => timer.at <= until).sort((a, b) => a.at - b.at)[0];
      if (!next) break;
      this.#timers = this.#timers.filter((timer) => timer !== next);
      this.#now = next.at;
      next.callback();
    }
    this.#now = until;
  }
}

/** The system's time and timers, moved ahead by skip(): for a whole server, whose other timers must keep running. */
export class SkippingClock implements Clock {
  #ahead = 0;

  now(): number {
    return Date.now() + this.#ahead;
  }

  after(ms: number, callback: () => void): () => void {
    return systemClock.after(ms, callback);
  }

  skip(ms: number): void {
    this.#ahead += ms;
  }
}
