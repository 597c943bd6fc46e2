// What the server accepts from any decoder: an id the devices module could hold, finite numbers, coordinates on the
// globe and times in a sane window. A message failing this is refused whole, before anything of it is stored. Values
// that are impossible but leave the fix usable (a course past 360°, a negative speed) are replaced here, the one place
// that decides them, and recorded on the message so the metrics count them.

import { MAX_UNIQUE_ID_LENGTH } from '../../devices/access.ts';
import type { DecodedMessage, DecodedPosition, NormalisedValue } from './types.ts';
import { ProtocolError } from './types.ts';

/** No tracker reports fixes from before 2000: such a time is a clock that was never set. */
export const EARLIEST_DEVICE_TIME = Date.UTC(2000, 0, 1);
/** A device clock may run ahead (a wrong time zone) by at most a day, Traccar's default `filter.future`. */
export const MAX_DEVICE_CLOCK_AHEAD_MS = 24 * 60 * 60 * 1000;

/** Why a value reached no row as sent: replaced here (NormalisedValue), or a status report with no fix to place it at (the pipeline). */
export const IMPLAUSIBLE_VALUE_REASONS = ['course_out_of_range', 'negative_speed', 'no_fix'] as const satisfies readonly (NormalisedValue | 'no_fix')[];

/** A time from 2000 to a day after `now`: what the server accepts as a fix or device time. */
export function isPlausibleDeviceTime(time: Date, now: Date): boolean {
  const value = time.getTime();
  return value >= EARLIEST_DEVICE_TIME && value <= now.getTime() + MAX_DEVICE_CLOCK_AHEAD_MS;
}

function checkTime(what: string, time: Date | null, now: Date): void {
  if (time === null) {
    return;
  }
  const value = time.getTime();
  if (!isPlausibleDeviceTime(time, now)) {
    throw new ProtocolError(`${what} ${Number.isNaN(value) ? 'is not a date' : time.toISOString()} is before 2000 or more than a day ahead`);
  }
}

function checkFinite(what: string, value: number): void {
  if (!Number.isFinite(value)) {
    throw new ProtocolError(`${what} is not a finite number`);
  }
}

function checkAttributes(attributes: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(attributes)) {
    if (typeof value === 'number') {
      checkFinite(`attribute ${key}`, value);
    }
  }
}

/**
 * Replaces the position's impossible values, answering why each was replaced. A course is degrees in
 * [0, 360): 360 is north written the other way round (some firmwares do) and becomes 0; anything else
 * outside the range is a misread field (no encoding is the same heading modulo 360) and becomes 0,
 * Traccar's "unknown". A negative speed means nothing either and becomes 0. The API's Position has no
 * null for either, so 0 is the one value that claims nothing.
 */
function normalise(position: DecodedPosition): NormalisedValue[] {
  const replaced: NormalisedValue[] = [];
  if (position.course === 360) {
    position.course = 0;
  } else if (position.course < 0 || position.course > 360) {
    position.course = 0;
    replaced.push('course_out_of_range');
  }
  if (position.speed < 0) {
    position.speed = 0;
    replaced.push('negative_speed');
  }
  return replaced;
}

/**
 * Throws ProtocolError naming the first implausible value of the message; otherwise replaces its
 * impossible course and speed values (see normalise) and lists them in `message.normalised`.
 */
export function enforcePlausibility(message: DecodedMessage, now: Date): void {
  if (message.uniqueId !== undefined && message.uniqueId.length > MAX_UNIQUE_ID_LENGTH) {
    throw new ProtocolError(`device id longer than ${MAX_UNIQUE_ID_LENGTH} characters`);
  }
  for (const position of message.positions) {
    checkTime('fix time', position.fixTime, now);
    checkTime('device time', position.deviceTime, now);
    checkFinite('latitude', position.latitude);
    checkFinite('longitude', position.longitude);
    if (Math.abs(position.latitude) > 90 || Math.abs(position.longitude) > 180) {
      throw new ProtocolError('coordinates out of range');
    }
    checkFinite('altitude', position.altitude);
    checkFinite('speed', position.speed);
    checkFinite('course', position.course);
    checkFinite('accuracy', position.accuracy);
    checkAttributes(position.attributes);
  }
  for (const status of message.statuses) {
    checkTime('device time', status.deviceTime, now);
    checkAttributes(status.attributes);
  }
  // Only once the whole message is known to be kept.
  const normalised = message.positions.flatMap(normalise);
  if (normalised.length > 0) message.normalised = normalised;
}
