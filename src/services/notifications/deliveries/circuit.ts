/** After this many failures in a row, a target is left alone for a while. */
const FAILURES_TO_OPEN = 5;
const OPEN_MS = 30_000;
/** Deliveries one target may have waiting in this process for a free slot; more go back to the queue. */
const MAX_WAITING = 32;
/** Targets whose state is remembered; the quietest are forgotten first. */
const MAX_TARGETS = 10_000;

interface TargetState {
  inFlight: number;
  failures: number;
  openUntil: number;
  waiting: (() => void)[];
}

/** Go ahead (a slot is held until `release`), or come back at `retryAt`: the circuit is `open`, or the target too busy. */
export type Admission = { go: true } | { go: false; retryAt: number; open: boolean };

const GO: Admission = { go: true };

/**
 * Per-target concurrency and a circuit breaker, per process: a slow endpoint holds at most
 * `perTarget` sends and a few waiting deliveries, and one that keeps failing is not called for 30 s
 * (then one attempt at a time decides whether it is back), so it costs its own deliveries time,
 * never anyone else's.
 */
export class TargetGuard {
  readonly #perTarget: number;
  readonly #targets = new Map<string, TargetState>();
  readonly #now: () => number;

  constructor(perTarget: number, now: () => number = Date.now) {
    this.#perTarget = perTarget;
    this.#now = now;
  }

  async acquire(target: string): Promise<Admission> {
    const state = this.#state(target);
    const now = this.#now();
    if (state.openUntil > now) return { go: false, retryAt: state.openUntil, open: true };
    // Half open: one probe at a time until a success closes the circuit.
    const limit = state.failures >= FAILURES_TO_OPEN ? 1 : this.#perTarget;
    if (state.inFlight < limit) {
      state.inFlight += 1;
      return GO;
    }
    if (state.waiting.length >= MAX_WAITING) return { go: false, retryAt: now + 1000, open: false };
    // The slot is handed over by release(), still counted in inFlight.
    await new Promise<void>((resolve) => state.waiting.push(resolve));
    if (state.openUntil > this.#now()) {
      this.#handOver(target, state);
      return { go: false, retryAt: state.openUntil, open: true };
    }
    return GO;
  }

  /** Frees the slot; `healthy` false (a retryable failure) counts towards opening the circuit. */
  release(target: string, healthy: boolean): void {
    const state = this.#state(target);
    if (healthy) {
      state.failures = 0;
      state.openUntil = 0;
    } else {
      state.failures += 1;
      if (state.failures >= FAILURES_TO_OPEN) state.openUntil = this.#now() + OPEN_MS;
    }
    this.#handOver(target, state);
  }

  /** Frees the slot of a delivery that was not sent after all: says nothing of the target's health (a half-open circuit stays so). */
  giveBack(target: string): void {
    this.#handOver(target, this.#state(target));
  }

  #handOver(target: string, state: TargetState): void {
    const next = state.waiting.shift();
    if (next) {
      next();
      return;
    }
    state.inFlight = Math.max(0, state.inFlight - 1);
    if (state.inFlight === 0 && state.failures === 0) this.#targets.delete(target);
  }

  #state(target: string): TargetState {
    let state = this.#targets.get(target);
    if (!state) {
      if (this.#targets.size >= MAX_TARGETS) {
        for (const [key, value] of this.#targets) {
          if (value.inFlight === 0) {
            this.#targets.delete(key);
            break;
          }
        }
      }
      this.#targets.set(target, (state = { inFlight: 0, failures: 0, openUntil: 0, waiting: [] }));
    }
    return state;
  }
}
