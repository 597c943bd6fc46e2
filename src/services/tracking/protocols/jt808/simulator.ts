// The JT/T 808 tracker as the simulator, the tests and the benchmarks drive it: the frames it writes (each the
// inverse of the decoder for the fields it writes) and how it reads the server. Loaded on demand by the registry's
// `simulator`: the server never loads it.

import { JT808_MESSAGES, jt808Header, jt808Message, jt808MessageType, jt808TerminalResponse } from './decoder.ts';
import { KMH_PER_KNOT, numberedIds, twoDigits } from '../simulated-tracker.ts';
import type { DeviceFix, SimulatedTracker } from '../simulated-tracker.ts';

/** JT808 clocks run on China Standard Time. */
const JT808_CLOCK_OFFSET_MS = 8 * 3_600_000;

function bcdTime(time: Date, offsetMs: number): Buffer {
  const local = new Date(time.getTime() + offsetMs);
  const digits = [local.getUTCFullYear() % 100, local.getUTCMonth() + 1, local.getUTCDate(), local.getUTCHours(), local.getUTCMinutes(), local.getUTCSeconds()]
    .map(twoDigits)
    .join('');
  return Buffer.from(digits, 'hex');
}

/** Terminal registration (0x0100) of a 12-digit terminal id; the server answers 0x8100 with the auth code. */
export function jt808Register(terminalId: string, serial: number): Buffer {
  const body = Buffer.alloc(2 + 2 + 5 + 20 + 7 + 1);
  body.write('TRKSM', 4, 'latin1'); // manufacturer
  body.write('SIM808', 9, 'latin1'); // model
  body.write(terminalId.slice(-7), 29, 'latin1');
  return jt808Message(jt808Header(terminalId), JT808_MESSAGES.register, Buffer.concat([body, Buffer.from('SIM', 'latin1')]), serial);
}

/** Terminal authentication (0x0102) with the code the registration answer gave; answered 0x8001. */
export function jt808Auth(terminalId: string, authCode: string, serial: number): Buffer {
  return jt808Message(jt808Header(terminalId), JT808_MESSAGES.auth, Buffer.from(authCode, 'latin1'), serial);
}

/** The 28-byte basic location with odometer (0x01, 0.1 km) and satellites (0x31) items. */
function jt808LocationRecord(fix: DeviceFix): Buffer {
  const basic = Buffer.alloc(28);
  basic.writeUInt32BE(fix.sos ? 1 : 0, 0); // alarm word: bit 0 emergency
  const status = (fix.ignition ? 1 : 0) | (fix.valid ? 2 : 0) | (fix.latitude < 0 ? 4 : 0) | (fix.longitude < 0 ? 8 : 0);
  basic.writeUInt32BE(status, 4);
  basic.writeUInt32BE(Math.round(Math.abs(fix.latitude) * 1e6), 8);
  basic.writeUInt32BE(Math.round(Math.abs(fix.longitude) * 1e6), 12);
  basic.writeInt16BE(Math.round(fix.altitude), 16);
  basic.writeUInt16BE(Math.round(fix.speed * KMH_PER_KNOT * 10), 18);
  basic.writeUInt16BE(Math.round(fix.course) % 360, 20);
  bcdTime(fix.time, JT808_CLOCK_OFFSET_MS).copy(basic, 22);
  const items = [Buffer.from([0x31, 1, fix.satellites ?? 9])];
  if (fix.odometer !== undefined) {
    const odometer = Buffer.from([0x01, 4, 0, 0, 0, 0]);
    odometer.writeUInt32BE(Math.max(0, Math.round(fix.odometer / 100)), 2);
    items.push(odometer);
  }
  return Buffer.concat([basic, ...items]);
}

/** Location report (0x0200); the server answers a general response (0x8001) echoing the serial. */
export function jt808Location(terminalId: string, fix: DeviceFix, serial: number): Buffer {
  return jt808Message(jt808Header(terminalId), JT808_MESSAGES.location, jt808LocationRecord(fix), serial);
}

/** Batch of stored locations (0x0704, type 1 "blind area"); answered once with 0x8001. */
export function jt808LocationBatch(terminalId: string, fixes: readonly DeviceFix[], serial: number): Buffer {
  const records = fixes.map(jt808LocationRecord);
  const head = Buffer.alloc(3);
  head.writeUInt16BE(records.length, 0);
  head.writeUInt8(1, 2);
  const parts = records.flatMap((record) => {
    const length = Buffer.alloc(2);
    length.writeUInt16BE(record.length);
    return [length, record];
  });
  return jt808Message(jt808Header(terminalId), JT808_MESSAGES.locationBatch, Buffer.concat([head, ...parts]), serial);
}

/** What the server writes that is not a command: its acknowledgements and answers. */
const SERVER_ANSWERS: ReadonlySet<number> = new Set([
  JT808_MESSAGES.generalResponse, JT808_MESSAGES.generalResponse2, JT808_MESSAGES.registerResponse, JT808_MESSAGES.timeSyncResponse,
]);

export const jt808Tracker: SimulatedTracker = {
  uniqueId: numberedIds('8613', 12),
  // Registration, then authentication with the code it returns (the terminal id, as Traccar answers).
  login: (uniqueId, serial) => [jt808Register(uniqueId, serial), jt808Auth(uniqueId, uniqueId, serial + 1)],
  report: (uniqueId, fix, serial) => jt808Location(uniqueId, fix, serial),
  // 0x7e ... 0x7e, escaped: the bytes up to the second delimiter.
  serverFrameLength(buffer) {
    if (buffer.length === 0) return undefined;
    const end = buffer.indexOf(buffer[0]!, 1);
    return end < 0 ? undefined : end + 1;
  },
  commands: {
    isCommand: (frame) => !SERVER_ANSWERS.has(jt808MessageType(frame)),
    // A terminal general response (0x0001, success) naming the command's serial and id.
    answer: (_uniqueId, frame, _fix, serial) => jt808TerminalResponse(frame, serial),
  },
};
