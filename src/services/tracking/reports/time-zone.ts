/**
 * Local time in an IANA zone, from Intl alone: the offset at an instant, and the instants where
 * local days begin (DST days last 23 or 25 hours; half-hour zones cut days between UTC hours).
 */

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** Offsets change at most every quarter hour boundary in every zone in use: one Intl call per quarter hour. */
const OFFSET_STEP_MS = 900_000;

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** The canonical name of an IANA zone, or undefined when it is none. */
export function canonicalTimeZone(name: string): string | undefined {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/** Wall-clock time in a zone, and the UTC offset there, with one Intl call per quarter hour of instants. */
export class ZoneClock {
  readonly timeZone: string;
  private readonly formatter: Intl.DateTimeFormat;
  private readonly offsets = new Map<number, number>();

  constructor(timeZone: string) {
    this.timeZone = timeZone;
    this.formatter = formatterOf(timeZone);
  }

  /** Milliseconds to add to a UTC instant to get the local wall-clock time as if it were UTC. */
  offsetAt(ms: number): number {
    const step = Math.floor(ms / OFFSET_STEP_MS);
    let offset = this.offsets.get(step);
    if (offset === undefined) {
      const at = step * OFFSET_STEP_MS;
      const parts: Record<string, number> = {};
      for (const part of this.formatter.formatToParts(at)) if (part.type !== 'literal') parts[part.type] = Number(part.value);
      offset = Date.UTC(parts.year as number, (parts.month as number) - 1, parts.day, parts.hour, parts.minute, parts.second) - at;
      if (this.offsets.size > 10_000) this.offsets.clear();
      this.offsets.set(step, offset);
    }
    return offset;
  }

  /** The local wall-clock time of an instant, as epoch ms of the same wall-clock time in UTC. */
  wallTime(ms: number): number {
    return ms + this.offsetAt(ms);
  }

  /** ISO 8601 with the zone's offset, e.g. 2025-03-30T03:00:00.000+02:00. */
  isoTime(ms: number): string {
    const offset = this.offsetAt(ms);
    const wall = new Date(ms + offset).toISOString().slice(0, 23);
    if (offset === 0) return `${wall}Z`;
    const minutes = Math.abs(offset) / 60_000;
    const sign = offset < 0 ? '-' : '+';
    return `${wall}${sign}${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
  }

  /** The first instant of the local day holding `ms`. */
  dayStart(ms: number): number {
    const wall = this.wallTime(ms);
    return this.instantOfWallMidnight(wall - (((wall % DAY_MS) + DAY_MS) % DAY_MS));
  }

  /**
   * The first instant whose local date is the one of `wallMidnight` (a wall-clock midnight as UTC ms):
   * midnight itself, or the end of a DST gap that swallows it (e.g. America/Santiago).
   */
  private instantOfWallMidnight(wallMidnight: number): number {
    const first = wallMidnight - this.offsetAt(wallMidnight);
    const second = wallMidnight - this.offsetAt(first);
    if (this.wallTime(second) === wallMidnight) return second;
    if (this.wallTime(first) === wallMidnight) return first;
    // Midnight does not exist that day: the day begins where the gap ends, found by bisection.
    let before = Math.min(first, second) - 2 * HOUR_MS;
    let after = Math.max(first, second) + 2 * HOUR_MS;
    while (after - before > 1) {
      const middle = Math.floor((before + after) / 2);
      if (this.wallTime(middle) >= wallMidnight) after = middle;
      else before = middle;
    }
    return after;
  }

  /** The local day starts strictly after `from` and at or before `to`, ascending. */
  dayStartsBetween(from: number, to: number): number[] {
    const starts: number[] = [];
    let start = this.dayStart(from);
    for (;;) {
      // 26 hours after a day's start is always inside the next day (days last 23 to 25 hours).
      start = this.dayStart(start + 26 * HOUR_MS);
      if (start > to) return starts;
      starts.push(start);
    }
  }
}
