import { distanceMeters } from '../geo/index.ts';
import type { PositionRow } from '../positions/repository.ts';
import type { HourBucket, HourSums } from './query-repository.ts';

/**
 * How a summary is put together (docs/reports.md, "Summary"): each period (the window, or one local day
 * of it) is its whole UTC hours, added up from summary_hours, and at most two partial hours at its
 * edges, computed from their positions. Each position brings the step from its predecessor (distance,
 * engine hours, fuel spent), the rule summary_hours is written by, so the parts add up to the whole.
 */

const HOUR_MS = 3_600_000;

/** An inclusive period of a summary: the window, or one local day of it. */
export interface Period {
  from: number;
  to: number;
}

/** What one period reads: its whole hours, and the partial hours at its edges (inclusive ranges). */
export interface PeriodParts {
  hours: HourBucket;
  edges: Period[];
}

/** The whole UTC hours of an inclusive period, and the partial hours left at its edges. */
export function partsOf(period: Period): PeriodParts {
  const start = Math.ceil(period.from / HOUR_MS) * HOUR_MS;
  const end = Math.floor((period.to + 1) / HOUR_MS) * HOUR_MS;
  if (end <= start) return { hours: { start, end: start }, edges: [period] };
  const edges: Period[] = [];
  if (period.from < start) edges.push({ from: period.from, to: start - 1 });
  if (end <= period.to) edges.push({ from: end, to: period.to });
  return { hours: { start, end }, edges };
}

/** The inclusive periods of a window: the window itself, or its pieces between local day starts. */
export function periodsOf(window: Period, dayStarts: readonly number[]): Period[] {
  const periods: Period[] = [];
  let from = window.from;
  for (const start of dayStarts) {
    periods.push({ from, to: start - 1 });
    from = start;
  }
  periods.push({ from, to: window.to });
  return periods;
}

/** Sums of one device over some time, as summary_hours holds them; odometers null when unknown. */
export interface Sums {
  firstTime: number;
  lastTime: number;
  positions: number;
  distance: number;
  maxSpeed: number;
  speedSum: number;
  startOdometer: number | null;
  endOdometer: number | null;
  engineHours: number;
  spentFuel: number;
}

export function sumsOfHours(row: HourSums): Sums {
  return {
    firstTime: row.first_time,
    lastTime: row.last_time,
    positions: row.positions,
    distance: row.distance,
    maxSpeed: row.max_speed,
    speedSum: row.speed_sum,
    startOdometer: row.start_odometer,
    endOdometer: row.end_odometer,
    engineHours: row.engine_hours,
    spentFuel: row.spent_fuel,
  };
}

interface Readings {
  odometer: number | null;
  hours: number | null;
  fuel: number | null;
}

function numberOf(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function readingsOf(row: PositionRow): Readings {
  const attributes = JSON.parse(row.attributes) as Record<string, unknown>;
  return {
    odometer: numberOf(attributes['odometer']) ?? numberOf(attributes['totalDistance']),
    hours: numberOf(attributes['hours']),
    fuel: numberOf(attributes['fuel']),
  };
}

/**
 * One device's positions in a partial hour, summed; `previous` is its position before them (the
 * first step starts there). Undefined without positions.
 */
export function sumsOfPositions(positions: readonly PositionRow[], previous: PositionRow | undefined): Sums | undefined {
  if (positions.length === 0) return undefined;
  let before = previous && { row: previous, readings: readingsOf(previous) };
  const first = positions[0] as PositionRow;
  const sums: Sums = {
    firstTime: first.fix_time,
    lastTime: first.fix_time,
    positions: 0,
    distance: 0,
    maxSpeed: 0,
    speedSum: 0,
    startOdometer: null,
    endOdometer: null,
    engineHours: 0,
    spentFuel: 0,
  };
  for (const row of positions) {
    const readings = readingsOf(row);
    sums.positions += 1;
    sums.lastTime = row.fix_time;
    sums.speedSum += row.speed;
    sums.maxSpeed = Math.max(sums.maxSpeed, row.speed);
    if (readings.odometer !== null) {
      sums.startOdometer ??= readings.odometer;
      sums.endOdometer = readings.odometer;
    }
    if (before) {
      const from = before.readings;
      if (from.odometer !== null && readings.odometer !== null) sums.distance += readings.odometer - from.odometer;
      else if (before.row.valid === 1 && row.valid === 1) sums.distance += distanceMeters({ lat: before.row.latitude, lon: before.row.longitude }, { lat: row.latitude, lon: row.longitude });
      if (from.hours !== null && readings.hours !== null) sums.engineHours += readings.hours - from.hours;
      if (from.fuel !== null && readings.fuel !== null) sums.spentFuel += from.fuel - readings.fuel;
    }
    before = { row, readings };
  }
  return sums;
}

/** Parts of one period in time order, added up; undefined when none holds a position. */
export function addUp(parts: readonly (Sums | undefined)[]): Sums | undefined {
  let total: Sums | undefined;
  let distanceBeforeOdometer = 0;
  for (const part of parts) {
    if (!part) continue;
    if (!total) {
      total = { ...part };
      if (part.startOdometer === null) distanceBeforeOdometer = part.distance;
      continue;
    }
    total.firstTime = Math.min(total.firstTime, part.firstTime);
    total.lastTime = Math.max(total.lastTime, part.lastTime);
    total.positions += part.positions;
    total.distance += part.distance;
    total.maxSpeed = Math.max(total.maxSpeed, part.maxSpeed);
    total.speedSum += part.speedSum;
    total.engineHours += part.engineHours;
    total.spentFuel += part.spentFuel;
    if (part.startOdometer !== null && total.startOdometer === null) {
      // The odometer appears in a later part: the start is that reading less the distance before it.
      total.startOdometer = part.startOdometer - distanceBeforeOdometer;
    } else if (total.startOdometer === null) {
      distanceBeforeOdometer += part.distance;
    }
    if (part.endOdometer !== null) total.endOdometer = part.endOdometer;
    else if (total.endOdometer !== null) total.endOdometer += part.distance;
  }
  return total;
}
