import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import { PARTITIONED_TABLES, PartitionRepository } from '../src/services/tracking/retention/partitions.ts';
import type { TrackingTables } from '../src/services/tracking/tables.ts';

/** A synthetic fleet's history on PostgreSQL, written server-side (INSERT … SELECT over generate_series). */
export interface FleetHistory {
  /** Devices 1..devices. */
  devices: number;
  /** Each device reports every stepMs… */
  stepMs: number;
  /** …this many times, the last one step before `until`. */
  reportsPerDevice: number;
  /** Epoch ms: the history ends here. */
  until: number;
  /** An event every this many reports of a device. */
  eventEvery: number;
}

const DAY_MS = 86_400_000;

/** The time the history of `fleet` starts at. */
export function historyStart(fleet: FleetHistory): number {
  return fleet.until - fleet.reportsPerDevice * fleet.stepMs;
}

/**
 * Writes the fleet's positions and events one day per statement, in time order as ingestion would,
 * each device offset within the step; makes the months they need first, and points every device's
 * latest position at its newest when `latest` is set. Answers the positions written.
 */
export async function loadFleetHistory(db: Kysely<TrackingTables>, fleet: FleetHistory, latest: boolean): Promise<number> {
  const start = historyStart(fleet);
  const partitions = new PartitionRepository(db);
  for (const table of PARTITIONED_TABLES) await partitions.ensureMonths(table, start, fleet.until);
  let written = 0;
  for (let from = start; from < fleet.until; from += DAY_MS) {
    const to = Math.min(from + DAY_MS, fleet.until);
    const result = await sql`
      insert into positions (device_id, protocol, server_time, device_time, fix_time, valid, latitude, longitude, altitude, speed, course, accuracy, address, attributes)
      select d, 'teltonika', t + offset_ms + 800, t + offset_ms, t + offset_ms, 1, 52.5 + (t / 1000 % 10000) / 1e6, 13.4 + d / 1e4, 35, 20, 90, 0, null,
             '{"sat":9,"ignition":true,"motion":true}'
      from generate_series(${from}::bigint, ${to - 1}::bigint, ${fleet.stepMs}::bigint) t
      cross join lateral (select d, (d * 997) % ${fleet.stepMs}::bigint as offset_ms from generate_series(1, ${fleet.devices}) d) devices`.execute(db);
    written += Number(result.numAffectedRows ?? 0);
    await sql`
      insert into events (type, event_time, device_id, position_id, geofence_id, maintenance_id, attributes)
      select 'deviceMoving', t + (d * 997) % ${fleet.stepMs}::bigint, d, null, null, null, '{}'
      from generate_series(${from}::bigint, ${to - 1}::bigint, ${fleet.stepMs * fleet.eventEvery}::bigint) t cross join generate_series(1, ${fleet.devices}) d`.execute(db);
  }
  if (latest) {
    await sql`
      insert into latest_positions (device_id, position_id, fix_time)
      select distinct on (device_id) device_id, id, fix_time from positions
      where fix_time >= ${fleet.until - 2 * fleet.stepMs} order by device_id, fix_time desc, id desc
      on conflict (device_id) do update set position_id = excluded.position_id, fix_time = excluded.fix_time`.execute(db);
  }
  await sql`vacuum analyze positions`.execute(db);
  await sql`vacuum analyze events`.execute(db);
  await sql`analyze latest_positions`.execute(db);
  return written;
}
