// The Meitrack tracker as the simulator, the tests and the benchmarks drive it: the frames it writes (each the
// inverse of the decoder for the fields it writes) and how it reads the server. Loaded on demand by the registry's
// `simulator`: the server never loads it.

import { kmh, numberedIds, textFrameLength, twoDigits } from '../simulated-tracker.ts';
import type { DeviceFix, SimulatedTracker } from '../simulated-tracker.ts';

/** A Meitrack frame: `$$<flag><length>,<imei>,<content>*<checksum>\r\n`, the length counted from the first comma. */
function meitrackFrame(imei: string, content: string): Buffer {
  const tail = `,${imei},${content}*`;
  const length = tail.length + 4; // checksum and CRLF
  const head = `$$A${length}${tail}`;
  const sum = [...Buffer.from(head, 'latin1')].reduce((total, byte) => (total + byte) & 0xff, 0);
  return Buffer.from(`${head}${sum.toString(16).toUpperCase().padStart(2, '0')}\r\n`, 'latin1');
}

/** An AAA report (event 35 "track by interval", 1 for SOS), not answered; speed in km/h, odometer in metres. */
export function meitrackLocation(imei: string, fix: DeviceFix): Buffer {
  const time = fix.time;
  const stamp = [time.getUTCFullYear() % 100, time.getUTCMonth() + 1, time.getUTCDate(), time.getUTCHours(), time.getUTCMinutes(), time.getUTCSeconds()].map(twoDigits).join('');
  const fields = [
    'AAA', fix.sos ? '1' : '35', fix.latitude.toFixed(6), fix.longitude.toFixed(6), stamp, fix.valid ? 'A' : 'V',
    String(fix.satellites ?? 9), '20', String(kmh(fix.speed)), String(Math.round(fix.course) % 360), '1.0',
    String(Math.round(fix.altitude)), String(Math.max(0, Math.round(fix.odometer ?? 0))), '0', '262|1|0001|0001',
    fix.ignition ? '0100' : '0000', '0000|0000|0000|0190|0514', '', '',
  ];
  return meitrackFrame(imei, fields.join(','));
}

/** AAC, which the server answers `@@z27,<imei>,AAC,1*<checksum>`. */
export function meitrackAac(imei: string): Buffer {
  return meitrackFrame(imei, 'AAC,1');
}

export const meitrackTracker: SimulatedTracker = {
  uniqueId: numberedIds('86102005', 15),
  login: () => [],
  // AAA reports are not answered: the AAC after one is, once the report is stored.
  report: (uniqueId, fix) => Buffer.concat([meitrackLocation(uniqueId, fix), meitrackAac(uniqueId)]),
  serverFrameLength: (buffer) => textFrameLength(buffer, '\r\n'),
};
