import { sql } from 'kysely';
import type { Selectable } from 'kysely';
import { TableAccess } from '../../../platform/db/table-access.ts';
import { chunksOf } from '../chunks.ts';
import type { EventRow } from '../events/repository.ts';
import type { PositionRow, TimeRange } from '../positions/repository.ts';
import type { PositionKey } from './segmentation/repository.ts';
import type { MotionCheckpointsTable, StopsTable, SummaryHoursTable, TrackingTables, TripsTable } from '../tables.ts';

export type TripRow = Selectable<TripsTable>;
export type StopRow = Selectable<StopsTable>;

/** The tables of spans: each device's trips, or its stops, never overlapping one another. */
export type SpanTable = 'trips' | 'stops';
export interface SpanRows {
  trips: TripRow;
  stops: StopRow;
}

/** Where a keyset page ordered by (device, time, id) resumes. */
export interface DeviceCursor {
  deviceId: number;
  time: number;
  id: number;
}

/** One device's hours within one bucket of time (a day of a daily summary, or the whole window), summed as one hour is. */
export type HourSums = Omit<SummaryHoursTable, 'hour_start'> & { bucket: number };

/** A stored state of the segmentation: the machine's state before the position at (fix_time, position_id). */
export type StoredCheckpoint = Selectable<MotionCheckpointsTable>;

/** Half-open [start, end) of whole UTC hours. */
export interface HourBucket {
  start: number;
  end: number;
}

// Devices per statement: one bound parameter each, well below either engine's limit.
const DEVICE_CHUNK = 1_000;
// Per-device lookups joined by UNION ALL: SQLite allows 500 terms in one compound select.
const LOOKUP_CHUNK = 200;
// Buckets per statement (a daily summary of REPORT_MAX_DAYS days fits in a few).
const BUCKET_CHUNK = 400;

/** Rows after the cursor in (device, time, id) order: a row-value comparison both engines resolve on the index. */
function after(timeColumn: 'start_time' | 'event_time', cursor: DeviceCursor) {
  return sql<boolean>`(device_id, ${sql.ref(timeColumn)}, id) > (${cursor.deviceId}, ${cursor.time}, ${cursor.id})`;
}

/**
 * What the report routes read (docs/reports.md): the trips, stops and hourly sums that segmentation
 * writes, and positions and events in a window. Every read is bounded by the window through an
 * index, so a report costs what it returns, not the size of the tables.
 */
export class ReportQueryRepository extends TableAccess<TrackingTables> {
  /**
   * A page of the devices' spans that start inside the window, ordered by (device, start, id),
   * resuming after `cursor`. The span in progress at `from` comes from spansStartedBefore.
   */
  spanPage<T extends SpanTable>(table: T, deviceIds: readonly number[], range: TimeRange, cursor: DeviceCursor | undefined, limit: number): Promise<SpanRows[T][]> {
    if (deviceIds.length === 0) return Promise.resolve([]);
    let query = this.db
      .selectFrom(table as SpanTable)
      .selectAll()
      .where('device_id', 'in', deviceIds)
      .where('start_time', '>=', range.from)
      .where('start_time', '<=', range.to);
    if (cursor) query = query.where(after('start_time', cursor));
    return query.orderBy('device_id').orderBy('start_time').orderBy('id').limit(limit).execute() as Promise<SpanRows[T][]>;
  }

  /**
   * Per device, the span that started before `at` and ends at or after it (the one overlapping the
   * start of a window), ascending by device: one index step back per device.
   */
  async spansStartedBefore<T extends SpanTable>(table: T, deviceIds: readonly number[], at: number): Promise<SpanRows[T][]> {
    const found: SpanRows[T][] = [];
    for (const chunk of chunksOf(deviceIds, LOOKUP_CHUNK)) {
      const lookups = chunk.map(
        (deviceId, index) =>
          sql`select * from (select * from ${sql.table(table)} where device_id = ${deviceId} and start_time < ${at} order by start_time desc, id desc limit 1) as ${sql.ref(`s${index}`)}`,
      );
      const { rows } = await sql<SpanRows[T]>`${sql.join(lookups, sql` union all `)}`.execute(this.db);
      found.push(...rows.filter((row) => row.end_time >= at));
    }
    return found.sort((a, b) => a.device_id - b.device_id);
  }

  /** The devices' hourly sums added up per device and bucket, for the hours starting inside each bucket. */
  async hourSums(deviceIds: readonly number[], buckets: readonly HourBucket[]): Promise<HourSums[]> {
    const sums: HourSums[] = [];
    const numbered = buckets.map((bucket, index) => ({ ...bucket, index })).filter((bucket) => bucket.end > bucket.start);
    for (const bucketChunk of chunksOf(numbered, BUCKET_CHUNK)) {
      const values = sql.join(bucketChunk.map((bucket) => sql`(${sql.lit(bucket.index)}, ${sql.lit(bucket.start)}, ${sql.lit(bucket.end)})`));
      for (const chunk of chunksOf(deviceIds, DEVICE_CHUNK)) {
        const { rows } = await sql<HourSums>`
          with buckets (bucket, start_at, end_at) as (values ${values})
          select h.device_id, b.bucket, min(h.first_time) as first_time, max(h.last_time) as last_time,
                 sum(h.positions) as positions, sum(h.distance) as distance, max(h.max_speed) as max_speed,
                 sum(h.speed_sum) as speed_sum, min(h.start_odometer) as start_odometer, max(h.end_odometer) as end_odometer,
                 sum(h.engine_hours) as engine_hours, sum(h.spent_fuel) as spent_fuel
          from buckets b
          join summary_hours h on h.hour_start >= b.start_at and h.hour_start < b.end_at
          where h.device_id in (${sql.join(chunk)})
          group by h.device_id, b.bucket`.execute(this.db);
        for (const row of rows) {
          sums.push({
            device_id: Number(row.device_id),
            bucket: Number(row.bucket),
            first_time: Number(row.first_time),
            last_time: Number(row.last_time),
            positions: Number(row.positions),
            distance: Number(row.distance),
            max_speed: Number(row.max_speed),
            speed_sum: Number(row.speed_sum),
            start_odometer: Number(row.start_odometer),
            end_odometer: Number(row.end_odometer),
            engine_hours: Number(row.engine_hours),
            spent_fuel: Number(row.spent_fuel),
          });
        }
      }
    }
    return sums;
  }

  /** The devices' positions in the range (at most an hour in a summary), ascending by (device, fixTime, id). */
  async positionsIn(deviceIds: readonly number[], range: TimeRange): Promise<PositionRow[]> {
    const rows: PositionRow[] = [];
    for (const chunk of chunksOf(deviceIds, DEVICE_CHUNK)) {
      rows.push(
        ...(await this.db
          .selectFrom('positions')
          .selectAll()
          .where('device_id', 'in', chunk)
          .where('fix_time', '>=', range.from)
          .where('fix_time', '<=', range.to)
          .orderBy('device_id')
          .orderBy('fix_time')
          .orderBy('id')
          .execute()),
      );
    }
    return rows;
  }

  /** Per device, its last position before `at` (the one a step into `at` starts from). */
  async positionsBefore(deviceIds: readonly number[], at: number): Promise<PositionRow[]> {
    const found: PositionRow[] = [];
    for (const chunk of chunksOf(deviceIds, LOOKUP_CHUNK)) {
      const lookups = chunk.map(
        (deviceId, index) =>
          sql`select * from (select * from positions where device_id = ${deviceId} and fix_time < ${at} order by fix_time desc, id desc limit 1) as ${sql.ref(`p${index}`)}`,
      );
      const { rows } = await sql<PositionRow>`${sql.join(lookups, sql` union all `)}`.execute(this.db);
      found.push(...rows);
    }
    return found;
  }

  /**
   * Per device, the segmentation's last checkpoint at or before `at` (the machine's state before the first position
   * of an hour): one index step back per device.
   */
  async checkpointsBefore(deviceIds: readonly number[], at: number): Promise<StoredCheckpoint[]> {
    const found: StoredCheckpoint[] = [];
    for (const chunk of chunksOf(deviceIds, LOOKUP_CHUNK)) {
      const lookups = chunk.map(
        (deviceId, index) =>
          sql`select * from (select device_id, fix_time, position_id, state from motion_checkpoints where device_id = ${deviceId} and fix_time <= ${at} order by fix_time desc, position_id desc limit 1) as ${sql.ref(`c${index}`)}`,
      );
      const { rows } = await sql<StoredCheckpoint>`${sql.join(lookups, sql` union all `)}`.execute(this.db);
      found.push(...rows.map((row) => ({ device_id: Number(row.device_id), fix_time: Number(row.fix_time), position_id: Number(row.position_id), state: row.state })));
    }
    return found;
  }

  /** Per device, its positions from a key (inclusive) to before `until`, in (device, fixTime, id) order. */
  async positionsBetween(starts: readonly { deviceId: number; from: PositionKey }[], until: number): Promise<PositionRow[]> {
    const found: PositionRow[] = [];
    for (const chunk of chunksOf(starts, LOOKUP_CHUNK)) {
      const lookups = chunk.map(
        ({ deviceId, from }, index) =>
          sql`select * from (select * from positions where device_id = ${deviceId} and (fix_time, id) >= (${from.fixTime}, ${from.id}) and fix_time < ${until}) as ${sql.ref(`p${index}`)}`,
      );
      const { rows } = await sql<PositionRow>`${sql.join(lookups, sql` union all `)}`.execute(this.db);
      found.push(...rows);
    }
    return found.sort((a, b) => a.device_id - b.device_id || a.fix_time - b.fix_time || a.id - b.id);
  }

  /** A page of the devices' events in the range, of these types (none: all), ordered by (device, eventTime, id). */
  eventPage(deviceIds: readonly number[], range: TimeRange, types: readonly string[], cursor: DeviceCursor | undefined, limit: number): Promise<EventRow[]> {
    if (deviceIds.length === 0) return Promise.resolve([]);
    let query = this.db
      .selectFrom('events')
      .selectAll()
      .where('device_id', 'in', deviceIds)
      .where('event_time', '>=', range.from)
      .where('event_time', '<=', range.to);
    if (types.length > 0) query = query.where('type', 'in', types);
    if (cursor) query = query.where(after('event_time', cursor));
    return query.orderBy('device_id').orderBy('event_time').orderBy('id').limit(limit).execute();
  }

  /**
   * Per device and geofence, the geofenceEnter that is its last geofence event before `at` (not before `since`): the
   * visits under way at `at`. One query over the (device, event_time) index for the devices.
   */
  async geofenceEntersOpenAt(deviceIds: readonly number[], at: number, since: number): Promise<EventRow[]> {
    const found: EventRow[] = [];
    for (const chunk of chunksOf(deviceIds, DEVICE_CHUNK)) {
      const { rows } = await sql<EventRow & { rank: number }>`
        select * from (
          select e.*, row_number() over (partition by e.device_id, e.geofence_id order by e.event_time desc, e.id desc) as rank
          from events e
          where e.device_id in (${sql.join(chunk)}) and e.event_time < ${at} and e.event_time >= ${since}
            and e.type in ('geofenceEnter', 'geofenceExit') and e.geofence_id is not null
        ) as last_events
        where rank = 1 and type = 'geofenceEnter'`.execute(this.db);
      found.push(...rows.map(({ rank: _rank, ...row }) => row));
    }
    return found;
  }

  /** The device's nearest event of this type and geofence before (`direction` 'before') or after `at`, within `bound`. */
  nearestGeofenceEvent(deviceId: number, geofenceId: number, type: string, at: number, direction: 'before' | 'after', bound: number): Promise<EventRow | undefined> {
    const query = this.db.selectFrom('events').selectAll().where('device_id', '=', deviceId).where('geofence_id', '=', geofenceId).where('type', '=', type);
    return direction === 'before'
      ? query.where('event_time', '<', at).where('event_time', '>=', bound).orderBy('event_time', 'desc').orderBy('id', 'desc').limit(1).executeTakeFirst()
      : query.where('event_time', '>', at).where('event_time', '<=', bound).orderBy('event_time').orderBy('id').limit(1).executeTakeFirst();
  }

  /** Names of geofences by id (deleted ones are absent). */
  async geofenceNames(ids: readonly number[]): Promise<Map<number, string>> {
    const names = new Map<number, string>();
    for (const chunk of chunksOf(ids, DEVICE_CHUNK)) {
      for (const row of await this.db.selectFrom('geofences').select(['id', 'name']).where('id', 'in', chunk).execute()) names.set(row.id, row.name);
    }
    return names;
  }
}
