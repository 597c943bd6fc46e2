import type { Generated, Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { TableAccess } from '../db/table-access.ts';

export interface OutboxTables {
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
  };
}

export interface OutboxRow {
  id: number;
  consumer: string;
  topic: string;
  payload: string;
  attempts: number;
}

export class OutboxRepository extends TableAccess<OutboxTables> {
  constructor(database: Database) {
    super(database.db as Kysely<OutboxTables>);
  }

  /** One row per consuming module, written by the caller's transaction. */
  static async insert(trx: Kysely<unknown>, consumers: readonly string[], topic: string, payload: string, now: number): Promise<void> {
    await (trx as Kysely<OutboxTables>)
      .insertInto('outbox')
      .values(consumers.map((consumer) => ({ consumer, topic, payload, created_at: now, available_at: now, last_error: null })))
      .execute();
  }

  /**
   * Takes up to `limit` due rows of the modules for `leaseMs`, in one statement: concurrent
   * claimers on PostgreSQL skip each other's locked rows; SQLite has a single writer.
   */
  async claim(consumers: readonly string[], now: number, leaseMs: number, limit: number): Promise<OutboxRow[]> {
    const rows = await this.db
      .updateTable('outbox')
      .set((eb) => ({ available_at: now + leaseMs, attempts: eb('attempts', '+', 1) }))
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
      .returning(['id', 'consumer', 'topic', 'payload', 'attempts'])
      .execute();
    return rows.sort((a, b) => a.id - b.id);
  }

  /** Deletes the rows whose handlers succeeded. */
  async complete(ids: readonly number[]): Promise<void> {
    if (ids.length > 0) await this.db.deleteFrom('outbox').where('id', 'in', ids).execute();
  }

  async retryLater(id: number, at: number, error: string): Promise<void> {
    await this.db.updateTable('outbox').set({ available_at: at, last_error: error }).where('id', '=', id).execute();
  }

  /** Rows not yet handled, per consumer (operations and tests). */
  async pending(): Promise<{ consumer: string; topic: string; attempts: number; last_error: string | null }[]> {
    return this.db.selectFrom('outbox').select(['consumer', 'topic', 'attempts', 'last_error']).orderBy('id').execute();
  }
}
