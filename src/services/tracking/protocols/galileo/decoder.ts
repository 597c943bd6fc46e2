// Galileosky (Traccar's `galileo`, port 5034, TCP). Main packets: 0x01, a little-endian length whose top bit marks
// archived data, tag-value pairs of fixed lengths, CRC-16/MODBUS; a repeated tag starts the next record. The head
// packet names the device (tag 0x03, the IMEI). Compressed packets 0x08 carry a minimal data set per record; photo
// packets 0x07 are acknowledged and not kept. Every packet is answered with its type's answer header and the packet's
// own checksum, as Traccar does. Iridium packets (0x01 with a 0x01001c header) carry one record.

import { crc16Modbus } from '../checksum.ts';
import { commandEncoder } from '../command-types.ts';
import type { DeviceCommand } from '../command-types.ts';
import { addAlarm, isValidCoordinate, knotsFromKmh } from '../decode-helpers.ts';
import { LittleEndianReader } from '../little-endian-reader.ts';
import type { ConnectionState, DecodedMessage, DecodedPosition, DecodedStatus, TcpProtocol } from '../types.ts';
import { ProtocolError } from '../types.ts';

const MAIN = 0x01;
const PHOTO = 0x07;
const COMPRESSED = 0x08;
const IRIDIUM_HEADER = 0x01001c;
const MAX_FRAME_LENGTH = 0x7fff + 5;

function isIridium(buffer: Buffer, offset: number): boolean {
  return buffer[offset] === MAIN && buffer.length - offset >= 6 && buffer.readUIntBE(offset + 3, 3) === IRIDIUM_HEADER;
}

function splitFrames(buffer: Buffer): { frames: Buffer[]; consumed: number } {
  const frames: Buffer[] = [];
  let offset = 0;
  while (buffer.length - offset >= 6) {
    const type = buffer[offset]!;
    if (type !== MAIN && type !== PHOTO && type !== COMPRESSED) {
      if (frames.length > 0) break;
      throw new ProtocolError(`galileo: unknown packet type 0x${type.toString(16)}`);
    }
    const length = isIridium(buffer, offset)
      ? 3 + buffer.readUInt16BE(offset + 1)
      : 5 + (buffer.readUInt16LE(offset + 1) & 0x7fff);
    if (length > MAX_FRAME_LENGTH) throw new ProtocolError('galileo: packet too long');
    if (buffer.length - offset < length) break;
    frames.push(buffer.subarray(offset, offset + length));
    offset += length;
  }
  return { frames, consumed: offset };
}

/** The answer to a packet: its answer header and the packet's checksum bytes as received. */
function answer(header: number, frame: Buffer): Buffer {
  return Buffer.from([header, frame[frame.length - 2]!, frame[frame.length - 1]!]);
}

// Lengths of the tags decoded only by skipping (Galileosky's tag table).
const TAG_LENGTHS = new Map<number, number>();
const setLengths = (length: number, tags: number[]) => tags.forEach((tag) => TAG_LENGTHS.set(tag, length));
setLengths(1, [0x01, 0x02, 0x35, 0x43, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd5,
  0x88, 0x89, 0x8a, 0x8b, 0x8c, 0xa0, 0xaf, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae]);
setLengths(2, [0x04, 0x10, 0x34, 0x40, 0x41, 0x42, 0x45, 0x46, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x60, 0x61, 0x62, 0x70, 0x71, 0x72,
  0x73, 0x74, 0x75, 0x76, 0x77, 0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xd6, 0xd7, 0xd8, 0xd9, 0xda]);
setLengths(3, [0x63, 0x64, 0x6f, 0x5d, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0xfa, 0x80, 0x81, 0x82, 0x83, 0x84,
  0x85, 0x86, 0x87]);
setLengths(4, [0x20, 0x33, 0x44, 0x90, 0xc0, 0xc2, 0xc3, 0xd3, 0xd4, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0xf0, 0xf9, 0x5a, 0x47, 0xf1, 0xf2,
  0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xe2, 0xe9]);
TAG_LENGTHS.set(0x5b, 7);
TAG_LENGTHS.set(0x5c, 68);
TAG_LENGTHS.set(0xfd, 8);

interface Record {
  time: Date | null;
  location: { valid: boolean; latitude: number; longitude: number } | null;
  speed: number;
  course: number;
  altitude: number;
  attributes: { [key: string]: unknown };
}

function newRecord(): Record {
  return { time: null, location: null, speed: 0, course: 0, altitude: 0, attributes: {} };
}

// Runs of tags with one meaning: first, last, attribute prefix, the tag numbered 0, the value's reader.
const TAG_RANGES: [number, number, string, number, (cursor: LittleEndianReader) => number][] = [
  [0x50, 0x57, 'adc', 0x50, (cursor) => cursor.u16()],
  [0x60, 0x62, 'fuel', 0x60, (cursor) => cursor.u16()],
  [0xa0, 0xaf, 'can8BitR', 0xa0 - 15, (cursor) => cursor.u8()],
  [0xb0, 0xb9, 'can16BitR', 0xb0 - 5, (cursor) => cursor.u16()],
  [0xc4, 0xd2, 'can8BitR', 0xc4, (cursor) => cursor.u8()],
  [0xd6, 0xda, 'can16BitR', 0xd6, (cursor) => cursor.u16()],
  [0xdb, 0xdf, 'can32BitR', 0xdb, (cursor) => cursor.u32()],
  [0xe2, 0xe9, 'userData', 0xe2, (cursor) => cursor.u32()],
  [0xf0, 0xf9, 'can32BitR', 0xf0 - 5, (cursor) => cursor.u32()],
];

// The tags Traccar names; the ranges first, then the single tags; unknown lengths are a ProtocolError.
function readTag(tag: number, cursor: LittleEndianReader, record: Record): void {
  const attributes = record.attributes;
  const range = TAG_RANGES.find(([first, last]) => tag >= first && tag <= last);
  if (range) {
    attributes[`${range[2]}${tag - range[3]}`] = range[4](cursor);
    return;
  }
  switch (tag) {
    case 0x01: attributes['versionHw'] = cursor.u8(); break;
    case 0x02: attributes['versionFw'] = cursor.u8(); break;
    case 0x04: attributes['deviceId'] = cursor.u16(); break;
    case 0x10: attributes['index'] = cursor.u16(); break;
    case 0x20: record.time = new Date(cursor.u32() * 1000); break;
    case 0x30: {
      const valid = (cursor.u8() & 0xf0) === 0;
      record.location = { valid, latitude: cursor.i32() / 1e6, longitude: cursor.i32() / 1e6 };
      break;
    }
    case 0x33:
      record.speed = knotsFromKmh(cursor.u16() / 10);
      record.course = cursor.u16() / 10;
      break;
    case 0x34: record.altitude = cursor.i16(); break;
    case 0x35: attributes['hdop'] = cursor.u8() / 10; break;
    case 0x40: attributes['status'] = cursor.u16(); break;
    case 0x41: attributes['power'] = cursor.u16() / 1000; break;
    case 0x42: attributes['battery'] = cursor.u16() / 1000; break;
    case 0x43: attributes['deviceTemp'] = cursor.i8(); break;
    case 0x44: attributes['acceleration'] = cursor.u32(); break;
    case 0x45: attributes['output'] = cursor.u16(); break;
    case 0x46: attributes['input'] = cursor.u16(); break;
    case 0x48: attributes['statusExtended'] = cursor.u16(); break;
    case 0x58: attributes['rs2320'] = cursor.u16(); break;
    case 0x59: attributes['rs2321'] = cursor.u16(); break;
    case 0x90: attributes['driverUniqueId'] = String(cursor.u32()); break;
    case 0xc0: attributes['fuelTotal'] = cursor.u32() * 0.5; break;
    case 0xc1:
      attributes['fuel'] = cursor.u8() * 0.4;
      attributes['temp1'] = cursor.u8() - 40;
      attributes['rpm'] = cursor.u16() * 0.125;
      break;
    case 0xc2: attributes['canB0'] = cursor.u32(); break;
    case 0xc3: attributes['canB1'] = cursor.u32(); break;
    case 0xd4: attributes['odometer'] = cursor.u32(); break;
    case 0xe0: attributes['index'] = cursor.u32(); break;
    case 0xe1: {
      const length = cursor.u8();
      attributes['result'] = cursor.bytes(length).toString('latin1');
      break;
    }
    case 0xea: {
      const length = cursor.u8();
      attributes['userDataArray'] = cursor.bytes(length).toString('hex');
      break;
    }
    case 0xfe: cursor.skip(cursor.u16()); break;
    default: {
      const length = TAG_LENGTHS.get(tag);
      if (length === undefined) throw new ProtocolError(`galileo: unknown tag 0x${tag.toString(16)}`);
      cursor.skip(length);
    }
  }
}

function toReport(record: Record, archive: boolean): DecodedPosition | DecodedStatus {
  if (archive) record.attributes['archive'] = true;
  const { time, location } = record;
  if (time === null || !location || !isValidCoordinate(location.latitude, location.longitude)) {
    return { deviceTime: time, attributes: record.attributes };
  }
  return {
    fixTime: time, deviceTime: time, ...location, altitude: record.altitude, speed: record.speed, course: record.course,
    accuracy: 0, attributes: record.attributes,
  };
}

function decodeMain(frame: Buffer): DecodedMessage {
  const cursor = new LittleEndianReader(frame, 3, frame.length - 2);
  const archive = (frame.readUInt16LE(1) & 0x8000) !== 0;
  const message: DecodedMessage = { positions: [], statuses: [], ack: answer(0x02, frame) };
  let record = newRecord();
  let seen = new Set<number>();
  const finish = () => {
    // As in Traccar: a record counts with a location and a time; a command answer without them still counts.
    if (!record.location || !record.time) return;
    const report = toReport(record, archive);
    if ('latitude' in report) message.positions.push(report);
    else message.statuses.push(report);
  };
  while (cursor.offset < cursor.end) {
    const tag = cursor.u8();
    if (seen.has(tag)) {
      finish();
      record = newRecord();
      seen = new Set();
    }
    seen.add(tag);
    if (tag === 0x03) {
      const imei = cursor.bytes(15).toString('latin1');
      if (!/^\d{15}$/.test(imei)) throw new ProtocolError('galileo: bad IMEI');
      message.uniqueId = imei;
    } else {
      readTag(tag, cursor, record);
    }
  }
  if (record.location && record.time) finish();
  else if (record.attributes['result'] !== undefined) message.statuses.push({ deviceTime: null, attributes: record.attributes });
  return message;
}

/** Read `count` bits, most significant first, from `bytes` at bit `position`. */
function bits(bytes: Buffer, position: number, count: number): number {
  let value = 0;
  for (let index = 0; index < count; index++) {
    const bit = position + index;
    value = value * 2 + ((bytes[bit >> 3]! >> (7 - (bit & 7))) & 1);
  }
  return value;
}

/** The 10-byte minimal data set: seconds since the start of the current UTC year, validity, coordinates, alarm. */
function minimalDataSet(cursor: LittleEndianReader, record: Record, now: Date): void {
  const bytes = cursor.bytes(10);
  const yearStart = Date.UTC(now.getUTCFullYear(), 0, 1);
  record.time = new Date(yearStart + bits(bytes, 1, 25) * 1000);
  const valid = bits(bytes, 26, 1) === 0;
  const longitude = (360 * bits(bytes, 27, 22)) / 4194304 - 180;
  const latitude = (180 * bits(bytes, 49, 21)) / 2097152 - 90;
  record.location = { valid, latitude, longitude };
  if (bits(bytes, 70, 1) > 0) addAlarm(record.attributes, 'general');
}

function decodeCompressed(frame: Buffer, now: Date): DecodedMessage {
  const cursor = new LittleEndianReader(frame, 3, frame.length - 2);
  const message: DecodedMessage = { positions: [], statuses: [], ack: answer(0x02, frame) };
  while (cursor.offset < cursor.end) {
    const record = newRecord();
    minimalDataSet(cursor, record, now);
    const tags: number[] = [];
    for (let count = cursor.u8(); count > 0; count--) tags.push(cursor.u8());
    for (const tag of tags) readTag(tag, cursor, record);
    const report = toReport(record, false);
    if ('latitude' in report) message.positions.push(report);
    else message.statuses.push(report);
  }
  return message;
}

function decodeIridium(frame: Buffer): DecodedMessage {
  const cursor = new LittleEndianReader(frame, 3 + 3 + 4, frame.length);
  const imei = cursor.bytes(15).toString('latin1');
  if (!/^\d{15}$/.test(imei)) throw new ProtocolError('galileo: bad IMEI');
  cursor.skip(1 + 4); // session status, reserved
  const record = newRecord();
  record.time = new Date(cursor.bytes(4).readUInt32BE(0) * 1000);
  cursor.skip(3); // coordinates header
  const flags = cursor.u8();
  const latitude = cursor.u8() + cursor.bytes(2).readUInt16BE(0) / 60000;
  const longitude = cursor.u8() + cursor.bytes(2).readUInt16BE(0) / 60000;
  record.location = { valid: false, latitude: flags & 2 ? -latitude : latitude, longitude: flags & 1 ? -longitude : longitude };
  cursor.skip(4 + 1); // accuracy, data tag header
  const length = cursor.bytes(2).readUInt16BE(0);
  const data = new LittleEndianReader(frame, cursor.offset, Math.min(cursor.offset + length, frame.length));
  while (data.offset < data.end) {
    const tag = data.u8();
    if (tag === 0x30) {
      const valid = (data.u8() & 0xf0) === 0;
      record.location = { valid, latitude: data.i32() / 1e6, longitude: data.i32() / 1e6 };
    } else {
      readTag(tag, data, record);
    }
  }
  const report = toReport(record, false);
  return 'latitude' in report ? { uniqueId: imei, positions: [report], statuses: [] } : { uniqueId: imei, positions: [], statuses: [report] };
}

function decode(frame: Buffer, now: Date): DecodedMessage {
  if (frame[0] === MAIN) return isIridium(frame, 0) ? decodeIridium(frame) : decodeMain(frame);
  if (frame[0] === COMPRESSED) return decodeCompressed(frame, now);
  return { positions: [], statuses: [], ack: answer(PHOTO, frame) }; // photos are not kept
}

/** Traccar's Galileosky text command (tags 0x03 IMEI, 0x04 device id, 0xe0 number, 0xe1 text), CRC-16/MODBUS. */
export const galileoCommands = commandEncoder(
  ['custom', 'outputControl'],
  (command: DeviceCommand): string => {
    let text: string;
    if (command.type === 'custom') {
      text = String(command.attributes['data'] ?? '');
    } else if (command.type === 'outputControl') {
      const [index, data] = [String(command.attributes['index'] ?? ''), String(command.attributes['data'] ?? '')];
      if (!/^\d{1,2}$/.test(index) || !/^[01]$/.test(data)) throw new ProtocolError('galileo: output index must be a number and data 0 or 1');
      text = `Out ${index},${data}`;
    } else {
      throw new ProtocolError(`galileo: ${command.type} is not supported`);
    }
    if (text === '' || text.length > 255) throw new ProtocolError('galileo: the text must be 1 to 255 characters');
    return text;
  },
  (text, { uniqueId, sequence }) => {
    if (!/^\d{15}$/.test(uniqueId)) throw new ProtocolError('galileo: the IMEI must be 15 digits');
    // The command number (tag 0xe0) is the sequence, so the device's answer can be matched; Traccar sends 0.
    const number = Buffer.alloc(4);
    number.writeUInt32LE(sequence >>> 0);
    const body = Buffer.concat([
      Buffer.from([0x03]), Buffer.from(uniqueId, 'latin1'), Buffer.from([0x04, 0, 0, 0xe0]), number,
      Buffer.from([0xe1, text.length]), Buffer.from(text, 'latin1'),
    ]);
    const frame = Buffer.alloc(3 + body.length + 2);
    frame.writeUInt8(MAIN, 0);
    frame.writeUInt16LE(body.length, 1);
    body.copy(frame, 3);
    frame.writeUInt16LE(crc16Modbus(frame.subarray(0, 3 + body.length)), 3 + body.length);
    return frame;
  },
);

export const galileoProtocol: TcpProtocol = {
  name: 'galileo',
  splitFrames,
  decode: (frame: Buffer, _state: ConnectionState, now: Date) => decode(frame, now),
  commands: galileoCommands,
};
