import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { TrackingTables } from '../tables.ts';

/** The retention job's reads and chunked deletes, the same on both engines. */
export class RetentionRepository {
  private readonly db: Kysely<TrackingTables>;

  constructor(db: Kysely<TrackingTables>) {
    this.db = db;
  }

  /**
   * The first `limit` device ids above `after` that have positions or events, ascending: per table a
   * skip scan of its time index (one probe per device, in one statement), the two lists merged.
   */
  async nextDevices(after: number, limit: number): Promise<number[]> {
    const [positions, events] = await Promise.all([this.skipScan('positions', after, limit), this.skipScan('events', after, limit)]);
    // A full list is complete only up to its last id: past it, the other list may hold ids this one has not reached.
    const bound = Math.min(...[positions, events].filter((ids) => ids.length === limit).map((ids) => ids.at(-1) as number));
    return [...new Set([...positions, ...events])].filter((id) => id <= bound).sort((a, b) => a - b);
  }

  private async skipScan(table: 'positions' | 'events', after: number, limit: number): Promise<number[]> {
    const result = await sql<{ id: number }>`
      with recursive devices (id) as (
        select min(device_id) from ${sql.table(table)} where device_id > ${after}
        union all
        select (select min(device_id) from ${sql.table(table)} where device_id > devices.id) from devices where devices.id is not null
      )
      select id from devices where id is not null limit ${limit}`.execute(this.db);
    return result.rows.map((row) => Number(row.id));
  }

  /**
   * Deletes at most `limit` of the device's positions older than `cutoff`, never its latest one
   * (what the device's positionId shows); answers how many went. One statement: a latest position
   * that moves meanwhile is seen by it or was not yet visible to it.
   */
  async deletePositionsBefore(deviceId: number, cutoff: number, limit: number): Promise<number> {
    const result = await this.db
      .deleteFrom('positions')
      .where('device_id', '=', deviceId)
      .where('fix_time', '<', cutoff)
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('positions as chunk')
          .select('chunk.id')
          .where('chunk.device_id', '=', deviceId)
          .where('chunk.fix_time', '<', cutoff)
          .where((inner) =>
            inner.not(
              inner.exists(
                inner
                  .selectFrom('latest_positions')
                  .select('latest_positions.device_id')
                  .where('latest_positions.device_id', '=', deviceId)
                  .whereRef('latest_positions.position_id', '=', 'chunk.id'),
              ),
            ),
          )
          .limit(limit),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Deletes at most `limit` of the device's events older than `cutoff`; answers how many went. */
  async deleteEventsBefore(deviceId: number, cutoff: number, limit: number): Promise<number> {
    const result = await this.db
      .deleteFrom('events')
      .where('device_id', '=', deviceId)
      .where('event_time', '<', cutoff)
      .where('id', 'in', (eb) =>
        eb.selectFrom('events as chunk').select('chunk.id').where('chunk.device_id', '=', deviceId).where('chunk.event_time', '<', cutoff).limit(limit),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
