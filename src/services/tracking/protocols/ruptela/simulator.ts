// The Ruptela tracker as the simulator, the tests and the benchmarks drive it: the frames it writes (each the
// inverse of the decoder for the fields it writes) and how it reads the server. Loaded on demand by the registry's
// `simulator`: the server never loads it.

import { crc16Kermit } from '../checksum.ts';
import { kmh, numberedIds } from '../simulated-tracker.ts';
import type { DeviceFix, SimulatedTracker } from '../simulated-tracker.ts';

/** A device message: length, IMEI as a 64-bit number, command, body, CRC-16/KERMIT. */
function ruptelaFrame(imei: string, command: number, body: Buffer): Buffer {
  const data = Buffer.alloc(9 + body.length);
  data.writeBigUInt64BE(BigInt(imei), 0);
  data.writeUInt8(command, 8);
  body.copy(data, 9);
  const frame = Buffer.alloc(2 + data.length + 2);
  frame.writeUInt16BE(data.length, 0);
  data.copy(frame, 2);
  frame.writeUInt16BE(crc16Kermit(data), 2 + data.length);
  return frame;
}

/** Identification (15); the server answers `0002 73 01 <crc>`. */
export function ruptelaIdentification(imei: string): Buffer {
  return ruptelaFrame(imei, 15, Buffer.alloc(0));
}

/** Records (1), answered `0002 64 01 13bc`: ignition as IO 251, odometer (m) as IO 65. */
export function ruptelaRecords(imei: string, fixes: readonly DeviceFix[]): Buffer {
  const records = fixes.map((fix) => {
    const record = Buffer.alloc(23 + 3 + 1 + 1 + (fix.odometer === undefined ? 1 : 6) + 1);
    let offset = record.writeUInt32BE(Math.floor(fix.time.getTime() / 1000), 0);
    offset = record.writeUInt8(0, offset); // timestamp extension
    offset = record.writeUInt8(0, offset); // priority
    offset = record.writeInt32BE(Math.round(fix.longitude * 1e7), offset);
    offset = record.writeInt32BE(Math.round(fix.latitude * 1e7), offset);
    offset = record.writeUInt16BE(Math.max(0, Math.round(fix.altitude * 10)), offset);
    offset = record.writeUInt16BE(Math.round(fix.course * 100) % 36000, offset);
    offset = record.writeUInt8(fix.satellites ?? 9, offset);
    offset = record.writeUInt16BE(kmh(fix.speed), offset);
    offset = record.writeUInt8(9, offset); // hdop 0.9
    offset = record.writeUInt8(0, offset); // event
    offset = record.writeUInt8(1, offset); // one 1-byte element: ignition
    offset = record.writeUInt8(251, offset);
    offset = record.writeUInt8(fix.ignition ? 1 : 0, offset);
    offset = record.writeUInt8(0, offset); // 2-byte elements
    if (fix.odometer === undefined) {
      offset = record.writeUInt8(0, offset);
    } else {
      offset = record.writeUInt8(1, offset);
      offset = record.writeUInt8(65, offset);
      offset = record.writeUInt32BE(Math.max(0, Math.round(fix.odometer)), offset);
    }
    record.writeUInt8(0, offset); // 8-byte elements
    return record;
  });
  return ruptelaFrame(imei, 1, Buffer.concat([Buffer.from([0, records.length]), ...records]));
}

export const ruptelaTracker: SimulatedTracker = {
  uniqueId: numberedIds('86351405', 15),
  login: (uniqueId) => [ruptelaIdentification(uniqueId)],
  report: (uniqueId, fix) => ruptelaRecords(uniqueId, [fix]),
  // <length:2> <content> <CRC:2>
  serverFrameLength: (buffer) => (buffer.length < 2 ? undefined : 4 + buffer.readUInt16BE(0)),
};
