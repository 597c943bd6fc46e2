import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import type { DeadLetterRepository } from './dead-letters.ts';
import type { QueueDepth } from './queue.ts';

interface WatchedQueue {
  consumers(): readonly string[];
  depth(consumers: readonly string[]): Promise<QueueDepth[]>;
}

/**
 * The durable-work metrics of one process (DESIGN §1): per queue and consumer, the items waiting
 * and the age of the oldest, the dead letters, and the failures by kind. Each process reports the
 * queues and consumers it runs, read from the database at each scrape, so that processes sharing a
 * database do not report the same series twice.
 */
export class QueueMetrics {
  private readonly queues = new Map<string, WatchedQueue>();
  private readonly failures: Counter<'queue' | 'consumer' | 'outcome'>;

  constructor(registry: Registry, deadLetters: DeadLetterRepository) {
    const queues = this.queues;
    const depths = async () => {
      const all: (QueueDepth & { queue: string })[] = [];
      for (const [queue, watched] of queues) {
        const consumers = watched.consumers();
        if (consumers.length === 0) continue;
        // A consumer with nothing waiting reports 0 rather than no series.
        const found = new Map((await watched.depth(consumers)).map((depth) => [depth.consumer, depth]));
        for (const consumer of consumers) all.push({ queue, ...(found.get(consumer) ?? { consumer, depth: 0, oldestAt: null }) });
      }
      return all;
    };
    new Gauge({
      name: 'trackstack_queue_depth',
      help: 'Durable work not yet done (due, retrying or being handled), by queue and consumer',
      labelNames: ['queue', 'consumer'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        for (const row of await depths()) this.set({ queue: row.queue, consumer: row.consumer }, row.depth);
      },
    });
    new Gauge({
      name: 'trackstack_queue_oldest_age_seconds',
      help: 'Age of the oldest durable work not yet done, by queue and consumer (0 when there is none)',
      labelNames: ['queue', 'consumer'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        const now = Date.now();
        for (const row of await depths()) this.set({ queue: row.queue, consumer: row.consumer }, row.oldestAt === null ? 0 : Math.max(0, now - row.oldestAt) / 1000);
      },
    });
    new Gauge({
      name: 'trackstack_queue_dead_letters',
      help: 'Durable work that failed past its attempt cap and waits for an administrator, by queue and consumer',
      labelNames: ['queue', 'consumer'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        for (const [queue, watched] of queues) {
          const consumers = watched.consumers();
          for (const consumer of consumers) this.set({ queue, consumer }, 0);
          for (const row of await deadLetters.counts(queue, consumers)) this.set({ queue, consumer: row.consumer }, row.count);
        }
      },
    });
    this.failures = new Counter({
      name: 'trackstack_queue_failures_total',
      help: 'Failed attempts of durable work by queue, consumer and outcome (retry, timeout, dead_letter)',
      labelNames: ['queue', 'consumer', 'outcome'] as const,
      registers: [registry],
    });
  }

  /** Reports `queue` from now on; a queue is watched once. */
  watch(queue: string, consumers: () => readonly string[], depth: (consumers: readonly string[]) => Promise<QueueDepth[]>): void {
    this.queues.set(queue, { consumers, depth });
  }

  failed(queue: string, consumer: string, outcome: 'retry' | 'timeout' | 'dead_letter'): void {
    this.failures.inc({ queue, consumer, outcome });
  }
}
