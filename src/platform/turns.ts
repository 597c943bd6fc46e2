// Taking turns with the rest of the process: work that runs on answers that never give the event
// loop back (SQLite's synchronous queries, cached look-ups, CPU-bound steps) waits here between pieces.

/** How long a loop of such work runs before it gives the process a turn: well under a millisecond. */
export const SLICE_MS = 0.5;

const waiting: (() => void)[] = [];
let scheduled = false;

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  setImmediate(releaseOne);
}

function releaseOne(): void {
  scheduled = false;
  waiting.shift()?.();
  // The next waiter in the next iteration, after the loop has polled for I/O. Scheduled from a
  // microtask: an immediate scheduled from within an immediate's callback left the loop's poll
  // waiting for its next timer or I/O (milliseconds per waiter, measured on Node 24), one scheduled
  // from a microtask does not.
  queueMicrotask(() => {
    if (waiting.length > 0) schedule();
  });
}

/**
 * Resolves in an iteration of the event loop of its own, after the loop has looked for I/O: one
 * waiter per iteration, first come first served. `setImmediate` alone resolves every waiter of an
 * iteration back to back, so a hundred pieces of work queued at once would still run as one block.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    schedule();
  });
}

/**
 * For a loop of synchronous steps: `await slice.pause()` between steps gives the process a turn
 * once the steps since the last one took `budgetMs`, by elapsed time rather than by count, so cheap
 * steps run many to a turn and costly ones one.
 */
export class TimeSlice {
  readonly #budgetMs: number;
  #since = performance.now();

  constructor(budgetMs = SLICE_MS) {
    this.#budgetMs = budgetMs;
  }

  async pause(): Promise<void> {
    if (performance.now() - this.#since < this.#budgetMs) return;
    await nextTurn();
    this.#since = performance.now();
  }
}
