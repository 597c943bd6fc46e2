// The GPS103 (Coban) tracker as the simulator, the tests and the benchmarks drive it: the frames it writes (each the
// inverse of the decoder for the fields it writes) and how it reads the server. Loaded on demand by the registry's
// `simulator`: the server never loads it.

import { degreeMinuteFields, numberedIds, twoDigits, utcClock } from '../simulated-tracker.ts';
import type { DeviceFix, SimulatedTracker } from '../simulated-tracker.ts';

/** The log-on request `##,imei:<imei>,A;`; the server answers LOAD. */
export function gps103Login(imei: string): Buffer {
  return Buffer.from(`##,imei:${imei},A;`, 'latin1');
}

/** The heartbeat, the IMEI alone; the server answers ON. */
export function gps103Heartbeat(imei: string): Buffer {
  return Buffer.from(`${imei};`, 'latin1');
}

/**
 * A `tracker` report (`help me` for SOS, answered `**,imei:<imei>,E;`; another keyword, such as a command's answer), its clock in UTC:
 * `imei:<imei>,tracker,yymmddhhmmss,,F,hhmmss.000,A,ddmm.mmmm,N,dddmm.mmmm,E,<knots>,<course>,<altitude>,<acc>,<door>;`
 */
export function gps103Location(imei: string, fix: DeviceFix, keyword = 'tracker'): Buffer {
  const time = fix.time;
  const hhmmss = utcClock(time);
  const date = twoDigits(time.getUTCFullYear() % 100) + twoDigits(time.getUTCMonth() + 1) + twoDigits(time.getUTCDate());
  const fields = [
    `imei:${imei}`,
    fix.sos ? 'help me' : keyword,
    date + hhmmss,
    '',
    'F',
    `${hhmmss}.000`,
    fix.valid ? 'A' : 'V',
    ...degreeMinuteFields(fix),
    fix.speed.toFixed(2),
    String(Math.round(fix.course) % 360),
    String(Math.round(fix.altitude)),
    fix.ignition === undefined ? '' : fix.ignition ? '1' : '0',
  ];
  return Buffer.from(`${fields.join(',')};`, 'latin1');
}

/** The server's answers, each a frame of its own; its commands (`**,imei:…`) have no terminator. */
const ANSWERS = ['ON', 'LOAD'];

/**
 * Where the frame starting the buffer ends. A command runs up to the next frame, or to what has arrived (the server
 * writes each at once), so a custom instruction holding `ON` or `LOAD` is cut there.
 */
function serverFrameLength(buffer: Buffer): number | undefined {
  const text = buffer.toString('latin1');
  const answer = ANSWERS.find((candidate) => text.startsWith(candidate));
  if (answer) return answer.length;
  // Not yet known: a frame's first bytes.
  if ([...ANSWERS, '**,'].some((start) => start.startsWith(text))) return undefined;
  // Bytes of no frame the server writes are passed on one at a time, as not commands.
  if (!text.startsWith('**,')) return 1;
  const ends = ['**,', ...ANSWERS].map((next) => text.indexOf(next, 3)).filter((index) => index > 0);
  return ends.length > 0 ? Math.min(...ends) : text.length;
}

// **,imei:<id>,<instruction>
function commandText(frame: Buffer): string {
  return frame.toString('latin1').split(',').slice(2).join(',');
}

export const gps103Tracker: SimulatedTracker = {
  uniqueId: numberedIds('86358601', 15),
  login: (uniqueId) => [gps103Login(uniqueId)],
  // Reports are not answered: the heartbeat after one is, once the report is stored.
  report: (uniqueId, fix) => Buffer.concat([gps103Location(uniqueId, fix), gps103Heartbeat(uniqueId)]),
  serverFrameLength,
  commands: {
    // `**,imei:<id>,E;` answers an SOS report; commands have no terminator.
    isCommand: (frame) => frame.toString('latin1').startsWith('**,') && !frame.toString('latin1').endsWith(';'),
    // A report keyed by the instruction's letter: J (engine stop) is answered `jt`, K `kt`.
    answer: (uniqueId, frame, fix) => gps103Location(uniqueId, fix, `${commandText(frame).charAt(0).toLowerCase()}t`),
  },
};
