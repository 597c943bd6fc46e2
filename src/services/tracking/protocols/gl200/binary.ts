// Queclink's binary reports (Traccar's Gl200BinaryProtocolDecoder): `+RSP` locations (plain, with a phone number, or
// compressed into deltas), `+EVT` events, `+INF` information, and the newer frames whose second byte is 0 (records of
// tagged data, 0x52 the fix). Big-endian; the IMEI is a 64-bit number (15 digits) or, in the newer frames, 8 bytes of
// hex of which the first digit is dropped. Buffered copies (`+BSP`, `+BVT`, `+BNF`) and binary `+ACK`s are not decoded,
// as in Traccar. Speeds are 0.1 km/h; power in millivolts.

import { ByteReader } from '../byte-reader.ts';
import { isValidCoordinate, knotsFromKmh, utcDate } from '../decode-helpers.ts';
import type { DecodedMessage, DecodedPosition } from '../types.ts';
import { ProtocolError } from '../types.ts';

const RSP_PHONE = 3;
const RSP_GEOFENCE = 8;
const RSP_COMPRESSED = 100;

/** Skipped bytes of each event type between the satellites and the fix. */
const EVENT_EXTRA: Partial<Record<number, number>> = { 6: 2, 45: 7, 46: 7, 15: 3, 17: 4, 21: 5, 26: 12, 31: 2, 35: 1, 33: 1, 23: 1, 34: 3 };

function imeiOf(reader: ByteReader): string {
  return reader.i64().toString().padStart(15, '0');
}

function dateOf(reader: ByteReader): Date | null {
  return utcDate(reader.u16(), reader.u8(), reader.u8(), reader.u8(), reader.u8(), reader.u8());
}

function add(message: DecodedMessage, position: DecodedPosition): void {
  if (isValidCoordinate(position.latitude, position.longitude) && !Number.isNaN(position.fixTime.getTime())) message.positions.push(position);
  else message.statuses.push({ deviceTime: null, attributes: position.attributes });
}

/** The fix block of `+RSP` and `+EVT`: hdop, speed, course, altitude, longitude, latitude, time, cell, reserved. */
function readFix(reader: ByteReader, attributes: Record<string, unknown>): DecodedPosition | { deviceTime: null; attributes: Record<string, unknown> } {
  const hdop = reader.u8();
  attributes['hdop'] = hdop;
  const speed = knotsFromKmh(reader.u24() / 10);
  const course = reader.u16();
  const altitude = reader.i16();
  const longitude = reader.i32() / 1e6;
  const latitude = reader.i32() / 1e6;
  const time = dateOf(reader);
  reader.skip(8 + 1); // cell, reserved
  if (time === null) return { deviceTime: null, attributes };
  return { fixTime: time, deviceTime: time, valid: hdop > 0, latitude, longitude, altitude, speed, course, accuracy: 0, attributes };
}

function push(message: DecodedMessage, report: ReturnType<typeof readFix>): void {
  if ('fixTime' in report) add(message, report);
  else message.statuses.push(report);
}

/** MSB-first bit fields, as Traccar's BitBuffer reads them. */
function bitsOf(bytes: Buffer): { unsigned(length: number): number; signed(length: number): number } {
  let position = 0;
  const unsigned = (length: number) => {
    let value = 0;
    for (let index = 0; index < length; index++, position++) value = value * 2 + ((bytes[position >> 3]! >> (7 - (position & 7))) & 1);
    return value;
  };
  return { unsigned, signed: (length) => { const value = unsigned(length); return value >= 2 ** (length - 1) ? value - 2 ** length : value; } };
}

function decodeCompressed(reader: ByteReader, message: DecodedMessage): void {
  let speed = 0;
  let heading = 0;
  let latitude = 0;
  let longitude = 0;
  let time = 0;
  for (let count = reader.u16(); count > 0; count--) {
    if (time > 0) time += 1;
    const kind = reader.buffer[reader.offset]! >> 6;
    if (kind === 1) {
      const bits = bitsOf(reader.bytes(3));
      bits.unsigned(3); // point attribute, fix type
      speed = bits.unsigned(12);
      heading = bits.unsigned(9);
      longitude = reader.i32();
      latitude = reader.i32();
      if (time === 0) time = reader.u32();
    } else if (kind === 2) {
      const bits = bitsOf(reader.bytes(5));
      bits.unsigned(3);
      speed += bits.signed(7);
      heading += bits.signed(7);
      longitude += bits.signed(12);
      latitude += bits.signed(11);
    } else {
      reader.skip(1); // invalid or the same point
      continue;
    }
    const fixTime = new Date(time * 1000);
    add(message, {
      fixTime, deviceTime: fixTime, valid: true, latitude: latitude / 1e6, longitude: longitude / 1e6, altitude: 0,
      speed: knotsFromKmh(speed / 10), course: heading, accuracy: 0, attributes: {},
    });
  }
}

function decodeLocation(reader: ByteReader): DecodedMessage {
  const type = reader.u8();
  reader.skip(4 + 2 + 1 + 2 + 2); // mask, length, device type, protocol and firmware versions
  const message: DecodedMessage = { uniqueId: imeiOf(reader), positions: [], statuses: [] };
  const battery = reader.u8();
  const power = reader.u16();
  if (type === RSP_GEOFENCE) reader.skip(2);
  reader.skip(1); // motion status
  const satellites = reader.u8();
  if (type !== RSP_COMPRESSED) reader.skip(1); // index
  if (type === RSP_PHONE) {
    reader.skip(1); // phone length
    for (let digits = reader.u8(); (digits & 0xf) !== 0xf && (digits & 0xf0) !== 0xf0; digits = reader.u8());
  }
  if (type === RSP_COMPRESSED) {
    decodeCompressed(reader, message);
    return message;
  }
  for (let count = reader.u8(); count > 0; count--) {
    push(message, readFix(reader, { batteryLevel: battery, power: power / 1000, sat: satellites }));
  }
  return message;
}

function decodeEvent(reader: ByteReader): DecodedMessage {
  const type = reader.u8();
  reader.skip(4 + 2 + 1 + 2); // mask, length, device type, protocol version
  const attributes: Record<string, unknown> = { versionFw: String(reader.u16()) };
  const message: DecodedMessage = { uniqueId: imeiOf(reader), positions: [], statuses: [] };
  attributes['batteryLevel'] = reader.u8();
  attributes['power'] = reader.u16() / 1000;
  reader.skip(1); // motion status
  attributes['sat'] = reader.u8();
  reader.skip((EVENT_EXTRA[type] ?? 0) + 1); // the event's own fields, the count
  push(message, readFix(reader, attributes));
  return message;
}

const INF_CSQ = 5;
const INF_VER = 6;
const INF_BAT = 7;
const INF_GIR = 10;

function decodeInformation(reader: ByteReader): DecodedMessage {
  const type = reader.u8();
  reader.skip(4 + 2); // mask, length
  const uniqueId = imeiOf(reader);
  reader.skip(1 + 2); // device type, protocol version
  const attributes: Record<string, unknown> = { versionFw: String(reader.u16()) };
  if (type === INF_VER) reader.skip(6); // hardware and MCU versions, reserved
  reader.skip(2); // motion status, reserved
  attributes['sat'] = reader.u8();
  reader.skip(1 + 7 + 2 + 2 + 2 + 2 + 4 + 1); // mode, last fix time, reserved, report mask, ign and igf intervals, reserved
  if (type === INF_BAT) {
    attributes['charge'] = reader.u8() !== 0;
    attributes['power'] = reader.u16() / 1000;
    attributes['battery'] = reader.u16() / 1000;
    attributes['batteryLevel'] = reader.u8();
  }
  reader.skip(10); // ICCID
  if (type === INF_CSQ) {
    attributes['rssi'] = reader.u8();
    reader.skip(1);
  }
  reader.skip(3); // time zone
  if (type === INF_GIR) reader.skip(2 + 8 + 2); // trigger, cell count, cell, timing advance, rx level
  return { uniqueId, positions: [], statuses: [{ deviceTime: dateOf(reader), attributes }] };
}

/** A length of one byte, or two when the first has its top bit set. */
function variableLength(reader: ByteReader): number {
  const first = reader.u8();
  return first & 0x80 ? ((first & 0x7f) << 8) | reader.u8() : first;
}

/** An end offset read from the frame must lie past `from`, or the records would be read forever. */
function endAfter(from: number, end: number): number {
  if (end <= from) throw new ProtocolError('gl200: binary record length too small');
  return end;
}

function decodeRecords(frame: Buffer): DecodedMessage {
  const reader = new ByteReader(frame);
  reader.skip(2); // header, identifier
  const frameLength = reader.u16();
  if (reader.u8() & 0x80) reader.skip(2); // frame count and number of a multi-packet report
  const uniqueId = reader.bytes(8).toString('hex').slice(1);
  reader.skip(2 + 2 + 1); // device type, protocol version, custom version
  reader.skip(reader.u8()); // reserved
  const message: DecodedMessage = { uniqueId, positions: [], statuses: [] };
  const recordsEnd = frameLength - 4; // count number, check byte and tail
  while (reader.offset < recordsEnd) {
    const recordEnd = endAfter(reader.offset, reader.offset + variableLength(reader));
    reader.skip(4 + 2 + 1 + 1); // generated time, count number, record id, event code
    while (reader.offset < recordEnd) {
      const dataId = variableLength(reader);
      const dataEnd = endAfter(reader.offset, reader.offset + variableLength(reader));
      if (dataId === 0x52) {
        const valid = ((reader.u8() >> 2) & 3) === 0b10;
        const longitude = reader.i32() / 1e6;
        const latitude = reader.i32() / 1e6;
        const fixTime = new Date(reader.u32() * 1000);
        const speed = knotsFromKmh(reader.u16() / 10);
        const hdop = reader.u8() / 10;
        const course = reader.u16();
        const altitude = reader.u24() / 10;
        add(message, { fixTime, deviceTime: fixTime, valid, latitude, longitude, altitude, speed, course, accuracy: 0, attributes: { hdop, sat: reader.u8() } });
      }
      reader.offset = dataEnd;
    }
    reader.offset = recordEnd;
  }
  return message;
}

/** A binary frame, as split by its length. */
export function decodeGl200Binary(frame: Buffer): DecodedMessage {
  if (frame[1] === 0) return decodeRecords(frame);
  const reader = new ByteReader(frame, 4);
  switch (frame.toString('latin1', 0, 4)) {
    case '+RSP': return decodeLocation(reader);
    case '+INF': return decodeInformation(reader);
    case '+EVT': return decodeEvent(reader);
    default: return { positions: [], statuses: [] };
  }
}
