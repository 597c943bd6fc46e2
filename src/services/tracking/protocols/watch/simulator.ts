// The Watch tracker as the simulator, the tests and the benchmarks drive it: the frames it writes (each the
// inverse of the decoder for the fields it writes) and how it reads the server. Loaded on demand by the registry's
// `simulator`: the server never loads it.

import { watchFrame } from './decoder.ts';
import { KMH_PER_KNOT, numberedIds, textFrameLength, twoDigits, utcClock } from '../simulated-tracker.ts';
import type { DeviceFix, SimulatedTracker } from '../simulated-tracker.ts';

/** The link message LK, bare or with steps, tumbles and battery %; the server answers `[3G*<id>*0002*LK]`. */
export function watchLink(id: string, batteryLevel?: number): Buffer {
  return watchFrame('3G', id, undefined, batteryLevel === undefined ? 'LK' : `LK,0,0,${batteryLevel}`);
}

/** A location (UD, not answered; AL with the SOS status bit when `sos`, answered AL), decimal degrees, km/h. */
export function watchLocation(id: string, fix: DeviceFix): Buffer {
  const time = fix.time;
  const fields = [
    fix.sos ? 'AL' : 'UD',
    twoDigits(time.getUTCDate()) + twoDigits(time.getUTCMonth() + 1) + twoDigits(time.getUTCFullYear() % 100),
    utcClock(time),
    fix.valid ? 'A' : 'V',
    Math.abs(fix.latitude).toFixed(6), fix.latitude >= 0 ? 'N' : 'S',
    Math.abs(fix.longitude).toFixed(6), fix.longitude >= 0 ? 'E' : 'W',
    (fix.speed * KMH_PER_KNOT).toFixed(2), String(Math.round(fix.course) % 360), fix.altitude.toFixed(1),
    String(fix.satellites ?? 9), '100', '80', '0', '0',
    (fix.sos ? 0x10000 : 0).toString(16).padStart(8, '0'),
    '0', '0',
  ];
  return watchFrame('3G', id, undefined, fields.join(','));
}

export const watchTracker: SimulatedTracker = {
  uniqueId: numberedIds('93', 10),
  login: (uniqueId) => [watchLink(uniqueId)],
  // Locations are not answered: the link message after one is, once the location is stored.
  report: (uniqueId, fix) => Buffer.concat([watchLocation(uniqueId, fix), watchLink(uniqueId)]),
  serverFrameLength: (buffer) => textFrameLength(buffer, ']'),
};
