// The Galileosky tracker as the simulator, the tests and the benchmarks drive it: the frames it writes (each the
// inverse of the decoder for the fields it writes) and how it reads the server. Loaded on demand by the registry's
// `simulator`: the server never loads it.

import { crc16Modbus } from '../checksum.ts';
import { KMH_PER_KNOT, numberedIds } from '../simulated-tracker.ts';
import type { DeviceFix, SimulatedTracker } from '../simulated-tracker.ts';

/** A main packet: 0x01, the tags' length (little-endian), the tags, CRC-16/MODBUS (little-endian). */
function galileoPacket(tags: Buffer): Buffer {
  const packet = Buffer.alloc(3 + tags.length + 2);
  packet.writeUInt8(0x01, 0);
  packet.writeUInt16LE(tags.length, 1);
  tags.copy(packet, 3);
  packet.writeUInt16LE(crc16Modbus(packet.subarray(0, 3 + tags.length)), 3 + tags.length);
  return packet;
}

/** The head packet naming the device (tags 0x01 hardware, 0x02 firmware, 0x03 IMEI); answered 0x02 + its CRC. */
export function galileoHead(imei: string): Buffer {
  return galileoPacket(Buffer.concat([Buffer.from([0x01, 0x82, 0x02, 0x13, 0x03]), Buffer.from(imei, 'latin1')]));
}

/** One record: time (0x20), coordinates (0x30), speed and course (0x33), altitude (0x34), odometer (0xd4). */
export function galileoRecord(fix: DeviceFix): Buffer {
  const tags = Buffer.alloc(5 + 10 + 5 + 3 + (fix.odometer === undefined ? 0 : 5));
  let offset = tags.writeUInt8(0x20, 0);
  offset = tags.writeUInt32LE(Math.floor(fix.time.getTime() / 1000), offset);
  offset = tags.writeUInt8(0x30, offset);
  offset = tags.writeUInt8(fix.valid ? Math.min(fix.satellites ?? 9, 15) : 0x10, offset);
  offset = tags.writeInt32LE(Math.round(fix.latitude * 1e6), offset);
  offset = tags.writeInt32LE(Math.round(fix.longitude * 1e6), offset);
  offset = tags.writeUInt8(0x33, offset);
  offset = tags.writeUInt16LE(Math.round(fix.speed * KMH_PER_KNOT * 10), offset);
  offset = tags.writeUInt16LE(Math.round(fix.course * 10) % 3600, offset);
  offset = tags.writeUInt8(0x34, offset);
  offset = tags.writeInt16LE(Math.round(fix.altitude), offset);
  if (fix.odometer !== undefined) {
    offset = tags.writeUInt8(0xd4, offset);
    tags.writeUInt32LE(Math.max(0, Math.round(fix.odometer)), offset);
  }
  return galileoPacket(tags);
}

export const galileoTracker: SimulatedTracker = {
  uniqueId: numberedIds('86820400', 15),
  login: (uniqueId) => [galileoHead(uniqueId)],
  report: (_uniqueId, fix) => galileoRecord(fix),
  // Every packet is answered 0x02 and its own checksum.
  serverFrameLength: (buffer) => (buffer.length < 3 ? undefined : 3),
};
