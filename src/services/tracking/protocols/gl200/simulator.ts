// The Queclink tracker as the simulator, the tests and the benchmarks drive it: the frames it writes (each the
// inverse of the decoder for the fields it writes) and how it reads the server. Loaded on demand by the registry's
// `simulator`: the server never loads it.

import { KMH_PER_KNOT, numberedIds, textFrameLength, twoDigits } from '../simulated-tracker.ts';
import type { DeviceFix, SimulatedTracker } from '../simulated-tracker.ts';

function queclinkTime(time: Date): string {
  return `${time.getUTCFullYear()}${[time.getUTCMonth() + 1, time.getUTCDate(), time.getUTCHours(), time.getUTCMinutes(), time.getUTCSeconds()].map(twoDigits).join('')}`;
}

/**
 * A GL300 `+RESP:GTFRI` report (`+RESP:GTSOS` for SOS) with one fix, km/h, odometer in km; not answered. An invalid fix
 * is sent without coordinates, as the devices do.
 */
export function gl200Location(imei: string, fix: DeviceFix, count = 1): Buffer {
  const location = fix.valid
    ? [fix.longitude.toFixed(6), fix.latitude.toFixed(6), queclinkTime(fix.time)]
    : ['', '', ''];
  const fields = [
    fix.sos ? '+RESP:GTSOS' : '+RESP:GTFRI', '1A0800', imei, 'GL300', '0', '0', '1', fix.valid ? '1' : '0',
    (fix.speed * KMH_PER_KNOT).toFixed(1), String(Math.round(fix.course) % 360), fix.altitude.toFixed(1), ...location,
    '0460', '0000', '18d8', '6141', '', (Math.max(0, fix.odometer ?? 0) / 1000).toFixed(1), '90', queclinkTime(fix.time),
    count.toString(16).toUpperCase().padStart(4, '0'),
  ];
  return Buffer.from(`${fields.join(',')}$`, 'latin1');
}

/** A heartbeat, which the server answers `+SACK:GTHBD,<protocol version>,<count>$`. */
export function gl200Heartbeat(imei: string, time: Date, count = 1): Buffer {
  return Buffer.from(`+ACK:GTHBD,1A0800,${imei},GL300,${queclinkTime(time)},${count.toString(16).toUpperCase().padStart(4, '0')}$`, 'latin1');
}

export const gl200Tracker: SimulatedTracker = {
  uniqueId: numberedIds('86059900', 15),
  login: () => [],
  // Reports are not answered: the heartbeat after one is, once the report is stored.
  report: (uniqueId, fix, serial) => Buffer.concat([gl200Location(uniqueId, fix, serial), gl200Heartbeat(uniqueId, fix.time, serial)]),
  serverFrameLength: (buffer) => textFrameLength(buffer, '$'),
};
