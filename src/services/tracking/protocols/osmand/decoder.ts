// OsmAnd / Traccar Client HTTP protocol (Traccar port 5055).
// Either query-string or form keys (id, lat, lon, timestamp, ...) or, with Content-Type application/json, the JSON
// document the current Traccar Client app posts: { device_id, location: { timestamp, coords: {...}, battery: {...} } }.

import { isValidCoordinate, knotsFromMps, utcDate } from '../decode-helpers.ts';
import type { DecodedMessage, DecodedPosition, DecodedStatus } from '../types.ts';
import { ProtocolError } from '../types.ts';

export interface OsmAndRequest {
  query: Record<string, string | string[] | undefined>;
  contentType?: string;
  body?: Buffer | string;
}

// One report per request (two or more only for a JSON array of locations); never an ack, the HTTP status answers.
export interface OsmAndMessage extends DecodedMessage {
  uniqueId: string;
}

// Numeric timestamps below this are seconds, above it milliseconds (Traccar's rule).
const SECONDS_LIMIT = 2 ** 31 - 1;
// Limits on what one request may carry. Traccar Client sends about a dozen short parameters; these
// keep every parser below working on small, bounded text.
export const OSMAND_LIMITS = {
  /** Parameters of the query string and the form body together, repeats included; keys of JSON `extras`. */
  parameters: 100,
  keyLength: 64,
  valueLength: 1024,
  /** A number a device sends fits easily ("-179.123456789012345"); longer text is not one. */
  numberLength: 32,
  /** Locations in one JSON document. */
  locations: 1000,
} as const;
// The integer and fraction parts cannot overlap, so matching never backtracks (linear in the input).
const NUMERIC = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/i;
const PLAIN_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/;
// Keys that must never become attribute names (prototype pollution) or are not position data.
const IGNORED_KEYS = new Set(['__proto__', 'notificationToken']);

function parseTimestamp(value: string): Date {
  const text = value.trim();
  let time: Date | null = null;
  if (/^\d+(\.\d+)?$/.test(text) && text.length <= OSMAND_LIMITS.numberLength) {
    const number = Number(text);
    time = new Date(number < SECONDS_LIMIT ? number * 1000 : number);
  } else if (ISO_DATE_TIME.test(text)) {
    const zoned = /(Z|[+-]\d{2}:?\d{2})$/i.test(text) ? text : `${text}Z`;
    time = new Date(zoned.replace(/([+-]\d{2})(\d{2})$/, '$1:$2'));
  } else {
    const match = PLAIN_DATE_TIME.exec(text);
    if (match) {
      const [year, month, day, hour, minute, second] = match.slice(1).map(Number) as [
        number, number, number, number, number, number,
      ];
      time = utcDate(year, month, day, hour, minute, second);
    }
  }
  if (!time || Number.isNaN(time.getTime())) {
    throw new ProtocolError('invalid timestamp');
  }
  return time;
}

// A finite number, or null when the text is not one (too long, malformed, or beyond the range of a double).
function numberFrom(value: string): number | null {
  const text = value.trim();
  if (text.length > OSMAND_LIMITS.numberLength || !NUMERIC.test(text)) {
    return null;
  }
  const number = Number(text);
  return Number.isFinite(number) ? number : null;
}

function parseNumber(key: string, value: string): number {
  const number = numberFrom(value);
  if (number === null) {
    throw new ProtocolError(`invalid ${key}`);
  }
  return number;
}

function typedValue(value: string): string | number | boolean {
  if (value === 'true' || value === 'false') {
    return value === 'true';
  }
  return numberFrom(value) ?? value;
}

// JSON text copied into an attribute; a longer one is refused like a long parameter.
function boundedText(key: string, value: string): string {
  if (value.length > OSMAND_LIMITS.valueLength) {
    throw new ProtocolError(`${key} is longer than ${OSMAND_LIMITS.valueLength} characters`);
  }
  return value;
}

function buildReport(
  latitude: number | null, longitude: number | null, time: Date | null, now: Date,
  fields: Omit<DecodedPosition, 'fixTime' | 'deviceTime' | 'latitude' | 'longitude'>,
): { position?: DecodedPosition; status?: DecodedStatus } {
  if (latitude === null || longitude === null) {
    // A request with an id alone (or a time alone) reports nothing: refused, so the sender learns it.
    if (Object.keys(fields.attributes).length === 0) throw new ProtocolError('no location and no value to report');
    return { status: { deviceTime: time, attributes: fields.attributes } };
  }
  if (!isValidCoordinate(latitude, longitude)) {
    throw new ProtocolError('invalid coordinates');
  }
  return { position: { ...fields, fixTime: time ?? now, deviceTime: time, latitude, longitude } };
}

function toMessage(uniqueId: string, reports: { position?: DecodedPosition; status?: DecodedStatus }[]): OsmAndMessage {
  return {
    uniqueId,
    positions: reports.flatMap((report) => (report.position ? [report.position] : [])),
    statuses: reports.flatMap((report) => (report.status ? [report.status] : [])),
  };
}

// Query and form parameters by key, in one pass; every key and value is checked against the limits first.
function collectParameters(request: OsmAndRequest): Map<string, string[]> {
  let count = 0;
  const checked = (key: string, value: string): string => {
    count += 1;
    if (count > OSMAND_LIMITS.parameters) {
      throw new ProtocolError(`more than ${OSMAND_LIMITS.parameters} parameters`);
    }
    if (key.length > OSMAND_LIMITS.keyLength) {
      throw new ProtocolError(`a parameter name is longer than ${OSMAND_LIMITS.keyLength} characters`);
    }
    if (value.length > OSMAND_LIMITS.valueLength) {
      throw new ProtocolError(`parameter ${key} is longer than ${OSMAND_LIMITS.valueLength} characters`);
    }
    return value;
  };
  const parameters = new Map<string, string[]>();
  if (request.body !== undefined) {
    const form = new URLSearchParams(typeof request.body === 'string' ? request.body : request.body.toString('utf8'));
    for (const [key, value] of form) {
      const values = parameters.get(key);
      if (values) {
        values.push(checked(key, value));
      } else {
        parameters.set(key, [checked(key, value)]);
      }
    }
  }
  // Query keys win over the same keys in the form.
  for (const [key, value] of Object.entries(request.query)) {
    if (value !== undefined) {
      parameters.set(key, (Array.isArray(value) ? value : [value]).map((item) => checked(key, item)));
    }
  }
  return parameters;
}

function decodeQuery(request: OsmAndRequest, now: Date): OsmAndMessage {
  const parameters = collectParameters(request);
  const attributes: Record<string, unknown> = {};
  const fields = { valid: true, altitude: 0, speed: 0, course: 0, accuracy: 0, attributes };
  let uniqueId = '';
  let time: Date | null = null;
  let latitude: number | null = null;
  let longitude: number | null = null;

  for (const [key, values] of parameters) {
    const value = values[values.length - 1] ?? '';
    switch (key) {
      case 'id':
      case 'deviceid':
        uniqueId = value.trim();
        break;
      case 'valid':
        fields.valid = value.toLowerCase() === 'true' || value === '1';
        break;
      case 'timestamp':
        time = parseTimestamp(value);
        break;
      case 'lat':
        latitude = parseNumber(key, value);
        break;
      case 'lon':
        longitude = parseNumber(key, value);
        break;
      case 'location': {
        const [latitudeText = '', longitudeText = ''] = value.split(',');
        latitude = parseNumber('location', latitudeText);
        longitude = parseNumber('location', longitudeText);
        break;
      }
      case 'cell':
      case 'wifi':
        attributes[key] = values.length === 1 ? value : values;
        break;
      case 'speed':
        fields.speed = parseNumber(key, value);
        break;
      case 'bearing':
      case 'heading':
        fields.course = parseNumber(key, value);
        break;
      case 'altitude':
        fields.altitude = parseNumber(key, value);
        break;
      case 'accuracy':
        fields.accuracy = parseNumber(key, value);
        break;
      case 'hdop':
        attributes['hdop'] = parseNumber(key, value);
        break;
      case 'batt':
        attributes['batteryLevel'] = parseNumber(key, value);
        break;
      case 'driverUniqueId':
        attributes['driverUniqueId'] = value;
        break;
      case 'charge':
        attributes['charge'] = value.toLowerCase() === 'true';
        break;
      default:
        if (!IGNORED_KEYS.has(key)) {
          attributes[key] = typedValue(value);
        }
    }
  }
  if (!uniqueId) {
    throw new ProtocolError('missing id');
  }
  return toMessage(uniqueId, [buildReport(latitude, longitude, time, now, fields)]);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function numberOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function decodeJsonLocation(location: Record<string, unknown>, now: Date) {
  const attributes: Record<string, unknown> = {};
  const fields = { valid: true, altitude: 0, speed: 0, course: 0, accuracy: 0, attributes };
  const time = typeof location['timestamp'] === 'string' ? parseTimestamp(boundedText('timestamp', location['timestamp'])) : null;
  let latitude: number | null = null;
  let longitude: number | null = null;

  const coords = location['coords'];
  if (isObject(coords)) {
    latitude = numberOrNull(coords['latitude']);
    longitude = numberOrNull(coords['longitude']);
    if (latitude === null || longitude === null) {
      throw new ProtocolError('invalid coordinates');
    }
    const speed = numberOrNull(coords['speed']);
    const heading = numberOrNull(coords['heading']);
    const accuracy = numberOrNull(coords['accuracy']);
    fields.speed = speed !== null && speed >= 0 ? knotsFromMps(speed) : 0;
    fields.course = heading !== null && heading >= 0 ? heading : 0;
    fields.accuracy = accuracy !== null && accuracy >= 0 ? accuracy : 0;
    fields.altitude = numberOrNull(coords['altitude']) ?? 0;
  }

  if (typeof location['event'] === 'string') {
    attributes['event'] = boundedText('event', location['event']);
  }
  if (typeof location['is_moving'] === 'boolean') {
    attributes['motion'] = location['is_moving'];
  }
  const odometer = numberOrNull(location['odometer']);
  if (odometer !== null) {
    attributes['odometer'] = odometer;
  }
  if (typeof location['mock'] === 'boolean') {
    attributes['mock'] = location['mock'];
  }
  const activity = location['activity'];
  if (isObject(activity) && typeof activity['type'] === 'string') {
    attributes['activity'] = boundedText('activity', activity['type']);
  }
  const battery = location['battery'];
  if (isObject(battery)) {
    const level = numberOrNull(battery['level']);
    if (level !== null && level >= 0) {
      attributes['batteryLevel'] = Math.round(level * 100);
    }
    if (typeof battery['is_charging'] === 'boolean') {
      attributes['charge'] = battery['is_charging'];
    }
  }
  const alarm = location['alarm'];
  const hasAlarm = typeof alarm === 'string';
  if (hasAlarm) {
    attributes['alarm'] = boundedText('alarm', alarm);
  }
  const extras = location['extras'];
  if (isObject(extras)) {
    const entries = Object.entries(extras);
    if (entries.length > OSMAND_LIMITS.parameters) {
      throw new ProtocolError(`more than ${OSMAND_LIMITS.parameters} extras`);
    }
    for (const [key, value] of entries) {
      if (key.length > OSMAND_LIMITS.keyLength) {
        throw new ProtocolError(`an extras name is longer than ${OSMAND_LIMITS.keyLength} characters`);
      }
      const isScalar = typeof value === 'string' || typeof value === 'boolean' || numberOrNull(value) !== null;
      if (isScalar && !IGNORED_KEYS.has(key) && !(key === 'alarm' && hasAlarm)) {
        attributes[key] = typeof value === 'string' ? boundedText(key, value) : value;
      }
    }
  }
  return buildReport(latitude, longitude, time, now, fields);
}

function decodeJson(body: string, now: Date): OsmAndMessage {
  let root: unknown;
  try {
    root = JSON.parse(body);
  } catch {
    throw new ProtocolError('invalid JSON');
  }
  if (!isObject(root)) {
    throw new ProtocolError('JSON body must be an object');
  }
  const deviceId = root['device_id'];
  const uniqueId = typeof deviceId === 'string' || typeof deviceId === 'number' ? boundedText('device_id', String(deviceId)).trim() : '';
  if (!uniqueId) {
    throw new ProtocolError('missing id');
  }
  const location = root['location'];
  const locations = Array.isArray(location) ? location : [location];
  if (locations.length > OSMAND_LIMITS.locations) {
    throw new ProtocolError(`more than ${OSMAND_LIMITS.locations} locations`);
  }
  if (locations.length === 0 || !locations.every(isObject)) {
    throw new ProtocolError('missing location');
  }
  return toMessage(uniqueId, locations.map((entry) => decodeJsonLocation(entry, now)));
}

export function decodeOsmAnd(request: OsmAndRequest, now: Date): OsmAndMessage {
  if (request.contentType?.toLowerCase().startsWith('application/json')) {
    const body = request.body === undefined ? '' : request.body.toString();
    return decodeJson(body, now);
  }
  return decodeQuery(request, now);
}
