import { sql } from 'kysely';
import type { Insertable, Selectable } from 'kysely';
import { TableAccess } from '../../../platform/db/table-access.ts';
import { chunksOf } from '../chunks.ts';
import type { PositionsTable, TrackingTables } from '../tables.ts';

export type PositionRow = Selectable<PositionsTable>;
export type NewPositionRow = Insertable<PositionsTable>;

export interface TimeRange {
  /** Epoch milliseconds, inclusive. */
  from: number;
  /** Epoch milliseconds, inclusive. */
  to: number;
}

/** Where a keyset page of a history resumes: after this (fixTime, id). */
export interface HistoryCursor {
  fixTime: number;
  id: number;
}

export interface LatestEntry {
  device_id: number;
  position_id: number;
  fix_time: number;
}

// SQLite allows 32 766 bound parameters per statement: 2 000 rows of 14 columns stay below.
const SQLITE_INSERT_CHUNK = 2_000;
// Id lists go into IN (...) in chunks well below either engine's parameter limit.
const ID_CHUNK = 10_000;

export class PositionRepository extends TableAccess<TrackingTables> {
  /**
   * Inserts the rows in one statement on PostgreSQL (UNNEST of one array per column) or in
   * multi-row chunks on SQLite; call it inside a transaction. Ids come back in input order: one
   * statement numbers its rows in the order it inserts them, so sorting the returned ids restores it.
   */
  async insertMany(rows: readonly NewPositionRow[]): Promise<number[]> {
    if (rows.length === 0) return [];
    if (this.engine === 'postgres') return this.insertUnnest(rows);
    const ids: number[] = [];
    for (const chunk of chunksOf(rows, SQLITE_INSERT_CHUNK)) {
      const inserted = await this.db.insertInto('positions').values(chunk).returning('id').execute();
      ids.push(...inserted.map((row) => row.id).sort((a, b) => a - b));
    }
    return ids;
  }

  private async insertUnnest(rows: readonly NewPositionRow[]): Promise<number[]> {
    const column = <K extends keyof NewPositionRow>(key: K) => rows.map((row) => row[key] ?? null);
    const result = await sql<{ id: number }>`
      insert into positions (device_id, protocol, server_time, device_time, fix_time, valid, latitude, longitude,
                             altitude, speed, course, accuracy, address, attributes)
      select * from unnest(
        ${column('device_id')}::bigint[], ${column('protocol')}::varchar[], ${column('server_time')}::bigint[],
        ${column('device_time')}::bigint[], ${column('fix_time')}::bigint[], ${column('valid')}::integer[],
        ${column('latitude')}::double precision[], ${column('longitude')}::double precision[],
        ${column('altitude')}::double precision[], ${column('speed')}::double precision[],
        ${column('course')}::double precision[], ${column('accuracy')}::double precision[],
        ${column('address')}::varchar[], ${column('attributes')}::text[])
      returning id`.execute(this.db);
    return result.rows.map((row) => Number(row.id)).sort((a, b) => a - b);
  }

  /**
   * Makes each candidate its device's latest position unless a newer fix is already the latest
   * (an equal fixTime counts as newer: the later arrival wins). Answers the candidates that moved.
   * At most one candidate per device.
   */
  async advanceLatest(candidates: readonly LatestEntry[]): Promise<LatestEntry[]> {
    const moved: LatestEntry[] = [];
    for (const chunk of chunksOf(candidates, ID_CHUNK / 2)) {
      const rows = await this.db
        .insertInto('latest_positions')
        .values(chunk)
        .onConflict((conflict) =>
          conflict
            .column('device_id')
            .doUpdateSet((eb) => ({ position_id: eb.ref('excluded.position_id'), fix_time: eb.ref('excluded.fix_time') }))
            .where((eb) => eb('excluded.fix_time', '>=', eb.ref('latest_positions.fix_time'))),
        )
        .returning(['device_id', 'position_id', 'fix_time'])
        .execute();
      moved.push(...rows);
    }
    return moved;
  }

  /** The latest position of each of these devices that has one, by device id. */
  async latestOf(deviceIds: readonly number[]): Promise<PositionRow[]> {
    const rows: PositionRow[] = [];
    for (const chunk of chunksOf(deviceIds, ID_CHUNK)) {
      rows.push(
        ...(await this.db
          .selectFrom('latest_positions')
          // fix_time too: on PostgreSQL it takes each lookup to the one partition holding the position.
          .innerJoin('positions', (join) => join.onRef('positions.id', '=', 'latest_positions.position_id').onRef('positions.fix_time', '=', 'latest_positions.fix_time'))
          .selectAll('positions')
          .where('latest_positions.device_id', 'in', chunk)
          .orderBy('latest_positions.device_id')
          .execute()),
      );
    }
    return rows;
  }

  /** Positions by id, ascending by id (unknown ids are skipped). */
  findByIds(ids: readonly number[]): Promise<PositionRow[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.db.selectFrom('positions').selectAll().where('id', 'in', ids).orderBy('id').execute();
  }

  /** How many positions of the device lie in the range, counting no further than `cap`. */
  async countInRange(deviceId: number, range: TimeRange, cap: number): Promise<number> {
    const bounded = this.db
      .selectFrom('positions')
      .select('id')
      .where('device_id', '=', deviceId)
      .where('fix_time', '>=', range.from)
      .where('fix_time', '<=', range.to)
      .limit(cap)
      .as('bounded');
    const row = await this.db
      .selectFrom(bounded)
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }

  /** One page of the device's history in the range, ascending by (fixTime, id), resuming after `cursor`. */
  historyPage(deviceId: number, range: TimeRange, cursor: HistoryCursor | undefined, limit: number): Promise<PositionRow[]> {
    let query = this.db
      .selectFrom('positions')
      .selectAll()
      .where('device_id', '=', deviceId)
      .where('fix_time', '<=', range.to);
    // The plain lower bound on fix_time lets both engines start the index scan at the cursor.
    query = cursor
      ? query
          .where('fix_time', '>=', cursor.fixTime)
          .where((eb) => eb.or([eb('fix_time', '>', cursor.fixTime), eb('id', '>', cursor.id)]))
      : query.where('fix_time', '>=', range.from);
    return query.orderBy('fix_time').orderBy('id').limit(limit).execute();
  }

  async deleteInRange(deviceId: number, range: TimeRange): Promise<number> {
    const result = await this.db
      .deleteFrom('positions')
      .where('device_id', '=', deviceId)
      .where('fix_time', '>=', range.from)
      .where('fix_time', '<=', range.to)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Every device that has a latest position (ingestion resumes their status after a restart). */
  async deviceIdsWithLatest(): Promise<number[]> {
    const rows = await this.db.selectFrom('latest_positions').select('device_id').orderBy('device_id').execute();
    return rows.map((row) => Number(row.device_id));
  }

  latestEntryOf(deviceId: number): Promise<LatestEntry | undefined> {
    return this.db.selectFrom('latest_positions').selectAll().where('device_id', '=', deviceId).executeTakeFirst();
  }

  /** Recomputes a device's latest position from what is stored (after a deletion): the newest, or none. */
  async resetLatest(deviceId: number): Promise<PositionRow | undefined> {
    const newest = await this.db
      .selectFrom('positions')
      .selectAll()
      .where('device_id', '=', deviceId)
      .orderBy('fix_time', 'desc')
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst();
    await this.db.deleteFrom('latest_positions').where('device_id', '=', deviceId).execute();
    if (newest) await this.db.insertInto('latest_positions').values({ device_id: deviceId, position_id: newest.id, fix_time: newest.fix_time }).execute();
    return newest;
  }

  async deleteDevice(deviceId: number): Promise<void> {
    await this.db.deleteFrom('latest_positions').where('device_id', '=', deviceId).execute();
    await this.db.deleteFrom('positions').where('device_id', '=', deviceId).execute();
  }
}
