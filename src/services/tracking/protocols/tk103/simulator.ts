// The TK103 tracker as the simulator, the tests and the benchmarks drive it: the frames it writes (each the
// inverse of the decoder for the fields it writes) and how it reads the server. Loaded on demand by the registry's
// `simulator`: the server never loads it.

import { degreeMinuteFields, KMH_PER_KNOT, numberedIds, textFrameLength, twoDigits, utcClock } from '../simulated-tracker.ts';
import type { DeviceFix, SimulatedTracker } from '../simulated-tracker.ts';

/** The handshake BP00 of a 12-character id; the server answers `(<id>AP01HSO)`. */
export function tk103Login(id: string): Buffer {
  return Buffer.from(`(${id}BP00${id}HSO)`, 'latin1');
}

/**
 * A compact location: BR00 (not answered), BP05 (the login with a location, answered `(<id>AP05)`), or BO01 with
 * the SOS alarm. `(<id>BR00yymmddA2233.1870N11354.3067E<km/h 5>hhmmss<course 6><charge><acc>000000L<odometer hex>)`.
 */
export function tk103Location(id: string, fix: DeviceFix, command: 'BR00' | 'BP05' = 'BR00'): Buffer {
  const time = fix.time;
  const date = twoDigits(time.getUTCFullYear() % 100) + twoDigits(time.getUTCMonth() + 1) + twoDigits(time.getUTCDate());
  const hhmmss = utcClock(time);
  const type = fix.sos ? 'BO012' : command === 'BP05' ? `BP05${id.padStart(15, '0')}` : 'BR00';
  const odometer = Math.max(0, Math.round(fix.odometer ?? 0)).toString(16).toUpperCase().padStart(8, '0');
  const body = [
    date,
    fix.valid ? 'A' : 'V',
    ...degreeMinuteFields(fix),
    Math.min(999.9, fix.speed * KMH_PER_KNOT).toFixed(1).padStart(5, '0'),
    hhmmss,
    (Math.round(fix.course * 100) / 100 % 360).toFixed(2).padStart(6, '0'),
    `0${fix.ignition ? 1 : 0}000000`,
    `L${odometer}`,
  ].join('');
  return Buffer.from(`(${id}${type}${body})`, 'latin1');
}

export const tk103Tracker: SimulatedTracker = {
  uniqueId: numberedIds('0270', 12),
  login: (uniqueId) => [tk103Login(uniqueId)],
  // BP05, the location sent at log-in, is answered AP05 (BR00 is not).
  report: (uniqueId, fix) => tk103Location(uniqueId, fix, 'BP05'),
  serverFrameLength: (buffer) => textFrameLength(buffer, ')'),
};
