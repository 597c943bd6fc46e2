import type { PositionRow } from './repository.ts';

/** The representations of a position history (JSON for every query form; GPX and CSV for histories). */
export type PositionFormat = 'json' | 'gpx' | 'csv';

export const MEDIA_TYPES: Record<PositionFormat, string> = {
  json: 'application/json',
  gpx: 'application/gpx+xml',
  csv: 'text/csv',
};

const EXTENSIONS: Record<PositionFormat, string> = { json: 'json', gpx: 'gpx', csv: 'csv' };

/**
 * The format an Accept header prefers: the supported type with the highest q-value (JSON on ties,
 * for wildcards and when nothing supported is named; a client asking only for something else
 * still gets JSON rather than a 406).
 */
export function preferredFormat(accept: string | undefined): PositionFormat {
  return preferredMediaFormat(accept, POSITION_TYPES, 'json');
}

/** The media types JSON answers to (other formats' tables start from it). */
export const JSON_TYPES = { 'application/json': 'json', 'application/*': 'json', '*/*': 'json' } as const;
const POSITION_TYPES: Readonly<Record<string, PositionFormat>> = { ...JSON_TYPES, 'application/gpx+xml': 'gpx', 'text/csv': 'csv' };

/**
 * Of the formats `byType` names by media type, the one an Accept header prefers (highest q-value;
 * `fallback` on ties and when nothing supported is named).
 */
export function preferredMediaFormat<F extends string>(accept: string | undefined, byType: Readonly<Record<string, F>>, fallback: F): F {
  if (!accept) return fallback;
  let best: { format: F; q: number } = { format: fallback, q: -1 };
  for (const part of accept.split(',').slice(0, 32)) {
    const [rawType = '', ...parameters] = part.split(';');
    const type = rawType.trim().toLowerCase();
    let q = 1;
    for (const parameter of parameters) {
      const [name, value] = parameter.split('=').map((piece) => piece.trim());
      if (name?.toLowerCase() === 'q' && value !== undefined) q = Number(value);
    }
    if (!(q > 0)) continue;
    const format = Object.hasOwn(byType, type) ? byType[type] : undefined;
    if (format && (q > best.q || (q === best.q && format === fallback))) best = { format, q };
  }
  return best.format;
}

export function downloadName(deviceId: number, format: PositionFormat): string {
  return `device-${deviceId}-positions.${EXTENSIONS[format]}`;
}

const DAY_MS = 86_400_000;
const TWO_DIGITS = Array.from({ length: 60 }, (_, value) => String(value).padStart(2, '0'));
const THREE_DIGITS = Array.from({ length: 1000 }, (_, value) => String(value).padStart(3, '0'));

/**
 * toISOString for epoch milliseconds, several times faster on a history: the positions of a
 * history share a few days, so the date part is cached and the time of day is put together from
 * tables. Times that are not whole milliseconds take the plain path.
 */
class IsoFormatter {
  private day = Number.NaN;
  private datePart = '';

  format(ms: number): string {
    if (!Number.isSafeInteger(ms)) return new Date(ms).toISOString();
    const day = Math.floor(ms / DAY_MS);
    if (day !== this.day) {
      const full = new Date(day * DAY_MS).toISOString();
      this.day = day;
      this.datePart = full.slice(0, full.indexOf('T') + 1);
    }
    let rest = ms - day * DAY_MS;
    const hours = Math.floor(rest / 3_600_000);
    rest -= hours * 3_600_000;
    const minutes = Math.floor(rest / 60_000);
    rest -= minutes * 60_000;
    const seconds = Math.floor(rest / 1000);
    return `${this.datePart}${TWO_DIGITS[hours]}:${TWO_DIGITS[minutes]}:${TWO_DIGITS[seconds]}.${THREE_DIGITS[rest - seconds * 1000]}Z`;
  }
}

const times = new IsoFormatter();

/** Epoch milliseconds as ISO 8601 text, exactly as Date.prototype.toISOString writes it. */
export function isoTime(ms: number): string {
  return times.format(ms);
}

function isoOrNull(ms: number | null): string {
  return ms === null ? 'null' : `"${times.format(ms)}"`;
}

/** Protocol names repeat row after row: the last one's JSON is kept. */
let lastText: string | null = null;
let lastJson = 'null';

function jsonStringOrNull(text: string | null): string {
  if (text === null) return 'null';
  if (text !== lastText) {
    lastText = text;
    lastJson = JSON.stringify(text);
  }
  return lastJson;
}

/**
 * One Position (spec §2.4) as JSON text, written by hand: the stored attributes are already JSON
 * text (this module writes them with JSON.stringify) and numbers are always finite (checked on store).
 */
export function positionJson(row: PositionRow): string {
  return (
    '{"id":' + row.id + ',"deviceId":' + row.device_id + ',"protocol":' + jsonStringOrNull(row.protocol) +
    ',"serverTime":' + isoOrNull(row.server_time) + ',"deviceTime":' + isoOrNull(row.device_time) + ',"fixTime":' + isoOrNull(row.fix_time) +
    ',"valid":' + (row.valid === 1) + ',"latitude":' + row.latitude + ',"longitude":' + row.longitude + ',"altitude":' + row.altitude +
    ',"speed":' + row.speed + ',"course":' + row.course + ',"accuracy":' + row.accuracy + ',"address":' + jsonStringOrNull(row.address) +
    ',"attributes":' + row.attributes + '}'
  );
}

/** Positions as the elements of a JSON array, comma-separated (appending to one string is cheaper than join). */
function positionElements(rows: readonly PositionRow[]): string {
  let text = '';
  for (const row of rows) text += text === '' ? positionJson(row) : ',' + positionJson(row);
  return text;
}

export function positionsJson(rows: readonly PositionRow[]): string {
  return '[' + positionElements(rows) + ']';
}

/** A JSON array written page by page: the whole history is never held in memory. */
export async function* jsonDocument(pages: AsyncIterable<PositionRow[]>): AsyncGenerator<string> {
  let first = true;
  yield '[';
  for await (const page of pages) {
    if (page.length === 0) continue;
    yield (first ? '' : ',') + positionElements(page);
    first = false;
  }
  yield ']';
}

const KNOTS_TO_METRES_PER_SECOND = 1852 / 3600;

function xmlEscape(text: string): string {
  return text.replace(/[<>&"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

function gpxPoint(row: PositionRow): string {
  // Garmin's TrackPointExtension v2 is the common home of speed (m/s) and course (degrees) in GPX 1.1.
  return (
    `<trkpt lat="${row.latitude}" lon="${row.longitude}"><ele>${row.altitude}</ele><time>${times.format(row.fix_time)}</time>` +
    `<extensions><gpxtpx:TrackPointExtension><gpxtpx:speed>${row.speed * KNOTS_TO_METRES_PER_SECOND}</gpxtpx:speed>` +
    `<gpxtpx:course>${row.course}</gpxtpx:course></gpxtpx:TrackPointExtension></extensions></trkpt>\n`
  );
}

/** A GPX 1.1 document with one track of one segment, named after the device. */
export async function* gpxDocument(pages: AsyncIterable<PositionRow[]>, trackName: string): AsyncGenerator<string> {
  yield '<?xml version="1.0" encoding="UTF-8"?>\n' +
    '<gpx version="1.1" creator="Trackstack" xmlns="http://www.topografix.com/GPX/1/1" ' +
    'xmlns:gpxtpx="http://www.garmin.com/xmlschemas/TrackPointExtension/v2">\n' +
    `<trk><name>${xmlEscape(trackName)}</name><trkseg>\n`;
  for await (const page of pages) yield page.map(gpxPoint).join('');
  yield '</trkseg></trk>\n</gpx>\n';
}

export const CSV_COLUMNS = [
  'id',
  'deviceId',
  'protocol',
  'serverTime',
  'deviceTime',
  'fixTime',
  'valid',
  'latitude',
  'longitude',
  'altitude',
  'speed',
  'course',
  'accuracy',
  'address',
  'attributes',
] as const;

/**
 * A text field of RFC 4180 CSV. Text starting with a formula character is prefixed with an
 * apostrophe, so a spreadsheet opening the file shows it instead of evaluating it.
 */
export function csvText(text: string | null): string {
  if (text === null || text === '') return '';
  const safe = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

function csvTime(ms: number | null): string {
  return ms === null ? '' : times.format(ms);
}

function csvRow(row: PositionRow): string {
  return (
    `${row.id},${row.device_id},${csvText(row.protocol)},${csvTime(row.server_time)},${csvTime(row.device_time)},${csvTime(row.fix_time)},` +
    `${row.valid === 1},${row.latitude},${row.longitude},${row.altitude},${row.speed},${row.course},${row.accuracy},` +
    `${csvText(row.address)},${csvText(row.attributes)}\r\n`
  );
}

/** CSV with a header row; times ISO 8601, speed in knots, attributes as JSON text. */
export async function* csvDocument(pages: AsyncIterable<PositionRow[]>): AsyncGenerator<string> {
  yield `${CSV_COLUMNS.join(',')}\r\n`;
  for await (const page of pages) yield page.map(csvRow).join('');
}
