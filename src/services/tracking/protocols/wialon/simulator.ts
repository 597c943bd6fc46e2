// The Wialon IPS tracker as the simulator, the tests and the benchmarks drive it: the frames it writes (each the
// inverse of the decoder for the fields it writes) and how it reads the server. Loaded on demand by the registry's
// `simulator`: the server never loads it.

import { degreeMinuteFields, KMH_PER_KNOT, numberedIds, textFrameLength, twoDigits, utcClock } from '../simulated-tracker.ts';
import type { DeviceFix, SimulatedTracker } from '../simulated-tracker.ts';

/** The login line `#L#<imei>;NA`; the server answers `#AL#1` for a known device. */
export function wialonLogin(imei: string): Buffer {
  return Buffer.from(`#L#${imei};NA\r\n`, 'latin1');
}

/** An extended data line (`#D#`, answered `#AD#1`), speed in km/h, ignition and SOS as parameters. */
export function wialonData(fix: DeviceFix): Buffer {
  const time = fix.time;
  const date = twoDigits(time.getUTCDate()) + twoDigits(time.getUTCMonth() + 1) + twoDigits(time.getUTCFullYear() % 100);
  const hhmmss = utcClock(time);
  const parameters = [`sos:1:${fix.sos ? 1 : 0}`];
  if (fix.ignition !== undefined) parameters.push(`ignition:3:${fix.ignition}`);
  if (fix.odometer !== undefined) parameters.push(`odometer:2:${Math.round(fix.odometer)}`);
  const fields = [
    date, hhmmss,
    ...degreeMinuteFields(fix),
    (fix.speed * KMH_PER_KNOT).toFixed(1), String(Math.round(fix.course) % 360), fix.altitude.toFixed(1),
    String(fix.valid ? (fix.satellites ?? 9) : 0), 'NA', 'NA', 'NA', 'NA', 'NA', parameters.join(','),
  ];
  return Buffer.from(`#D#${fields.join(';')}\r\n`, 'latin1');
}

export const wialonTracker: SimulatedTracker = {
  uniqueId: numberedIds('86300539', 15),
  login: (uniqueId) => [wialonLogin(uniqueId)],
  report: (_uniqueId, fix) => wialonData(fix),
  serverFrameLength: (buffer) => textFrameLength(buffer, '\r\n'),
};
