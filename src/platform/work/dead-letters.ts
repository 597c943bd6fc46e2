import type { Generated, Kysely, Selectable } from 'kysely';
import { engineOf } from '../db/database.ts';
import type { Database } from '../db/database.ts';
import { TableAccess } from '../db/table-access.ts';

export interface DeadLetterTables {
  dead_letters: {
    id: Generated<number>;
    /** The queue the work came from (`outbox`, later `deliveries`, …) and the consumer within it (a module, a channel). */
    queue: string;
    consumer: string;
    /** What kind of work it is: the fact's topic for the outbox. */
    topic: string;
    /** The queue's own row, for a queue that keeps it (a failed delivery stays in its table); null when the letter holds all of it. */
    source_id: number | null;
    /** What the queue needs to run the work again. */
    payload: string;
    attempts: number;
    last_error: string | null;
    /** When the work was first queued, and when it gave up. */
    created_at: number;
    failed_at: number;
    /** Set by an administrator's retry; the queue's owner puts the work back at its next pass and deletes the letter. */
    retry_requested_at: number | null;
  };
}

export type DeadLetterRow = Selectable<DeadLetterTables['dead_letters']>;
export type NewDeadLetter = Omit<DeadLetterRow, 'id' | 'retry_requested_at'>;

export interface DeadLetterFilter {
  queue?: string | undefined;
  consumer?: string | undefined;
}

/** The count of dead letters of one queue's consumer (the metric). */
export interface DeadLetterCount {
  queue: string;
  consumer: string;
  count: number;
}

/**
 * The platform's `dead_letters` table: work that failed past its queue's attempt cap (DESIGN §1).
 * A queue's store writes its letters and takes back the retried ones inside its own transactions
 * (the static methods), so work is never in both places or in neither.
 */
export class DeadLetterRepository extends TableAccess<DeadLetterTables> {
  constructor(database: Database) {
    super(database.db as Kysely<DeadLetterTables>);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the queue store's transaction, over its own tables too
  static async insert(trx: Kysely<any>, letter: NewDeadLetter): Promise<void> {
    await (trx as Kysely<DeadLetterTables>).insertInto('dead_letters').values({ ...letter, retry_requested_at: null }).execute();
  }

  /**
   * Deletes and returns up to `limit` letters of `queue`'s `consumers` an administrator asked to
   * retry, in the caller's transaction; concurrent owners on PostgreSQL skip each other's.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the queue store's transaction, over its own tables too
  static async takeRequested(trx: Kysely<any>, queue: string, consumers: readonly string[], limit: number): Promise<DeadLetterRow[]> {
    const db = trx as Kysely<DeadLetterTables>;
    let requested = db
      .selectFrom('dead_letters')
      .select('id')
      .where('queue', '=', queue)
      .where('consumer', 'in', consumers)
      .where('retry_requested_at', 'is not', null)
      .orderBy('id')
      .limit(limit);
    if (engineOf(db) === 'postgres') requested = requested.forUpdate().skipLocked();
    const rows = await db.deleteFrom('dead_letters').where('id', 'in', requested).returningAll().execute();
    return rows.sort((a, b) => Number(a.id) - Number(b.id));
  }

  /** Deletes the letter of `queue`'s row `sourceId`, in the caller's transaction: the queue's owner took the work back another way. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the queue store's transaction, over its own tables too
  static async discard(trx: Kysely<any>, queue: string, sourceId: number): Promise<void> {
    await (trx as Kysely<DeadLetterTables>).deleteFrom('dead_letters').where('queue', '=', queue).where('source_id', '=', sourceId).execute();
  }

  async list(filter: DeadLetterFilter, offset: number, limit: number): Promise<{ rows: DeadLetterRow[]; total: number }> {
    let query = this.db.selectFrom('dead_letters');
    if (filter.queue !== undefined) query = query.where('queue', '=', filter.queue);
    if (filter.consumer !== undefined) query = query.where('consumer', '=', filter.consumer);
    const [rows, total] = await Promise.all([
      query.selectAll().orderBy('id', 'desc').offset(offset).limit(limit).execute(),
      query.select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirst(),
    ]);
    return { rows, total: Number(total?.count ?? 0) };
  }

  find(id: number): Promise<DeadLetterRow | undefined> {
    return this.db.selectFrom('dead_letters').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Marks the letter for its queue's owner to put back; the first request's time stays. Undefined when there is no such letter. */
  async requestRetry(id: number, now: number): Promise<DeadLetterRow | undefined> {
    await this.db.updateTable('dead_letters').set({ retry_requested_at: now }).where('id', '=', id).where('retry_requested_at', 'is', null).execute();
    return this.find(id);
  }

  async counts(queue: string, consumers: readonly string[]): Promise<DeadLetterCount[]> {
    if (consumers.length === 0) return [];
    const rows = await this.db
      .selectFrom('dead_letters')
      .select(['queue', 'consumer', (eb) => eb.fn.countAll<number>().as('count')])
      .where('queue', '=', queue)
      .where('consumer', 'in', consumers)
      .groupBy(['queue', 'consumer'])
      .execute();
    return rows.map((row) => ({ queue: row.queue, consumer: row.consumer, count: Number(row.count) }));
  }
}
