// The Suntech tracker as the simulator, the tests and the benchmarks drive it: the frames it writes (each the
// inverse of the decoder for the fields it writes) and how it reads the server. Loaded on demand by the registry's
// `simulator`: the server never loads it.

import { KMH_PER_KNOT, numberedIds, twoDigits } from '../simulated-tracker.ts';
import type { DeviceFix, SimulatedTracker } from '../simulated-tracker.ts';

/** An SA200 status report (`STT`; `EMG` with emergency 1 for SOS), km/h; Suntech devices get no answer. */
export function suntechLocation(id: string, fix: DeviceFix): Buffer {
  const time = fix.time;
  const date = `${time.getUTCFullYear()}${twoDigits(time.getUTCMonth() + 1)}${twoDigits(time.getUTCDate())}`;
  const clock = `${twoDigits(time.getUTCHours())}:${twoDigits(time.getUTCMinutes())}:${twoDigits(time.getUTCSeconds())}`;
  const fields = [
    fix.sos ? 'SA200EMG' : 'SA200STT', id, '042', date, clock, '16d41',
    fix.latitude.toFixed(6), fix.longitude.toFixed(6), (fix.speed * KMH_PER_KNOT).toFixed(3), (Math.round(fix.course * 100) / 100 % 360).toFixed(2),
    String(fix.satellites ?? 9), fix.valid ? '1' : '0', String(Math.max(0, Math.round(fix.odometer ?? 0))), '12.50',
    `${fix.ignition ? 1 : 0}00000`, ...(fix.sos ? ['1'] : ['2', '1']),
  ];
  return Buffer.from(`${fields.join(';')}\r`, 'latin1');
}

/** Suntech devices get no answer at all: the simulator counts their reports sent, never acknowledged. */
export const suntechTracker: SimulatedTracker = {
  uniqueId: numberedIds('5113', 9),
  login: () => [],
  report: (uniqueId, fix) => suntechLocation(uniqueId, fix),
};
