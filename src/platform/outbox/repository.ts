import type { Generated, Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { TableAccess } from '../db/table-access.ts';
import { DeadLetterRepository } from '../work/dead-letters.ts';
import type { DeadLetterTables } from '../work/dead-letters.ts';
import type { QueueDepth, WorkStore } from '../work/queue.ts';

export interface OutboxTables extends DeadLetterTables {
  outbox: {
    id: Generated<number>;
    consumer: string;
    topic: string;
    payload: string;
    created_at: number;
    /** When the row may next be claimed: now for new rows, the lease's end once claimed, the retry time after a failure. */
    available_at: number;
    attempts: Generated<number>;
    last_error: string | null;
    /** The claim holding the row (null before its first claim). */
    lease: string | null;
  };
}

export interface OutboxRow {
  id: number;
  consumer: string;
  topic: string;
  payload: string;
  attempts: number;
  created_at: number;
  last_error: string | null;
}

/** The outbox's queue name: its dead letters' `queue` and its metrics' label. */
export const OUTBOX_QUEUE = 'outbox';

export class OutboxRepository extends TableAccess<OutboxTables> implements WorkStore<OutboxRow> {
  constructor(database: Database) {
    super(database.db as Kysely<OutboxTables>);
  }

  /** One row per consuming module, written by the caller's transaction. */
  static async insert(trx: Kysely<unknown>, consumers: readonly string[], topic: string, payload: string, now: number): Promise<void> {
    await (trx as Kysely<OutboxTables>)
      .insertInto('outbox')
      .values(consumers.map((consumer) => ({ consumer, topic, payload, created_at: now, available_at: now, last_error: null, lease: null })))
      .execute();
  }

  /**
   * Takes up to `limit` due rows of the modules for `leaseMs`, in one statement: concurrent
   * claimers on PostgreSQL skip each other's locked rows; SQLite has a single writer.
   */
  async claim(consumers: readonly string[], now: number, leaseMs: number, limit: number, lease: string): Promise<OutboxRow[]> {
    const rows = await this.db
      .updateTable('outbox')
      .set((eb) => ({ available_at: now + leaseMs, attempts: eb('attempts', '+', 1), lease }))
      .where('id', 'in', (eb) => {
        const due = eb
          .selectFrom('outbox')
          .select('id')
          .where('consumer', 'in', consumers)
          .where('available_at', '<=', now)
          .orderBy('id')
          .limit(limit);
        return this.engine === 'postgres' ? due.forUpdate().skipLocked() : due;
      })
      .returning(['id', 'consumer', 'topic', 'payload', 'attempts', 'created_at', 'last_error'])
      .execute();
    return rows.sort((a, b) => a.id - b.id);
  }

  async renew(ids: readonly number[], lease: string, until: number): Promise<void> {
    if (ids.length > 0) await this.db.updateTable('outbox').set({ available_at: until }).where('id', 'in', ids).where('lease', '=', lease).execute();
  }

  /** Deletes the rows whose handlers succeeded. */
  async complete(ids: readonly number[], lease: string): Promise<void> {
    if (ids.length > 0) await this.db.deleteFrom('outbox').where('id', 'in', ids).where('lease', '=', lease).execute();
  }

  async retryLater(id: number, lease: string, at: number, error: string): Promise<void> {
    await this.db.updateTable('outbox').set({ available_at: at, last_error: error }).where('id', '=', id).where('lease', '=', lease).execute();
  }

  async release(ids: readonly number[], lease: string, at: number): Promise<void> {
    if (ids.length === 0) return;
    await this.db
      .updateTable('outbox')
      .set((eb) => ({ available_at: at, attempts: eb('attempts', '-', 1), lease: null }))
      .where('id', 'in', ids)
      .where('lease', '=', lease)
      .execute();
  }

  async deadLetter(row: OutboxRow, lease: string, error: string, now: number): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const removed = await trx.deleteFrom('outbox').where('id', '=', row.id).where('lease', '=', lease).executeTakeFirst();
      // Another instance took the row after this claim's lease lapsed: the row is its to settle.
      if (Number(removed.numDeletedRows) === 0) return;
      await DeadLetterRepository.insert(trx, {
        queue: OUTBOX_QUEUE,
        consumer: row.consumer,
        topic: row.topic,
        source_id: null,
        payload: row.payload,
        attempts: row.attempts,
        last_error: error,
        created_at: row.created_at,
        failed_at: now,
      });
    });
  }

  async restoreRequested(consumers: readonly string[], now: number, limit: number): Promise<number> {
    if (consumers.length === 0) return 0;
    return this.db.transaction().execute(async (trx) => {
      const letters = await DeadLetterRepository.takeRequested(trx, OUTBOX_QUEUE, consumers, limit);
      if (letters.length === 0) return 0;
      await trx
        .insertInto('outbox')
        .values(
          letters.map((letter) => ({
            consumer: letter.consumer,
            topic: letter.topic,
            payload: letter.payload,
            created_at: Number(letter.created_at),
            available_at: now,
            last_error: letter.last_error,
            lease: null,
          })),
        )
        .execute();
      return letters.length;
    });
  }

  async depth(consumers: readonly string[]): Promise<QueueDepth[]> {
    if (consumers.length === 0) return [];
    const rows = await this.db
      .selectFrom('outbox')
      .select(['consumer', (eb) => eb.fn.countAll<number>().as('depth'), (eb) => eb.fn.min('created_at').as('oldest')])
      .where('consumer', 'in', consumers)
      .groupBy('consumer')
      .execute();
    return rows.map((row) => ({ consumer: row.consumer, depth: Number(row.depth), oldestAt: row.oldest === null ? null : Number(row.oldest) }));
  }

  /** Rows not yet handled, per consumer (operations and tests). */
  async pending(): Promise<{ consumer: string; topic: string; attempts: number; last_error: string | null }[]> {
    return this.db.selectFrom('outbox').select(['consumer', 'topic', 'attempts', 'last_error']).orderBy('id').execute();
  }
}
