// Small conversions shared by the protocol decoders.

const KNOTS_PER_KMH = 1 / 1.852;
const KNOTS_PER_MPS = 3600 / 1852;

export function knotsFromKmh(kmh: number): number {
  return kmh * KNOTS_PER_KMH;
}

export function knotsFromMps(metresPerSecond: number): number {
  return metresPerSecond * KNOTS_PER_MPS;
}

export function isValidCoordinate(latitude: number, longitude: number): boolean {
  return Number.isFinite(latitude) && Number.isFinite(longitude)
    && Math.abs(latitude) <= 90 && Math.abs(longitude) <= 180;
}

// Traccar keeps several alarms of one report as a comma-separated list.
export function addAlarm(attributes: Record<string, unknown>, alarm: string | null | undefined): void {
  if (!alarm) {
    return;
  }
  const current = attributes['alarm'];
  if (typeof current !== 'string' || current === '') {
    attributes['alarm'] = alarm;
  } else if (!current.split(',').includes(alarm)) {
    attributes['alarm'] = `${current},${alarm}`;
  }
}

// Builds a UTC date from calendar fields, or null when a field is out of range (devices send zeros without a fix).
// A two-digit year means 20yy. offsetMinutes is the device's time zone, subtracted to reach UTC.
export function utcDate(
  year: number, month: number, day: number, hour: number, minute: number, second: number, offsetMinutes = 0,
): Date | null {
  const fullYear = year < 100 ? 2000 + year : year;
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) {
    return null;
  }
  const daysInMonth = new Date(Date.UTC(fullYear, month, 0)).getUTCDate();
  if (day > daysInMonth) {
    return null;
  }
  return new Date(Date.UTC(fullYear, month - 1, day, hour, minute, second) - offsetMinutes * 60_000);
}

// 64-bit IO values: a number when exact, else the decimal string.
export function int64Value(value: bigint): number | string {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value) : value.toString();
}
