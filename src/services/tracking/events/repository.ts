import type { Insertable, Selectable } from 'kysely';
import { TableAccess } from '../../../platform/db/table-access.ts';
import { chunksOf } from '../chunks.ts';
import type { TimeRange } from '../positions/repository.ts';
import type { EventsTable, TrackingTables } from '../tables.ts';

export type EventRow = Selectable<EventsTable>;
export type NewEventRow = Insertable<EventsTable>;

// 8 columns: 4 000 rows stay below SQLite's 32 766 bound parameters (and PostgreSQL's 65 535).
const INSERT_CHUNK = 4_000;
const ID_CHUNK = 10_000;

export interface EventFilter {
  deviceIds: readonly number[];
  range: TimeRange;
  /** Empty: every type. */
  types: readonly string[];
  limit: number;
}

export class EventRepository extends TableAccess<TrackingTables> {
  /** Multi-row inserts (call inside a transaction); ids in input order, as for positions. */
  async insertMany(rows: readonly NewEventRow[]): Promise<number[]> {
    const ids: number[] = [];
    for (const chunk of chunksOf(rows, INSERT_CHUNK)) {
      const inserted = await this.db.insertInto('events').values(chunk).returning('id').execute();
      ids.push(...inserted.map((row) => Number(row.id)).sort((a, b) => a - b));
    }
    return ids;
  }

  findById(id: number): Promise<EventRow | undefined> {
    return this.db.selectFrom('events').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The first `limit` events of the devices in the range, ascending by (eventTime, id). */
  async list(filter: EventFilter): Promise<EventRow[]> {
    const { range, types, limit } = filter;
    const chunks = chunksOf(filter.deviceIds, ID_CHUNK);
    const found: EventRow[] = [];
    for (const chunk of chunks) {
      let query = this.db
        .selectFrom('events')
        .selectAll()
        .where('device_id', 'in', chunk)
        .where('event_time', '>=', range.from)
        .where('event_time', '<=', range.to);
      if (types.length > 0) query = query.where('type', 'in', types);
      found.push(...(await query.orderBy('event_time').orderBy('id').limit(limit).execute()));
    }
    if (chunks.length === 1) return found;
    // Each chunk brought its own first `limit`; the overall first `limit` are among them.
    return found.sort((a, b) => a.event_time - b.event_time || a.id - b.id).slice(0, limit);
  }

  /** Events raised by positions about to be deleted keep existing, without a positionId. */
  async detachPositionsInRange(deviceId: number, range: TimeRange): Promise<void> {
    await this.db
      .updateTable('events')
      .set({ position_id: null })
      .where('device_id', '=', deviceId)
      .where('position_id', 'in', (eb) =>
        eb
          .selectFrom('positions')
          .select('positions.id')
          .where('positions.device_id', '=', deviceId)
          .where('positions.fix_time', '>=', range.from)
          .where('positions.fix_time', '<=', range.to),
      )
      .execute();
  }

  async deleteDevice(deviceId: number): Promise<void> {
    await this.db.deleteFrom('events').where('device_id', '=', deviceId).execute();
  }
}
