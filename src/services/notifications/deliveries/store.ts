import type { QueueDepth, WorkItem, WorkStore } from '../../../platform/work/queue.ts';
import type { ClaimRoom, DeliveryRow, NotificationsRepository } from '../repository.ts';

/** A claimed delivery as the deliveries queue holds it: its consumer is its channel, its attempts its claims. */
export interface DeliveryItem extends WorkItem {
  row: DeliveryRow;
}

export interface DeliveryStoreOptions {
  repository: NotificationsRepository;
  /** Deliveries one user, and calls one webhook host (or the mail relay), have in hand in this process at most (NOTIFY_USER_CONCURRENCY, NOTIFY_HOST_CONCURRENCY). */
  perUser: number;
  perHost: number;
  /** A delivery an administrator takes back from the dead letters gets a new retry window of this length. */
  retryWindowMs: number;
}

/**
 * The deliveries table as the durable-work queue drives it. Its claim is fair: turn by turn across
 * users, skipping the users and webhook hosts at their concurrency in this process (counted from
 * the deliveries the queue has in hand), taking no more of each than its room.
 */
export class DeliveryStore implements WorkStore<DeliveryItem> {
  readonly #options: DeliveryStoreOptions;

  constructor(options: DeliveryStoreOptions) {
    this.#options = options;
  }

  async claim(_channels: readonly string[], now: number, leaseMs: number, limit: number, lease: string, inHand: readonly DeliveryItem[]): Promise<DeliveryItem[]> {
    const rows = await this.#options.repository.claim(now, leaseMs, limit, this.#room(inHand), lease);
    return rows.map((row) => ({ id: Number(row.id), consumer: row.channel, attempts: Number(row.claims), row }));
  }

  renew(ids: readonly number[], lease: string, until: number): Promise<void> {
    return this.#options.repository.renew(ids, lease, until);
  }

  /** Nothing left to do: the handler recorded the delivery's outcome itself (sent, failed, dropped, or retried at its endpoint's pace). */
  async complete(): Promise<void> {}

  retryLater(id: number, lease: string, at: number, error: string): Promise<void> {
    return this.#options.repository.crashed(id, lease, at, error);
  }

  release(ids: readonly number[], lease: string, at: number): Promise<void> {
    return this.#options.repository.postpone(ids, lease, at);
  }

  deadLetter(item: DeliveryItem, lease: string, error: string, now: number): Promise<void> {
    return this.#options.repository.deadLetter(item.row, lease, error, now);
  }

  restoreRequested(channels: readonly string[], now: number, limit: number): Promise<number> {
    return this.#options.repository.restoreRequested(channels, now, limit, now + this.#options.retryWindowMs);
  }

  depth(channels: readonly string[]): Promise<QueueDepth[]> {
    return this.#options.repository.depth(channels);
  }

  #room(inHand: readonly DeliveryItem[]): ClaimRoom {
    const { perUser, perHost } = this.#options;
    const users = new Map<number, number>();
    const hosts = new Map<string, number>();
    for (const { row } of inHand) {
      const user = Number(row.user_id);
      users.set(user, (users.get(user) ?? perUser) - 1);
      if (row.host !== null) hosts.set(row.host, (hosts.get(row.host) ?? perHost) - 1);
    }
    return { perUser, perHost, users, hosts };
  }
}
