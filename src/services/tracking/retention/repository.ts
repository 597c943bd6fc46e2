import { sql } from 'kysely';
import { TableAccess } from '../../../platform/db/table-access.ts';
import type { TrackingTables } from '../tables.ts';

export type RetentionTable = 'positions' | 'events' | 'commands';

/** Ids from `low` to `high`, both included. */
export interface IdSpan {
  low: number;
  high: number;
}

const TIME_COLUMN: Record<RetentionTable, string> = { positions: 'fix_time', events: 'event_time', commands: 'created_at' };

/** The retention job's reads and chunked deletes, the same on both engines. */
export class RetentionRepository extends TableAccess<TrackingTables> {
  /**
   * The first `limit` device ids above `after` that have rows in one of `tables`, ascending: per table a skip scan of
   * its time index (one probe per device, in one statement), the lists merged.
   */
  async nextDevices(after: number, limit: number, tables: readonly RetentionTable[]): Promise<number[]> {
    const lists = await Promise.all(tables.map((table) => this.skipScan(table, after, limit)));
    // A full list is complete only up to its last id: past it, another list may hold ids this one has not reached.
    const bound = Math.min(...lists.filter((ids) => ids.length === limit).map((ids) => ids.at(-1) as number));
    return [...new Set(lists.flat())].filter((id) => id <= bound).sort((a, b) => a - b);
  }

  private async skipScan(table: RetentionTable, after: number, limit: number): Promise<number[]> {
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
   * The ids of the device's oldest row and of its newest row before `cutoff`: two probes of its time
   * index, however much history it holds; undefined when it has nothing older. Ids follow arrival,
   * so the rows past the cutoff lie between them but for late uploads of old fixes, which arrive
   * after their neighbours in time: such a row falls inside the span of a later run, once the cutoff
   * has passed a row that arrived after it (or once it is the oldest row itself).
   */
  async idSpan(table: RetentionTable, deviceId: number, cutoff: number): Promise<IdSpan | undefined> {
    const time = sql.ref(TIME_COLUMN[table]);
    const past = sql`from ${sql.table(table)} where device_id = ${deviceId} and ${time} < ${cutoff}`;
    const result = await sql<{ low: number | string | null; high: number | string | null }>`
      select (select id ${past} order by ${time}, id limit 1) as low,
             (select id ${past} order by ${time} desc, id desc limit 1) as high`.execute(this.db);
    const row = result.rows[0];
    if (row?.low === null || row?.low === undefined || row.high === null) return undefined;
    const [low, high] = [Number(row.low), Number(row.high)];
    return { low: Math.min(low, high), high: Math.max(low, high) };
  }

  /**
   * Deletes the rows of these devices older than `cutoff` whose ids lie in [from, to), never a
   * device's latest position nor a queued command (a latest position that moves meanwhile is seen by the statement or
   * not yet visible to it); answers how many went. Ids follow arrival, and arrival places a row in
   * the table's pages, so a window of ids is a run of neighbouring pages, emptied together.
   */
  async deleteWindow(table: RetentionTable, deviceIds: readonly number[], cutoff: number, from: number, to: number): Promise<number> {
    // A device's latest position stays, and a queued command waits for its device until COMMAND_TTL expires it.
    const kept =
      table === 'positions'
        ? sql`and not exists (select 1 from latest_positions where latest_positions.device_id = positions.device_id and latest_positions.position_id = positions.id)`
        : table === 'commands'
          ? sql`and status <> 'queued'`
          : sql``;
    const result = await sql`
      delete from ${sql.table(table)}
      where id >= ${from} and id < ${to} and ${sql.ref(TIME_COLUMN[table])} < ${cutoff} and ${this.oneOf(deviceIds)} ${kept}`.execute(this.db);
    return Number(result.numAffectedRows ?? 0n);
  }

  /**
   * device_id among these: one parameter whatever their number (an array on PostgreSQL, a JSON array
   * on SQLite). On SQLite `+device_id` keeps the device index out, which it would otherwise take for
   * the short list it guesses, reading every device's old rows for each window instead of the window.
   */
  private oneOf(deviceIds: readonly number[]) {
    return this.engine === 'postgres'
      ? sql`device_id = any(${[...deviceIds]}::bigint[])`
      : sql`+device_id in (select value from json_each(${JSON.stringify(deviceIds)}))`;
  }
}
