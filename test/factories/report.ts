import type { Insertable, Kysely } from 'kysely';
import type { StopsTable, SummaryHoursTable, TrackingTables, TripsTable } from '../../src/services/tracking/tables.ts';

/**
 * Rows of the reports tables as segmentation writes them (times epoch ms, metres, knots, ms), for
 * testing the report routes apart from segmentation: one recognisable value per field.
 */

export function tripRow(deviceId: number, startTime: number, endTime: number, changes: Partial<Insertable<TripsTable>> = {}): Insertable<TripsTable> {
  return {
    device_id: deviceId,
    start_time: startTime,
    end_time: endTime,
    start_position_id: 101,
    end_position_id: 102,
    start_lat: 52.5,
    start_lon: 13.4,
    end_lat: 52.6,
    end_lon: 13.5,
    distance: 12_345.5,
    average_speed: 21.5,
    max_speed: 48.25,
    start_odometer: 1_000_000,
    end_odometer: 1_012_345.5,
    spent_fuel: 3.5,
    driver_unique_id: 'driver-7',
    start_address: 'Alexanderplatz, Berlin',
    end_address: 'Potsdamer Platz, Berlin',
    ongoing: 0,
    ...changes,
  };
}

export function stopRow(deviceId: number, startTime: number, endTime: number, changes: Partial<Insertable<StopsTable>> = {}): Insertable<StopsTable> {
  return {
    device_id: deviceId,
    start_time: startTime,
    end_time: endTime,
    position_id: 201,
    lat: 48.1,
    lon: 11.5,
    engine_hours: 600_000,
    spent_fuel: 0.25,
    address: 'Marienplatz, München',
    ongoing: 0,
    ...changes,
  };
}

/** The sums of one device's UTC hour starting at `hourStart`. */
export function summaryHourRow(deviceId: number, hourStart: number, changes: Partial<SummaryHoursTable> = {}): SummaryHoursTable {
  return {
    device_id: deviceId,
    hour_start: hourStart,
    first_time: hourStart + 60_000,
    last_time: hourStart + 3_540_000,
    positions: 60,
    distance: 10_000,
    max_speed: 40,
    speed_sum: 1_200,
    start_odometer: 500_000,
    end_odometer: 510_000,
    engine_hours: 3_480_000,
    spent_fuel: 2,
    ...changes,
  };
}

export async function insertReportRows(
  db: Kysely<TrackingTables>,
  rows: { trips?: Insertable<TripsTable>[]; stops?: Insertable<StopsTable>[]; hours?: SummaryHoursTable[] },
): Promise<{ trips: number[]; stops: number[] }> {
  const trips: { id: number }[] = [];
  // Chunks stay below SQLite's bound-parameter limit.
  for (let start = 0; start < (rows.trips?.length ?? 0); start += 1000) {
    trips.push(...(await db.insertInto('trips').values((rows.trips ?? []).slice(start, start + 1000)).returning('id').execute()));
  }
  const stops = rows.stops?.length ? await db.insertInto('stops').values(rows.stops).returning('id').execute() : [];
  if (rows.hours?.length) await db.insertInto('summary_hours').values(rows.hours).execute();
  return { trips: trips.map((row) => Number(row.id)), stops: stops.map((row) => Number(row.id)) };
}
