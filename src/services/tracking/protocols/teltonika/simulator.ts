// The Teltonika tracker as the simulator, the tests and the benchmarks drive it: the frames it writes (each the
// inverse of the decoder for the fields it writes) and how it reads the server. Loaded on demand by the registry's
// `simulator`: the server never loads it.

import { crc16Ibm } from '../checksum.ts';
import { TELTONIKA_RESPONSE_TYPE, teltonikaCodec12Frame } from './commands.ts';
import { kmh, numberedIds } from '../simulated-tracker.ts';
import type { DeviceFix, SimulatedTracker } from '../simulated-tracker.ts';

/** `<length:2> <IMEI ASCII>`: the first frame of every connection; the server answers 0x01 (accepted) or 0x00. */
export function teltonikaHandshake(imei: string): Buffer {
  const text = Buffer.from(imei, 'latin1');
  const frame = Buffer.alloc(2 + text.length);
  frame.writeUInt16BE(text.length, 0);
  text.copy(frame, 2);
  return frame;
}

/** IO elements of a Codec 8 record, grouped by value size as the codec writes them. */
function teltonikaIo(fix: DeviceFix): { one: [number, number][]; four: [number, number][] } {
  const one: [number, number][] = [];
  const four: [number, number][] = [];
  if (fix.ignition !== undefined) one.push([239, fix.ignition ? 1 : 0]);
  if (fix.motion !== undefined) one.push([240, fix.motion ? 1 : 0]);
  if (fix.sos) one.push([236, 1]);
  if (fix.odometer !== undefined) four.push([16, Math.max(0, Math.round(fix.odometer))]);
  return { one, four };
}

function teltonikaRecord(fix: DeviceFix): Buffer {
  const { one, four } = teltonikaIo(fix);
  // GPS element (24), event id, IO count, then each size group: its count and its (id, value) pairs.
  const record = Buffer.alloc(24 + 2 + (1 + one.length * 2) + 1 + (1 + four.length * 5) + 1);
  let offset = record.writeBigUInt64BE(BigInt(fix.time.getTime()), 0);
  offset = record.writeUInt8(0, offset); // priority: low
  offset = record.writeInt32BE(Math.round(fix.longitude * 1e7), offset);
  offset = record.writeInt32BE(Math.round(fix.latitude * 1e7), offset);
  offset = record.writeInt16BE(Math.round(fix.altitude), offset);
  offset = record.writeUInt16BE(Math.round(fix.course) % 360, offset);
  offset = record.writeUInt8(fix.valid ? (fix.satellites ?? 9) : 0, offset);
  offset = record.writeUInt16BE(kmh(fix.speed), offset);
  offset = record.writeUInt8(0, offset); // event IO id: periodic record
  offset = record.writeUInt8(one.length + four.length, offset);
  offset = record.writeUInt8(one.length, offset);
  for (const [id, value] of one) offset = record.writeUInt8(value, record.writeUInt8(id, offset));
  offset = record.writeUInt8(0, offset); // 2-byte elements
  offset = record.writeUInt8(four.length, offset);
  for (const [id, value] of four) offset = record.writeUInt32BE(value, record.writeUInt8(id, offset));
  record.writeUInt8(0, offset); // 8-byte elements
  return record;
}

/** A Codec 8 AVL packet carrying the fixes as records (1 to 255); the server acknowledges with the count. */
export function teltonikaAvlPacket(fixes: readonly DeviceFix[]): Buffer {
  if (fixes.length === 0 || fixes.length > 255) throw new RangeError('a Teltonika packet carries 1 to 255 records');
  const data = Buffer.concat([Buffer.from([0x08, fixes.length]), ...fixes.map(teltonikaRecord), Buffer.from([fixes.length])]);
  const frame = Buffer.alloc(12 + data.length);
  frame.writeUInt32BE(data.length, 4);
  data.copy(frame, 8);
  frame.writeUInt32BE(crc16Ibm(data), 8 + data.length);
  return frame;
}

/** Codec 12 commands carry text; the device's Codec 12 response (type 0x06) carries its reply. */
const REPLIES: Record<string, string> = {
  'setdigout 1': 'DOUT1:1 DOUT2:IGNORED',
  'setdigout 0': 'DOUT1:0 DOUT2:IGNORED',
};

function commandText(frame: Buffer): string {
  return frame.subarray(15, 15 + frame.readUInt32BE(11)).toString('latin1');
}

export const teltonikaTracker: SimulatedTracker = {
  uniqueId: numberedIds('35630704245', 15),
  login: (uniqueId) => [teltonikaHandshake(uniqueId)],
  // 0x01 accepts the IMEI, 0x00 refuses it.
  accepted: (answer) => answer[0] === 1,
  report: (_uniqueId, fix) => teltonikaAvlPacket([fix]),
  // The login is answered by one byte; a report by its record count (4 bytes, never 0); a command starts with 4 zero bytes.
  serverFrameLength(buffer, loggedIn) {
    if (!loggedIn) return buffer.length < 1 ? undefined : 1;
    if (buffer.length < 4) return undefined;
    if (buffer.readUInt32BE(0) !== 0) return 4;
    return buffer.length < 8 ? undefined : 12 + buffer.readUInt32BE(4);
  },
  commands: {
    isCommand: (frame) => frame.length > 4,
    answer: (_uniqueId, frame) => {
      const text = commandText(frame);
      return teltonikaCodec12Frame(TELTONIKA_RESPONSE_TYPE, Buffer.from(REPLIES[text] ?? `${text} OK`, 'latin1'));
    },
  },
};
