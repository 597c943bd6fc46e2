import type { HourBucket, HourSums } from './query-repository.ts';
import type { Sums } from './segmentation/machine.ts';

/**
 * How a summary is put together (docs/reports.md, "Summary"): each period (the window, or one local day
 * of it) is its whole UTC hours, added up from summary_hours, and at most two partial hours at its
 * edges, summed from their positions by the segmentation's own rule (machine.ts sumsOfRun), so the
 * parts add up to the whole whatever the window.
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

/** Parts of one period in time order, added up; undefined when none holds a position. */
export function addUp(parts: readonly (Sums | undefined)[]): Sums | undefined {
  let total: Sums | undefined;
  for (const part of parts) {
    if (!part) continue;
    total = total
      ? {
          firstTime: total.firstTime,
          lastTime: part.lastTime,
          positions: total.positions + part.positions,
          distance: total.distance + part.distance,
          maxSpeed: Math.max(total.maxSpeed, part.maxSpeed),
          speedSum: total.speedSum + part.speedSum,
          startOdometer: total.startOdometer,
          endOdometer: part.endOdometer,
          engineHours: total.engineHours + part.engineHours,
          spentFuel: total.spentFuel + part.spentFuel,
        }
      : { ...part };
  }
  return total;
}
