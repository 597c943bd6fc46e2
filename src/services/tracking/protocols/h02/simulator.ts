// The H02 tracker as the simulator, the tests and the benchmarks drive it: the frames it writes (each the
// inverse of the decoder for the fields it writes) and how it reads the server. Loaded on demand by the registry's
// `simulator`: the server never loads it.

import { degreeMinuteFields, numberedIds, textFrameLength, twoDigits, utcClock } from '../simulated-tracker.ts';
import type { DeviceFix, SimulatedTracker } from '../simulated-tracker.ts';

/** A V1 location: `*HQ,<id>,V1,hhmmss,A,ddmm.mmmm,N,dddmm.mmmm,E,speed,course,ddmmyy,status#`; the server echoes a V4. */
export function h02Location(id: string, fix: DeviceFix): Buffer {
  const time = fix.time;
  // The status word is active-low: every bit set means "no alarm"; bit 10 set means ignition on, bit 1 cleared SOS.
  let status = 0xfffffbff;
  if (fix.ignition) status |= 1 << 10;
  if (fix.sos) status &= ~(1 << 1);
  const fields = [
    '*HQ',
    id,
    'V1',
    utcClock(time),
    fix.valid ? 'A' : 'V',
    ...degreeMinuteFields(fix),
    fix.speed.toFixed(2),
    String(Math.round(fix.course) % 360),
    twoDigits(time.getUTCDate()) + twoDigits(time.getUTCMonth() + 1) + twoDigits(time.getUTCFullYear() % 100),
    (status >>> 0).toString(16).toUpperCase().padStart(8, '0'),
  ];
  return Buffer.from(`${fields.join(',')}#`, 'latin1');
}

export const h02Tracker: SimulatedTracker = {
  uniqueId: numberedIds('421006', 10),
  login: () => [],
  report: (uniqueId, fix) => h02Location(uniqueId, fix),
  serverFrameLength: (buffer) => textFrameLength(buffer, '#'),
  commands: {
    // The server acknowledges with V4 messages; instructions name anything else.
    isCommand: (frame) => !/^\*HQ,[^,]*,V4,/.test(frame.toString('latin1')),
    // A V4 message naming the instruction and its time, followed by the location.
    answer(uniqueId, frame, fix) {
      const [, , instruction = '', time = ''] = frame.toString('latin1').slice(1, -1).split(',');
      const location = h02Location(uniqueId, fix).toString('latin1');
      const prefix = `*HQ,${uniqueId},V1,`;
      return Buffer.from(`*HQ,${uniqueId},V4,${instruction},DONE,${time},${location.slice(prefix.length)}`, 'latin1');
    },
  },
};
