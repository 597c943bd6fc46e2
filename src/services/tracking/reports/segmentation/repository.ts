import { sql } from 'kysely';
import type { Insertable } from 'kysely';
import { lockKeys } from '../../../../platform/db/locks.ts';
import { TableAccess } from '../../../../platform/db/table-access.ts';
import { chunksOf } from '../../chunks.ts';
import type { PositionRow } from '../../positions/repository.ts';
import type { StopsTable, SummaryHoursTable, TrackingTables, TripsTable } from '../../tables.ts';

/** A position's place in its device's order. */
export interface PositionKey {
  fixTime: number;
  id: number;
}

export interface StoredState {
  cursor: PositionKey;
  /** JSON. */
  state: string;
}

export type NewTripRow = Insertable<TripsTable>;
export type NewStopRow = Insertable<StopsTable>;
export type HourRow = SummaryHoursTable;

/** What one pass of segmentation made of a device's positions, to be written together. */
export interface DeviceOutcome {
  deviceId: number;
  /** The start time of the trip or stop in progress that these rows replace (null: none, or already forgotten). */
  replacesOngoingFrom: number | null;
  trips: NewTripRow[];
  stops: NewStopRow[];
  hours: HourRow[];
  checkpoints: StoredState[];
  cursor: PositionKey;
  /** JSON of the state after the cursor. */
  state: string;
}

const LOCK_NAMESPACE = 'tracking.segmentation';
// Well below either engine's bound parameters per statement.
const INSERT_CHUNK = 500;

/** Rows at or after `key` in (time, position id) order. */
function atOrAfter(time: string, id: string, key: PositionKey) {
  return sql<boolean>`(${sql.ref(time)} > ${key.fixTime} or (${sql.ref(time)} = ${key.fixTime} and ${sql.ref(id)} >= ${key.id}))`;
}

/** The segmentation's reads and writes: the motion state, its checkpoints, and the trips, stops and hours it writes. */
export class SegmentationRepository extends TableAccess<TrackingTables> {
  /** Runs `work` in one transaction holding these devices' segmentation locks (one writer per device on every instance). */
  inDevicesTransaction<T>(deviceIds: readonly number[], work: (repository: SegmentationRepository) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(async (trx) => {
      await lockKeys(trx, LOCK_NAMESPACE, deviceIds);
      return work(new SegmentationRepository(trx));
    });
  }

  /** The stored state of each of these devices that has one. */
  async statesOf(deviceIds: readonly number[]): Promise<Map<number, StoredState>> {
    const states = new Map<number, StoredState>();
    for (const chunk of chunksOf(deviceIds, INSERT_CHUNK)) {
      const rows = await this.db.selectFrom('motion_states').select(['device_id', 'fix_time', 'position_id', 'state']).where('device_id', 'in', chunk).execute();
      for (const row of rows) states.set(Number(row.device_id), { cursor: { fixTime: Number(row.fix_time), id: Number(row.position_id) }, state: row.state });
    }
    return states;
  }

  /**
   * Writes what segmentation made of devices' new positions: each device's trip or stop in progress (the one that
   * started at `replacesOngoingFrom`) replaced, the closed and ongoing rows, hours, checkpoints and cursors.
   */
  async write(outcomes: readonly DeviceOutcome[], now: number): Promise<void> {
    for (const table of ['trips', 'stops'] as const) {
      const ongoing = outcomes.filter((outcome) => outcome.replacesOngoingFrom !== null);
      for (const chunk of chunksOf(ongoing, INSERT_CHUNK)) {
        // One index probe per device on both engines (SQLite scans the table for a row-value IN list).
        const pairs = sql.join(chunk.map((outcome) => sql`(device_id = ${outcome.deviceId} and start_time = ${outcome.replacesOngoingFrom})`), sql` or `);
        await sql`delete from ${sql.table(table)} where ongoing = 1 and (${pairs})`.execute(this.db);
      }
    }
    await this.insertTrips(outcomes.flatMap((outcome) => outcome.trips));
    await this.insertStops(outcomes.flatMap((outcome) => outcome.stops));
    await this.upsertHours(outcomes.flatMap((outcome) => outcome.hours));
    await this.insertCheckpoints(outcomes.flatMap((outcome) => outcome.checkpoints.map((checkpoint) => ({ ...checkpoint, deviceId: outcome.deviceId }))));
    const states = outcomes.map(({ deviceId, cursor, state }) => ({ device_id: deviceId, fix_time: cursor.fixTime, position_id: cursor.id, state, updated_at: now }));
    for (const chunk of chunksOf(states, INSERT_CHUNK)) {
      await this.db
        .insertInto('motion_states')
        .values(chunk)
        .onConflict((conflict) =>
          conflict.column('device_id').doUpdateSet((eb) => ({
            fix_time: eb.ref('excluded.fix_time'),
            position_id: eb.ref('excluded.position_id'),
            state: eb.ref('excluded.state'),
            updated_at: eb.ref('excluded.updated_at'),
          })),
        )
        .execute();
    }
  }

  async stateOf(deviceId: number): Promise<StoredState | undefined> {
    return (await this.statesOf([deviceId])).get(deviceId);
  }

  /** The last checkpoint at or before `key`. */
  async checkpointAtOrBefore(deviceId: number, key: PositionKey): Promise<StoredState | undefined> {
    const row = await this.db
      .selectFrom('motion_checkpoints')
      .select(['fix_time', 'position_id', 'state'])
      .where('device_id', '=', deviceId)
      .where((eb) => eb.or([eb('fix_time', '<', key.fixTime), eb.and([eb('fix_time', '=', key.fixTime), eb('position_id', '<=', key.id)])]))
      .orderBy('fix_time', 'desc')
      .orderBy('position_id', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row && { cursor: { fixTime: Number(row.fix_time), id: Number(row.position_id) }, state: row.state };
  }

  /** The device's positions after `after` (all of them when null; `after` itself too when `inclusive`), in order. */
  positionsFrom(deviceId: number, after: PositionKey | null, inclusive: boolean, limit: number): Promise<PositionRow[]> {
    let query = this.db.selectFrom('positions').selectAll().where('device_id', '=', deviceId);
    if (after !== null) {
      query = query.where((eb) =>
        eb.or([
          eb('fix_time', '>', after.fixTime),
          eb.and([eb('fix_time', '=', after.fixTime), eb('id', inclusive ? '>=' : '>', after.id)]),
        ]),
      );
    }
    return query.orderBy('fix_time').orderBy('id').limit(limit).execute();
  }

  /** Whether the device stored, since `seenId`, a position between `from` and the cursor (a late one a crash left unsegmented). */
  async earliestLate(deviceId: number, from: number, cursor: PositionKey, seenId: number): Promise<PositionKey | undefined> {
    const row = await this.db
      .selectFrom('positions')
      .select(['fix_time', 'id'])
      .where('device_id', '=', deviceId)
      .where('fix_time', '>=', from)
      .where('fix_time', '<=', cursor.fixTime)
      .where('id', '>', seenId)
      .orderBy('fix_time')
      .orderBy('id')
      .limit(1)
      .executeTakeFirst();
    return row && { fixTime: Number(row.fix_time), id: Number(row.id) };
  }

  /** Devices with positions past their cursor (or none yet), ascending. */
  async devicesBehind(): Promise<number[]> {
    const rows = await this.db
      .selectFrom('latest_positions as latest')
      .leftJoin('motion_states as state', 'state.device_id', 'latest.device_id')
      .select('latest.device_id')
      .where((eb) =>
        eb.or([
          eb('state.device_id', 'is', null),
          eb('latest.fix_time', '>', eb.ref('state.fix_time')),
          eb.and([eb('latest.fix_time', '=', eb.ref('state.fix_time')), eb('latest.position_id', '>', eb.ref('state.position_id'))]),
        ]),
      )
      .orderBy('latest.device_id')
      .execute();
    return rows.map((row) => Number(row.device_id));
  }

  /** Devices with positions between `from` and `to` (inclusive), ascending. */
  async devicesWithPositionsBetween(from: number, to: number): Promise<number[]> {
    const rows = await this.db.selectFrom('positions').select('device_id').distinct().where('fix_time', '>=', from).where('fix_time', '<=', to).orderBy('device_id').execute();
    return rows.map((row) => Number(row.device_id));
  }

  /** Devices segmented so far, ascending. */
  async devicesWithState(): Promise<number[]> {
    const rows = await this.db.selectFrom('motion_states').select('device_id').orderBy('device_id').execute();
    return rows.map((row) => Number(row.device_id));
  }

  /**
   * Forgets what was computed from `rowsFrom` on (trips and stops starting there or later; everything when null), the
   * hours from `hoursFrom` and the checkpoints from `checkpointsFrom`: a rewind rewrites them.
   */
  async forgetFrom(deviceId: number, rowsFrom: PositionKey | null, hoursFrom: number | null, checkpointsFrom: PositionKey | null): Promise<void> {
    for (const table of ['trips', 'stops'] as const) {
      let query = this.db.deleteFrom(table).where('device_id', '=', deviceId);
      if (rowsFrom !== null) query = query.where(atOrAfter('start_time', table === 'trips' ? 'start_position_id' : 'position_id', rowsFrom));
      await query.execute();
    }
    let hours = this.db.deleteFrom('summary_hours').where('device_id', '=', deviceId);
    if (hoursFrom !== null) hours = hours.where('hour_start', '>=', hoursFrom);
    await hours.execute();
    let checkpoints = this.db.deleteFrom('motion_checkpoints').where('device_id', '=', deviceId);
    if (checkpointsFrom !== null) checkpoints = checkpoints.where(atOrAfter('fix_time', 'position_id', checkpointsFrom));
    await checkpoints.execute();
  }

  private async insertTrips(rows: readonly NewTripRow[]): Promise<void> {
    for (const chunk of chunksOf(rows, INSERT_CHUNK)) await this.db.insertInto('trips').values(chunk).execute();
  }

  private async insertStops(rows: readonly NewStopRow[]): Promise<void> {
    for (const chunk of chunksOf(rows, INSERT_CHUNK)) await this.db.insertInto('stops').values(chunk).execute();
  }

  private async insertCheckpoints(checkpoints: readonly (StoredState & { deviceId: number })[]): Promise<void> {
    const rows = checkpoints.map(({ deviceId, cursor, state }) => ({ device_id: deviceId, fix_time: cursor.fixTime, position_id: cursor.id, state }));
    for (const chunk of chunksOf(rows, INSERT_CHUNK)) {
      await this.db
        .insertInto('motion_checkpoints')
        .values(chunk)
        .onConflict((conflict) => conflict.columns(['device_id', 'fix_time', 'position_id']).doUpdateSet((eb) => ({ state: eb.ref('excluded.state') })))
        .execute();
    }
  }

  /** Writes each hour's sums over what was there. */
  private async upsertHours(rows: readonly HourRow[]): Promise<void> {
    for (const chunk of chunksOf(rows, INSERT_CHUNK)) {
      await this.db
        .insertInto('summary_hours')
        .values(chunk)
        .onConflict((conflict) =>
          conflict.columns(['device_id', 'hour_start']).doUpdateSet((eb) => ({
            first_time: eb.ref('excluded.first_time'),
            last_time: eb.ref('excluded.last_time'),
            positions: eb.ref('excluded.positions'),
            distance: eb.ref('excluded.distance'),
            max_speed: eb.ref('excluded.max_speed'),
            speed_sum: eb.ref('excluded.speed_sum'),
            start_odometer: eb.ref('excluded.start_odometer'),
            end_odometer: eb.ref('excluded.end_odometer'),
            engine_hours: eb.ref('excluded.engine_hours'),
            spent_fuel: eb.ref('excluded.spent_fuel'),
          })),
        )
        .execute();
    }
  }

  /** Everything segmentation wrote for the device (it was deleted). */
  async removeDevice(deviceId: number): Promise<void> {
    await this.forgetFrom(deviceId, null, null, null);
    await this.db.deleteFrom('motion_states').where('device_id', '=', deviceId).execute();
  }

  /** Trips, stops and hours ending before `cutoff` go with the positions they were made of (docs/reports.md, "Retention"). */
  async removeBefore(deviceIds: readonly number[], cutoff: number): Promise<void> {
    for (const chunk of chunksOf(deviceIds, INSERT_CHUNK)) {
      await this.db.deleteFrom('trips').where('device_id', 'in', chunk).where('end_time', '<', cutoff).where('ongoing', '=', 0).execute();
      await this.db.deleteFrom('stops').where('device_id', 'in', chunk).where('end_time', '<', cutoff).where('ongoing', '=', 0).execute();
      await this.db.deleteFrom('summary_hours').where('device_id', 'in', chunk).where('hour_start', '<=', cutoff - 3_600_000).execute();
      await this.db.deleteFrom('motion_checkpoints').where('device_id', 'in', chunk).where('fix_time', '<', cutoff).execute();
    }
  }
}
