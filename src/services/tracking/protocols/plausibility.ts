// What the server accepts from any decoder: an id the devices module could hold, finite numbers, coordinates on the
// globe and times in a sane window. A message failing this is refused whole, before anything of it is stored.

import { MAX_UNIQUE_ID_LENGTH } from '../../devices/access.ts';
import type { DecodedMessage } from './types.ts';
import { ProtocolError } from './types.ts';

/** No tracker reports fixes from before 2000: such a time is a clock that was never set. */
export const EARLIEST_DEVICE_TIME = Date.UTC(2000, 0, 1);
/** A device clock may run ahead (a wrong time zone) by at most a day, Traccar's default `filter.future`. */
export const MAX_DEVICE_CLOCK_AHEAD_MS = 24 * 60 * 60 * 1000;

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

/** Throws ProtocolError naming the first implausible value of the message. */
export function assertPlausible(message: DecodedMessage, now: Date): void {
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
}
