// JT/T 808 (Chinese national standard for vehicle terminals; Traccar's `jt808`, port 5015).
// Binary frames between 0x7e delimiters with 0x7d escaping (0x7d 0x01 = 0x7d, 0x7d 0x02 = 0x7e), or the
// alternative 0xe7 delimiter with its own escapes. Header: message id, body attributes (length, split, version
// flag), [version], terminal id in BCD (6 bytes; 10 in the 2019 edition; 7 with 0xe7), serial. XOR checksum.
// Clock: the BCD times are China Standard Time (UTC+8), as Traccar assumes by default.

import { ByteReader } from '../byte-reader.ts';
import { commandEncoder } from '../command-types.ts';
import type { CommandType, DeviceCommand } from '../command-types.ts';
import { addAlarm, isValidCoordinate, knotsFromKmh, utcDate } from '../decode-helpers.ts';
import type { ConnectionState, DecodedMessage, DecodedPosition, DecodedStatus, TcpProtocol } from '../types.ts';
import { ProtocolError } from '../types.ts';

const DELIMITER = 0x7e;
const ESCAPE = 0x7d;
const ALTERNATIVE_DELIMITER = 0xe7;
const TEXT_START = 0x28; // '('
const TEXT_END = 0x29; // ')'
/** The body length field has 10 bits; with header, split info and every byte escaped a frame stays below this. */
const MAX_FRAME_LENGTH = 4096;
const DEVICE_UTC_OFFSET_MINUTES = 8 * 60;

export const JT808_MESSAGES = {
  terminalResponse: 0x0001,
  heartbeat: 0x0002,
  logout: 0x0003,
  register: 0x0100,
  auth: 0x0102,
  attributes: 0x0107,
  timeSyncRequest: 0x0109,
  location: 0x0200,
  locationBatch2: 0x0210,
  heartbeat2: 0x0506,
  commandResponse: 0x0701,
  driverIdentity: 0x0702,
  locationBatch: 0x0704,
  timezoneSync: 0x1007,
  textMessageResponse: 0x1300,
  acceleration: 0x2070,
  transparent: 0x0900,
  reportTextMessage: 0x6006,
  locationReport2: 0x5501,
  locationReportBlind: 0x5502,
  generalResponse2: 0x4401,
  photo: 0x8888,
  generalResponse: 0x8001,
  registerResponse: 0x8100,
  terminalControl: 0x8105,
  timeSyncResponse: 0x8109,
  parameterSetting: 0x0310,
} as const;

// --- framing -------------------------------------------------------------------------------------------------

function splitFrames(buffer: Buffer): { frames: Buffer[]; consumed: number } {
  const frames: Buffer[] = [];
  let offset = 0;
  while (offset < buffer.length) {
    const first = buffer[offset]!;
    const end = first === TEXT_START ? TEXT_END : first;
    if (first !== DELIMITER && first !== ALTERNATIVE_DELIMITER && first !== TEXT_START) {
      if (frames.length > 0) break;
      throw new ProtocolError(`jt808: garbage byte 0x${first.toString(16)} where a frame was expected`);
    }
    // Only the longest frame's worth of bytes is searched, so each call's work is bounded.
    const window = buffer.subarray(offset + 1, offset + MAX_FRAME_LENGTH);
    const index = window.indexOf(end);
    if (index < 0) {
      if (buffer.length - offset >= MAX_FRAME_LENGTH) throw new ProtocolError(`jt808: no frame end within ${MAX_FRAME_LENGTH} bytes`);
      break;
    }
    if (index === 0 && first !== TEXT_START) {
      // Two delimiters in a row: the first closed nothing (a device sending its frames back to back with one shared delimiter).
      offset += 1;
      continue;
    }
    frames.push(buffer.subarray(offset, offset + index + 2));
    offset += index + 2;
  }
  return { frames, consumed: offset };
}

/** The bytes between the delimiters with the escapes undone; an unknown escape pair is dropped, as Traccar does. */
function unescape(frame: Buffer): Buffer {
  const alternative = frame[0] === ALTERNATIVE_DELIMITER;
  const inner = frame.subarray(1, -1);
  if (!alternative && !inner.includes(ESCAPE)) return inner; // the common case: nothing escaped, nothing copied
  const out = Buffer.allocUnsafe(frame.length);
  let length = 0;
  for (let index = 1; index < frame.length - 1; index++) {
    const byte = frame[index]!;
    const next = frame[index + 1];
    if (!alternative && byte === ESCAPE) {
      if (next === 0x01) out[length++] = ESCAPE;
      else if (next === 0x02) out[length++] = DELIMITER;
      index += 1;
    } else if (alternative && (byte === 0xe6 || byte === 0x3e)) {
      if (next === 0x01) out[length++] = byte;
      else if (next === 0x02) out[length++] = byte === 0xe6 ? 0xe7 : 0x3d;
      index += 1;
    } else {
      out[length++] = byte;
    }
  }
  return out.subarray(0, length);
}

function xor(data: Uint8Array): number {
  let sum = 0;
  for (const byte of data) sum ^= byte;
  return sum;
}

function needsEscape(byte: number, delimiter: number): boolean {
  return delimiter === DELIMITER ? byte === ESCAPE || byte === DELIMITER : byte === 0xe6 || byte === 0x3e || byte === 0xe7 || byte === 0x3d;
}

/** Wraps header + body in delimiters with its checksum, escaping as the delimiter requires. */
function frameMessage(content: Buffer, delimiter: number): Buffer {
  const checksum = xor(content);
  if (!content.some((byte) => needsEscape(byte, delimiter)) && !needsEscape(checksum, delimiter)) {
    const frame = Buffer.allocUnsafe(content.length + 3);
    frame[0] = delimiter;
    content.copy(frame, 1);
    frame[content.length + 1] = checksum;
    frame[content.length + 2] = delimiter;
    return frame;
  }
  const raw = Buffer.concat([content, Buffer.from([checksum])]);
  const out: number[] = [delimiter];
  for (const byte of raw) {
    if (delimiter === DELIMITER && byte === ESCAPE) out.push(ESCAPE, 0x01);
    else if (delimiter === DELIMITER && byte === DELIMITER) out.push(ESCAPE, 0x02);
    else if (delimiter === ALTERNATIVE_DELIMITER && (byte === 0xe6 || byte === 0x3e)) out.push(byte, 0x01);
    else if (delimiter === ALTERNATIVE_DELIMITER && byte === 0xe7) out.push(0xe6, 0x02);
    else if (delimiter === ALTERNATIVE_DELIMITER && byte === 0x3d) out.push(0x3e, 0x02);
    else out.push(byte);
  }
  out.push(delimiter);
  return Buffer.from(out);
}

// --- header --------------------------------------------------------------------------------------------------

interface Header {
  delimiter: number;
  type: number;
  version: number | null; // 2019 edition when present
  id: Buffer;
  serial: number;
  bodyLength: number;
  split: { total: number; index: number } | null;
  answerWanted: boolean; // bit 15 of the attributes: asks for an answer to the 0x5501/0x5502 reports
}

/**
 * A message with `header`'s delimiter, version and terminal id. The server's own messages carry serial 0 as Traccar
 * sends (a one-byte serial 1 in 0x4401); a device's (the simulator's) carry its running serial.
 */
export function jt808Message(header: Pick<Header, 'delimiter' | 'version' | 'id'>, type: number, body: Buffer, serial = 0): Buffer {
  if (body.length > 0x3ff) throw new ProtocolError('jt808: a message body holds at most 1023 bytes');
  const versioned = header.version !== null;
  const shortSerial = type === JT808_MESSAGES.generalResponse2;
  const content = Buffer.alloc(4 + (versioned ? 1 : 0) + header.id.length + (shortSerial ? 1 : 2) + body.length);
  let offset = content.writeUInt16BE(type, 0);
  offset = content.writeUInt16BE((body.length & 0x3ff) | (versioned ? 0x4000 : 0), offset);
  if (versioned) offset = content.writeUInt8(header.version!, offset);
  offset += header.id.copy(content, offset);
  offset = shortSerial ? content.writeUInt8(1, offset) : content.writeUInt16BE(serial & 0xffff, offset);
  body.copy(content, offset);
  return frameMessage(content, header.delimiter);
}

function generalResponse(header: Header): Buffer {
  const body = Buffer.alloc(5);
  body.writeUInt16BE(header.serial, 0);
  body.writeUInt16BE(header.type, 2);
  body.writeUInt8(0, 4); // success
  return jt808Message(header, JT808_MESSAGES.generalResponse, body);
}

function luhnDigit(digits: string): number {
  let sum = 0;
  for (let index = 0; index < digits.length; index++) {
    let digit = Number(digits[digits.length - 1 - index]);
    if (index % 2 === 0) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return (10 - (sum % 10)) % 10;
}

/** The terminal id as Traccar spells it: the BCD digits, or for a non-BCD id the 48-bit number with a Luhn digit. */
function terminalId(id: Buffer): string {
  const digits = id.toString('hex');
  if (/^\d+$/.test(digits)) return digits;
  const number = String(id.readUIntBE(0, 6));
  return number + luhnDigit(number);
}

// --- location ------------------------------------------------------------------------------------------------

/** One BCD byte as its two-digit value, -1 when a nibble is not a digit. */
function bcdByte(byte: number): number {
  const high = byte >> 4;
  const low = byte & 0x0f;
  return high > 9 || low > 9 ? -1 : high * 10 + low;
}

function bcdDate(reader: ByteReader): Date | null {
  const bytes = reader.bytes(6);
  const fields = [0, 1, 2, 3, 4, 5].map((index) => bcdByte(bytes[index]!));
  if (fields.some((field) => field < 0)) return null;
  const [year, month, day, hour, minute, second] = fields as [number, number, number, number, number, number];
  return utcDate(year, month, day, hour, minute, second, DEVICE_UTC_OFFSET_MINUTES);
}

/** Bit `bit` (0-31) of an unsigned 32-bit word. */
const isSet = (value: number, bit: number) => ((value >>> bit) & 1) === 1;

// The alarm word of the standard (Table 24), mapped to Traccar's alarm names.
const ALARM_BITS: [number[], string][] = [
  [[0], 'sos'],
  [[1], 'overspeed'],
  [[2], 'fatigueDriving'],
  [[5, 6], 'gpsAntennaCut'],
  [[4, 9, 10, 11], 'fault'],
  [[7, 18], 'lowBattery'],
  [[8], 'powerOff'],
  [[15], 'vibration'],
  [[16, 17], 'tampering'],
  [[19], 'parking'],
  [[20], 'geofence'],
  [[26], 'general'],
  [[28], 'movement'],
  [[29, 30], 'accident'],
];

function readAlarms(value: number, attributes: Record<string, unknown>): void {
  for (const [bits, alarm] of ALARM_BITS) {
    if (bits.some((bit) => isSet(value, bit))) addAlarm(attributes, alarm);
  }
}

type Attributes = Record<string, unknown>;
type ExtensionReader = (reader: ByteReader, length: number, attributes: Attributes) => void;

function temperature(value: number): number {
  return isSet(value, 15) ? -(value & 0x7fff) / 10 : value / 10;
}

function ascii(reader: ByteReader, length: number): string {
  return reader.bytes(length).toString('latin1');
}

function batteryOrCharge(reader: ByteReader, attributes: Attributes): void {
  const level = reader.u8();
  if (level === 0xff) attributes['charge'] = true;
  else attributes['batteryLevel'] = level;
}

// Sub-records of the 0xEB extension (length-prefixed, 2-byte type).
function readEbRecords(reader: ByteReader, attributes: Attributes): void {
  while (reader.remaining >= 4) {
    const length = reader.u16();
    const end = reader.offset + length;
    if (length < 2 || end > reader.end) return;
    const sub = new ByteReader(reader.buffer, reader.offset, end);
    const type = sub.u16();
    switch (type) {
      case 0x0001:
        attributes['fuel1'] = sub.u16() / 10;
        break;
      case 0x0023: {
        const fuel = Number(ascii(sub, 6));
        if (Number.isFinite(fuel)) attributes['fuel2'] = fuel;
        break;
      }
      case 0x002d:
        if (length === 6) attributes['power'] = sub.u32() / 1000;
        else attributes['battery'] = sub.u16() / 1000;
        break;
      case 0x0089: {
        const alarm = sub.u32();
        if (!isSet(alarm, 0)) addAlarm(attributes, 'powerOff');
        if (!isSet(alarm, 12)) addAlarm(attributes, 'removing');
        break;
      }
      case 0x00b2:
        attributes['iccid'] = sub.bytes(10).toString('hex').replace(/f+$/, '');
        break;
      case 0x00c5: {
        const alarm = sub.u32();
        if (!isSet(alarm, 6)) addAlarm(attributes, 'vibration');
        const motionState = (alarm >>> 23) & 0x3;
        if (motionState === 0) attributes['motion'] = true;
        else if (motionState === 1) attributes['motion'] = false;
        break;
      }
      case 0x00c6: {
        const batteryAlarm = sub.u8();
        if (batteryAlarm === 0x03 || batteryAlarm === 0x04) attributes['alarm'] = 'lowBattery';
        attributes['batteryAlarm'] = batteryAlarm;
        break;
      }
      case 0x00ce:
        attributes['power'] = sub.u16() / 100;
        break;
      case 0x00a8:
      case 0x00e1:
        attributes['batteryLevel'] = sub.u8();
        break;
      default:
        break;
    }
    reader.offset = end;
  }
}

function isPrintable(bytes: Buffer): boolean {
  return bytes.every((byte) => byte >= 0x20 && byte < 0x7f);
}

// The additional information items after the basic location (Table 27 and vendor extensions Traccar reads).
const EXTENSIONS: Record<number, ExtensionReader> = {
  0x01: (reader, _length, attributes) => { attributes['odometer'] = reader.u32() * 100; },
  0x02: (reader, _length, attributes) => {
    const fuel = reader.u16();
    attributes['fuel'] = isSet(fuel, 15) ? fuel & 0x7fff : fuel / 10;
  },
  0x06: (reader, _length, attributes) => { attributes['batteryLevel'] = reader.u8(); },
  0x14: (reader, _length, attributes) => { attributes['videoAlarm'] = reader.u32(); },
  0x25: (reader, _length, attributes) => { attributes['input'] = reader.u32(); },
  0x2b: (reader, _length, attributes) => {
    attributes['adc1'] = reader.u16() / 100;
    attributes['adc2'] = reader.u16() / 100;
  },
  0x30: (reader, _length, attributes) => { attributes['rssi'] = reader.u8(); },
  0x31: (reader, _length, attributes) => { attributes['sat'] = reader.u8(); },
  0x51: (reader, length, attributes) => {
    if (length !== 2 && length !== 16) return;
    for (let index = 1; index <= length / 2; index++) {
      const value = reader.u16();
      if (value !== 0xffff) attributes[`temp${index}`] = temperature(value);
    }
  },
  0x56: (reader, _length, attributes) => { attributes['batteryLevel'] = reader.u8() * 10; },
  0x57: (reader, _length, attributes) => {
    const alarm = reader.u16();
    if (isSet(alarm, 8)) addAlarm(attributes, 'hardAcceleration');
    if (isSet(alarm, 9)) addAlarm(attributes, 'hardBraking');
    if (isSet(alarm, 10)) addAlarm(attributes, 'hardCornering');
  },
  0x60: (reader, _length, attributes) => {
    const event = reader.u16();
    attributes['event'] = event;
    if (event >= 0x61 && event <= 0x66) {
      reader.skip(6); // lock id
      attributes['driverUniqueId'] = ascii(reader, 8);
    }
  },
  0x68: (reader, _length, attributes) => { attributes['batteryLevel'] = reader.u16() / 100; },
  0x69: (reader, _length, attributes) => { attributes['battery'] = reader.u16() / 100; },
  0x70: (reader, _length, attributes) => {
    reader.skip(5); // alarm serial number and status
    const alarm = { 0x01: 'hardAcceleration', 0x02: 'hardBraking', 0x03: 'hardCornering', 0x16: 'accident' }[reader.u8()];
    addAlarm(attributes, alarm);
  },
  0x82: (reader, _length, attributes) => { attributes['power'] = reader.u16() / 10; },
  0x94: (reader, length, attributes) => { if (length > 0) attributes['vin'] = ascii(reader, length); },
  0xac: (reader, _length, attributes) => { attributes['odometer'] = reader.u32(); },
  0xbc: (reader, length, attributes) => { attributes['driver'] = ascii(reader, length).trim(); },
  0xbd: (reader, length, attributes) => { attributes['driverUniqueId'] = ascii(reader, length); },
  0xd0: (reader, _length, attributes) => { if (isSet(reader.u32(), 3)) addAlarm(attributes, 'vibration'); },
  0xd3: (reader, _length, attributes) => { attributes['power'] = reader.u16() / 10; },
  0xd5: (reader, length, attributes) => { if (length === 2) attributes['battery'] = reader.u16() / 100; },
  0xda: (reader, _length, attributes) => {
    reader.skip(2); // string cut count
    const status = reader.u8();
    attributes['string'] = isSet(status, 0);
    attributes['motion'] = isSet(status, 2);
    attributes['cover'] = isSet(status, 3);
  },
  0xe2: (reader, _length, attributes) => { attributes['fuel'] = reader.u32() / 10; },
  0xe3: (reader, _length, attributes) => {
    reader.skip(1);
    attributes['batteryLevel'] = reader.u8();
    attributes['battery'] = reader.u16() / 100;
  },
  0xe4: (reader, _length, attributes) => {
    if (reader.u8() === 0) attributes['charge'] = true;
    attributes['batteryLevel'] = reader.u8();
  },
  0xe5: (reader, length, attributes) => { if (length === 1) attributes['motion'] = reader.u8() === 1; },
  0xe7: (reader, length, attributes) => {
    if (length !== 8) return;
    const alarm = reader.u16();
    if (isSet(alarm, 0)) addAlarm(attributes, 'vibration');
    if (((alarm >>> 1) & 0x7) !== 0) addAlarm(attributes, 'sos');
  },
  0xeb: (reader, length, attributes) => {
    const bytes = reader.buffer.subarray(reader.offset, reader.end);
    if (bytes.length < 2) return;
    if (bytes.readUInt16BE(0) > 200 && (length - 3) % 5 === 0) return; // cell towers, not stored
    if (isPrintable(bytes)) attributes['timezone'] = bytes.toString('latin1');
    else readEbRecords(reader, attributes);
  },
  0xed: (reader, length, attributes) => { attributes['card'] = ascii(reader, length).trim(); },
  0xee: (reader, length, attributes) => {
    if (length !== 6) return;
    attributes['rssi'] = reader.u8();
    attributes['power'] = reader.u16() / 1000;
    attributes['battery'] = reader.u16() / 1000;
    attributes['sat'] = reader.u8();
  },
  0xf1: (reader, _length, attributes) => { attributes['power'] = reader.u32() / 1000; },
  0xf2: (reader, length, attributes) => { attributes['versionFw'] = ascii(reader, length); },
  0xfc: (reader, _length, attributes) => { attributes['geofence'] = reader.u8(); },
  0xfe: (reader, length, attributes) => {
    if (length === 1) attributes['batteryLevel'] = reader.u8();
    else if (length === 2) attributes['power'] = reader.u16() / 10;
    else if (length === 4) attributes['odometer'] = reader.u32();
  },
};
EXTENSIONS[0xa7] = EXTENSIONS[0x2b]!;
EXTENSIONS[0xd4] = (reader, length, attributes) => {
  if (length === 1) batteryOrCharge(reader, attributes);
  else attributes['driverUniqueId'] = String(reader.u32());
};
EXTENSIONS[0xe9] = EXTENSIONS[0xd4];
EXTENSIONS[0xe1] = (reader, length, attributes) => {
  if (length === 1) batteryOrCharge(reader, attributes);
  else if (length >= 12 && (length - 4) % 8 === 0) return; // cell towers, not stored
  else if (length === 2) attributes['power'] = reader.u16() / 10;
  else attributes['driverUniqueId'] = String(reader.u32());
};

/** The 28-byte basic location and its additional items up to `end`; null when the fix has no usable time. */
function decodeLocation(reader: ByteReader, end: number): DecodedPosition | null {
  const attributes: Attributes = {};
  readAlarms(reader.u32(), attributes);
  const { valid, latitude, longitude } = readCoordinates(reader, attributes);
  const altitude = reader.i16();
  const speed = knotsFromKmh(reader.u16() / 10);
  const course = reader.u16();
  const time = bcdDate(reader);
  if (end - reader.offset === 18) {
    // A vendor layout without item ids: battery and mileage left, odometer (km), battery (0.1 V), area, signal.
    reader.skip(4);
    attributes['odometer'] = reader.u32() * 1000;
    attributes['battery'] = reader.u16() / 10;
    reader.skip(4);
    attributes['rssi'] = reader.u8();
  } else {
    while (end - reader.offset >= 2) {
      const id = reader.u8();
      const length = reader.u8();
      const itemEnd = Math.min(reader.offset + length, end);
      const handler = EXTENSIONS[id];
      if (handler) {
        try {
          handler(new ByteReader(reader.buffer, reader.offset, itemEnd), length, attributes);
        } catch (error) {
          // A short item is the vendor's quirk, not a reason to lose the fix: keep what the others say.
          if (!(error instanceof ProtocolError)) throw error;
        }
      }
      reader.offset = itemEnd;
    }
  }
  if (time === null || !isValidCoordinate(latitude, longitude)) return null;
  return {
    fixTime: time, deviceTime: time, valid, latitude, longitude, altitude, speed, course, accuracy: 0, attributes,
  };
}

function bcdNumber(digits: string, what: string): number {
  if (!/^\d+$/.test(digits)) throw new ProtocolError(`jt808: ${what} is not BCD`);
  return Number(digits);
}

// ddmmmmmm (degrees, minutes with four decimals) as JT600 writes it.
function jt600Coordinate(raw: number): number {
  return Math.floor(raw / 1e6) + (raw % 1e6) / 1e4 / 60;
}

const JT600_PRODUCT_ALARMS: Record<number, [number, string][]> = {
  1: [[0, 'lowPower']],
  2: [[0, 'lowPower']],
  3: [[0, 'overspeed'], [1, 'lowPower'], [2, 'vibration'], [3, 'lowBattery'], [5, 'geofenceEnter'], [6, 'geofenceExit']],
};

/** 0x5501/0x5502: JT600's binary location in a JT808 envelope (0x5502 carries stored, invalid fixes). */
function decodeLocation2(reader: ByteReader, end: number, type: number): DecodedPosition | null {
  const date = reader.bytes(6).toString('hex');
  const time = /^\d{12}$/.test(date)
    ? utcDate(Number(date.slice(4, 6)), Number(date.slice(2, 4)), Number(date.slice(0, 2)), Number(date.slice(6, 8)), Number(date.slice(8, 10)), Number(date.slice(10, 12)))
    : null;
  const coordinates = reader.bytes(9).toString('hex'); // 8 digits latitude, 9 longitude, then the flags nibble
  const flags = Number.parseInt(coordinates[17]!, 16);
  const latitude = jt600Coordinate(bcdNumber(coordinates.slice(0, 8), 'latitude')) * (isSet(flags, 1) ? 1 : -1);
  const longitude = jt600Coordinate(bcdNumber(coordinates.slice(8, 17), 'longitude')) * (isSet(flags, 2) ? 1 : -1);
  const speed = bcdNumber(reader.bytes(1).toString('hex'), 'speed');
  const course = reader.u8() * 2;
  const attributes: Attributes = { rssi: reader.u8(), sat: reader.u8(), odometer: reader.u32() * 1000 };
  const battery = reader.u8();
  if (battery <= 100) attributes['batteryLevel'] = battery;
  else if (battery === 0xaa || battery === 0xab) attributes['charge'] = true;
  reader.skip(6); // cell id, area code
  const product = reader.u8();
  const status = reader.u16();
  const alarm = reader.u16();
  if (product === 3) attributes['blocked'] = isSet(status, 5);
  for (const [bit, name] of JT600_PRODUCT_ALARMS[product] ?? []) if (isSet(alarm, bit)) addAlarm(attributes, name);
  attributes['status'] = status;
  let altitude = 0;
  while (end - reader.offset >= 2) {
    const id = reader.u8();
    const length = reader.u8();
    const itemEnd = Math.min(reader.offset + length, end);
    const item = new ByteReader(reader.buffer, reader.offset, itemEnd);
    if (id === 0x02 && length >= 2) altitude = item.i16();
    else if (id === 0x10 && length >= 1) attributes['wakeSource'] = item.u8();
    else if (id === 0x0c && length >= 6) attributes['tilt'] = `[${item.i16()},${item.i16()},${item.i16()}]`;
    else if (id === 0xfc && length >= 1) attributes['geofence'] = item.u8();
    reader.offset = itemEnd;
  }
  if (time === null || !isValidCoordinate(latitude, longitude)) return null;
  return {
    fixTime: time, deviceTime: time, valid: type !== JT808_MESSAGES.locationReportBlind, // Traccar ignores the flag bit here
    latitude, longitude, altitude, speed, course, accuracy: 0, attributes,
  };
}

/** Trimmed of every character up to the space, control characters included, as Java's trim() does. */
function javaTrim(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && text.charCodeAt(start) <= 0x20) start++;
  while (end > start && text.charCodeAt(end - 1) <= 0x20) end--;
  return text.slice(start, end);
}

/** The status word and coordinates of the basic location, in every report that carries it. */
function readCoordinates(reader: ByteReader, attributes: Attributes): { valid: boolean; latitude: number; longitude: number } {
  const status = reader.u32();
  attributes['ignition'] = isSet(status, 0);
  attributes['blocked'] = isSet(status, 10);
  attributes['charge'] = isSet(status, 26);
  const latitude = (reader.u32() / 1e6) * (isSet(status, 2) ? -1 : 1);
  const longitude = (reader.u32() / 1e6) * (isSet(status, 3) ? -1 : 1);
  return { valid: isSet(status, 1), latitude, longitude };
}

// OBD items of the 0xF0/0x01 transparent report (id: attribute and scale), as Traccar names them.
const OBD_ITEMS: Record<number, [string, (reader: ByteReader) => number]> = {
  0x0102: ['odometer', (reader) => reader.u32() * 100],
  0x0528: ['odometer', (reader) => reader.u32() * 100],
  0x0546: ['odometer', (reader) => reader.u32() * 100],
  0x0103: ['fuel', (reader) => reader.u32() / 100],
  0x0111: ['fuelTemp', (reader) => reader.u8() - 40],
  0x012e: ['oilLevel', (reader) => reader.u16() / 10],
  0x052a: ['fuel', (reader) => reader.u16() / 100],
  0x0105: ['fuelUsed', (reader) => reader.u32() / 100],
  0x052c: ['fuelUsed', (reader) => reader.u32() / 100],
  0x014a: ['fuelConsumption', (reader) => reader.u16() / 100],
  0x0537: ['fuelConsumption', (reader) => reader.u16() / 100],
  0x0538: ['fuelConsumption', (reader) => reader.u16() / 100],
  0x0539: ['fuelConsumption', (reader) => reader.u16() / 100],
  0x052b: ['fuel', (reader) => reader.u8()],
  0x052d: ['coolantTemp', (reader) => reader.u8() - 40],
  0x052e: ['airTemp', (reader) => reader.u8() - 40],
  0x0530: ['power', (reader) => reader.u16() / 1000],
  0x0535: ['obdSpeed', (reader) => reader.u16() / 10],
  0x0536: ['rpm', (reader) => reader.u16()],
  0x053d: ['intakePressure', (reader) => reader.u16() / 10],
  0x0544: ['liquidLevel', (reader) => reader.u8()],
  0x0547: ['throttle', (reader) => reader.u8()],
  0x0548: ['throttle', (reader) => reader.u8()],
};

const TRANSPARENT_ALARMS: Record<number, string> = {
  0x01: 'powerRestored', 0x02: 'powerCut', 0x0e: 'idle', 0x1a: 'hardAcceleration', 0x1b: 'hardBraking', 0x1c: 'hardCornering',
  0x1d: 'laneChange', 0x1e: 'laneChange', 0x1f: 'laneChange', 0x23: 'fatigueDriving', 0x25: 'overspeed', 0x26: 'accident',
  0x27: 'accident', 0x28: 'accident', 0x31: 'door', 0x32: 'door',
};

/**
 * 0x0900 transparent data Traccar turns into reports: vendor OBD, DTC and alarm records with their location (0xF0),
 * a bare location (0xFF), sensor and tag reports with a location (0x53, 0x54), driver and OBD text (0x40, 0x41).
 */
function decodeTransparent(reader: ByteReader, end: number): DecodedPosition | DecodedStatus | null {
  const type = reader.u8();
  const attributes: Attributes = {};
  const text = () => javaTrim(reader.bytes(end - reader.offset).toString('latin1'));
  if (type === 0x40) {
    const data = text();
    if (data.startsWith('GTSL')) {
      const driver = data.split('|')[4];
      if (driver !== undefined) attributes['driverUniqueId'] = driver;
    } else if (data !== '') attributes['data'] = data;
    return Object.keys(attributes).length > 0 ? { deviceTime: null, attributes } : null;
  }
  if (type === 0x41) return { deviceTime: null, attributes: { obdData: text() } };
  if (type === 0xff) {
    const time = bcdDate(reader);
    const latitude = reader.i32() / 1e6;
    const longitude = reader.i32() / 1e6;
    const altitude = reader.i16();
    const speed = knotsFromKmh(reader.u16() / 10);
    const course = reader.u16();
    if (time === null || !isValidCoordinate(latitude, longitude)) return null;
    return { fixTime: time, deviceTime: time, valid: true, latitude, longitude, altitude, speed, course, accuracy: 0, attributes };
  }
  if (type === 0x53 || type === 0x54) {
    const { valid, latitude, longitude } = readCoordinates(reader, attributes);
    const altitude = reader.i16();
    const speed = knotsFromKmh(reader.u16() / 10);
    const course = reader.u16();
    const time = bcdDate(reader);
    if (time === null || !isValidCoordinate(latitude, longitude)) return null;
    return { fixTime: time, deviceTime: time, valid, latitude, longitude, altitude, speed, course, accuracy: 0, attributes };
  }
  if (type !== 0xf0) return null;
  const time = bcdDate(reader);
  if (reader.u8() > 0) attributes['archive'] = true;
  reader.skip(1); // vehicle type
  const subtype = reader.u8();
  if (subtype === 0x01) {
    for (let count = reader.u8(); count > 0; count--) {
      const id = reader.u16();
      // Taken whole first, so that an item whose length runs past the message is refused before it is read.
      const value = reader.bytes(reader.u8());
      const item = OBD_ITEMS[id];
      if (item) attributes[item[0]] = item[1](new ByteReader(value));
      else if (value.length === 1 || value.length === 2 || value.length === 4) attributes[`io${id}`] = value.readUIntBE(0, value.length);
    }
  } else if (subtype === 0x02) {
    const codes: string[] = [];
    for (let systems = reader.u16(); systems > 0; systems--) {
      reader.skip(4); // system id
      for (let count = reader.u16(); count > 0; count--) {
        reader.skip(8); // code and status
        codes.push(reader.bytes(reader.u16()).toString('latin1').trim());
      }
    }
    attributes['dtcs'] = codes.join(' ');
  } else if (subtype === 0x03) {
    for (let count = reader.u8(); count > 0; count--) {
      const id = reader.u8();
      const length = reader.u8();
      addAlarm(attributes, TRANSPARENT_ALARMS[id]);
      reader.skip(length);
    }
  } else {
    return { deviceTime: time, attributes }; // trips, VIN and events: no location of their own
  }
  const { valid, latitude, longitude } = readCoordinates(reader, attributes);
  if (time === null || !isValidCoordinate(latitude, longitude)) return { deviceTime: time, attributes };
  return { fixTime: time, deviceTime: time, valid, latitude, longitude, altitude: 0, speed: 0, course: 0, accuracy: 0, attributes };
}

function decodeBatch(reader: ByteReader, end: number, type: number): DecodedPosition[] {
  let archive = false;
  if (type === JT808_MESSAGES.locationBatch) {
    reader.skip(2); // count
    archive = reader.u8() > 0; // 1: blind-area (stored while offline) reports
  }
  const positions: DecodedPosition[] = [];
  while (end - reader.offset > 0) {
    const length = type === JT808_MESSAGES.locationBatch2 ? reader.u8() : reader.u16();
    const recordEnd = reader.offset + length;
    if (recordEnd > end) throw new ProtocolError('jt808: batch record runs past the message');
    const position = decodeLocation(new ByteReader(reader.buffer, reader.offset, recordEnd), recordEnd);
    if (position) {
      if (archive) position.attributes['archive'] = true;
      positions.push(position);
    }
    reader.offset = recordEnd;
  }
  return positions;
}

// --- messages ------------------------------------------------------------------------------------------------

function decodeText(frame: Buffer, now: Date): DecodedMessage {
  const sentence = frame.toString('latin1');
  if (sentence.includes('BASE,2')) {
    const time = now.toISOString();
    const stamp = `${time.slice(0, 10).replace(/-/g, '')}${time.slice(11, 19).replace(/:/g, '')}`;
    return { positions: [], statuses: [], ack: Buffer.from(sentence.replace('TIME', stamp), 'latin1') };
  }
  return { positions: [], statuses: [{ deviceTime: null, attributes: { result: sentence } }] };
}

function readHeader(reader: ByteReader, delimiter: number): Header {
  const type = reader.u16();
  const attribute = reader.u16();
  const version = isSet(attribute, 14) ? reader.u8() : null;
  const id = reader.bytes(version !== null ? 10 : delimiter === ALTERNATIVE_DELIMITER ? 7 : 6);
  const serial = type === JT808_MESSAGES.locationReport2 || type === JT808_MESSAGES.locationReportBlind ? reader.u8() : reader.u16();
  const split = isSet(attribute, 13) ? { total: reader.u16(), index: reader.u16() } : null;
  return { delimiter, type, version, id, serial, bodyLength: attribute & 0x3ff, split, answerWanted: isSet(attribute, 15) };
}

/** The result byte of a terminal general response (0x0001), as JT/T 808 numbers them. */
const TERMINAL_OUTCOMES = ['success', 'failure', 'incorrect message', 'unsupported', 'alarm confirmed'];

const GBK = new TextDecoder('gbk');
const UTF16BE = new TextDecoder('utf-16be');

function decodeBody(header: Header, reader: ByteReader, end: number, now: Date): Pick<DecodedMessage, 'positions' | 'statuses' | 'ack'> {
  const statuses: DecodedStatus[] = [];
  const positions: DecodedPosition[] = [];
  const result = (text: string) => statuses.push({ deviceTime: null, attributes: { result: text } });
  let ack: Buffer | undefined = generalResponse(header);
  switch (header.type) {
    case JT808_MESSAGES.register: {
      const body = Buffer.alloc(3);
      body.writeUInt16BE(header.serial, 0);
      body.writeUInt8(0, 2); // success
      ack = jt808Message(header, JT808_MESSAGES.registerResponse, Buffer.concat([body, Buffer.from(terminalId(header.id), 'latin1')]));
      break;
    }
    case JT808_MESSAGES.auth:
    case JT808_MESSAGES.heartbeat2:
    case JT808_MESSAGES.photo:
    case JT808_MESSAGES.logout:
    case JT808_MESSAGES.timezoneSync:
      break;
    case JT808_MESSAGES.heartbeat:
      if (end - reader.offset >= 3) {
        statuses.push({ deviceTime: null, attributes: { batteryLevel: reader.u8(), rssi: reader.u8(), status: reader.u8() } });
      }
      break;
    case JT808_MESSAGES.location: {
      const position = decodeLocation(reader, end);
      if (position) positions.push(position);
      break;
    }
    case JT808_MESSAGES.locationReport2:
    case JT808_MESSAGES.locationReportBlind: {
      const body = Buffer.alloc(3);
      body.writeUInt16BE(header.type, 0);
      ack = header.answerWanted ? jt808Message(header, JT808_MESSAGES.generalResponse2, body) : undefined;
      const position = decodeLocation2(reader, end, header.type);
      if (position) positions.push(position);
      break;
    }
    case JT808_MESSAGES.locationBatch2:
      if (header.bodyLength === 7) {
        const batteryLevel = reader.u8();
        statuses.push({ deviceTime: bcdDate(reader), attributes: { batteryLevel } });
        break;
      }
      positions.push(...decodeBatch(reader, end, header.type));
      break;
    case JT808_MESSAGES.locationBatch:
      positions.push(...decodeBatch(reader, end, header.type));
      break;
    case JT808_MESSAGES.transparent: {
      const report = decodeTransparent(reader, end);
      if (report && 'latitude' in report) positions.push(report);
      else if (report) statuses.push(report);
      break;
    }
    case JT808_MESSAGES.attributes:
      reader.skip(2 + 5 + 20 + 7); // terminal type, manufacturer, model, terminal id
      statuses.push({ deviceTime: null, attributes: { iccid: reader.bytes(10).toString('hex') } });
      break;
    case JT808_MESSAGES.reportTextMessage:
      reader.skip(1); // encoding
      result(GBK.decode(reader.bytes(end - reader.offset)));
      break;
    case JT808_MESSAGES.timeSyncRequest: {
      const body = Buffer.alloc(8);
      body.writeUInt16BE(now.getUTCFullYear(), 0);
      body.set([now.getUTCMonth() + 1, now.getUTCDate(), now.getUTCHours(), now.getUTCMinutes(), now.getUTCSeconds(), 0], 2);
      ack = jt808Message(header, JT808_MESSAGES.timeSyncResponse, body);
      break;
    }
    case JT808_MESSAGES.textMessageResponse:
      ack = undefined;
      reader.skip(2); // serial of the message answered
      result(UTF16BE.decode(reader.bytes(Math.min(header.bodyLength - 2, end - reader.offset))).trim());
      break;
    case JT808_MESSAGES.terminalResponse: {
      // The terminal's general response to a message of ours: only commands are answered so, so it answers one.
      ack = undefined;
      reader.skip(2); // serial of the message answered
      const answered = reader.u16();
      const outcome = reader.u8();
      result(`0x${answered.toString(16).padStart(4, '0')} ${TERMINAL_OUTCOMES[outcome] ?? `result ${outcome}`}`);
      break;
    }
    case JT808_MESSAGES.commandResponse:
      ack = undefined;
      result(ascii(reader, reader.u32()));
      break;
    case JT808_MESSAGES.driverIdentity: {
      ack = undefined;
      const attributes: Attributes = { cardStatus: reader.u8() };
      const deviceTime = bcdDate(reader);
      attributes['cardResult'] = reader.u8();
      attributes['driver'] = ascii(reader, reader.u8());
      attributes['cardCode'] = ascii(reader, 20).replace(/\0/g, '').trim();
      attributes['cardAgency'] = ascii(reader, reader.u8());
      attributes['cardValidity'] = reader.bytes(4).toString('hex');
      statuses.push({ deviceTime, attributes });
      break;
    }
    case JT808_MESSAGES.acceleration: {
      ack = undefined;
      const samples: number[][] = [];
      const signed = (value: number) => (isSet(value, 15) ? -(value & 0x7fff) : value);
      while (end - reader.offset >= 12) {
        reader.skip(6); // time
        samples.push([signed(reader.u16()), signed(reader.u16()), signed(reader.u16())]);
      }
      statuses.push({ deviceTime: null, attributes: { gSensor: JSON.stringify(samples) } });
      break;
    }
    default:
      // Messages Traccar does not answer (terminal responses to our commands, unknown ids).
      ack = undefined;
  }
  return { positions, statuses, ack };
}

function decode(frame: Buffer, _state: ConnectionState, now: Date): DecodedMessage {
  if (frame[0] === TEXT_START) return decodeText(frame, now);
  const content = unescape(frame);
  if (content.length < 1 + 12) throw new ProtocolError('jt808: frame shorter than a header');
  // Devices in the field send wrong checksums; Traccar never checks them, so a mismatch is counted, not refused.
  const checksumMismatch = xor(content.subarray(0, -1)) !== content[content.length - 1];
  const end = content.length - 1;
  const reader = new ByteReader(content, 0, end);
  const header = readHeader(reader, frame[0]!);
  const uniqueId = terminalId(header.id);
  const stripped = uniqueId.replace(/^0+/, '') || '0';
  const identity = {
    ...(stripped === uniqueId ? { uniqueId } : { uniqueId: stripped, uniqueIdAlternatives: [uniqueId] }),
    ...(checksumMismatch ? { checksumMismatch } : {}),
  };
  if (header.split && header.split.total > 1) {
    // One part of a long message: acknowledged, but a fragment is not decoded alone.
    return { ...identity, positions: [], statuses: [], ack: generalResponse(header) };
  }
  return { ...identity, ...decodeBody(header, reader, end, now) };
}

// --- commands --------------------------------------------------------------------------------------------------

/** The terminal id for a message: 6 BCD bytes (12 digits), or 10 bytes (2019 edition) for longer ids. */
export function jt808Header(uniqueId: string): Pick<Header, 'delimiter' | 'version' | 'id'> {
  if (!/^\d{1,20}$/.test(uniqueId)) throw new ProtocolError('jt808: the terminal id must be up to 20 digits');
  const long = uniqueId.length > 12;
  return { delimiter: DELIMITER, version: long ? 1 : null, id: Buffer.from(uniqueId.padStart(long ? 20 : 12, '0'), 'hex') };
}

function parameter(id: number, value: Buffer): Buffer {
  return Buffer.concat([Buffer.from([1, id, value.length]), value]);
}

/** A terminal's general response (0x0001, success) to a message the server sent it, as a real terminal answers a command. */
export function jt808TerminalResponse(message: Buffer, serial: number): Buffer {
  const content = unescape(message);
  if (content.length < 1 + 12) throw new ProtocolError('jt808: frame shorter than a header');
  const header = readHeader(new ByteReader(content, 0, content.length - 1), message[0]!);
  const body = Buffer.alloc(5);
  body.writeUInt16BE(header.serial, 0);
  body.writeUInt16BE(header.type, 2);
  body.writeUInt8(0, 4); // success
  return jt808Message(header, JT808_MESSAGES.terminalResponse, body, serial);
}

/** The message id of a frame the server wrote (to tell its commands from its acknowledgements). */
export function jt808MessageType(message: Buffer): number {
  const content = unescape(message);
  return content.length >= 2 ? content.readUInt16BE(0) : -1;
}

const COMMAND_TYPES: readonly CommandType[] = ['custom', 'rebootDevice', 'positionPeriodic', 'alarmArm', 'alarmDisarm', 'engineStop', 'engineResume'];

export const jt808Commands = commandEncoder(
  COMMAND_TYPES,
  (command: DeviceCommand): DeviceCommand => {
    if (command.type === 'custom' && !/^([0-9a-fA-F]{2})+$/.test(String(command.attributes['data'] ?? ''))) {
      throw new ProtocolError('jt808: custom data must be a whole frame in hex');
    }
    const frequency = Number(command.attributes['frequency']);
    if (command.type === 'positionPeriodic' && (!Number.isInteger(frequency) || frequency < 0 || frequency > 0xffffffff)) {
      throw new ProtocolError('jt808: frequency must be a whole number of seconds');
    }
    if (!COMMAND_TYPES.includes(command.type)) throw new ProtocolError(`jt808: ${command.type} is not supported`);
    return command;
  },
  (command, { uniqueId }) => {
    const header = jt808Header(uniqueId);
    switch (command.type) {
      case 'custom':
        return Buffer.from(String(command.attributes['data']), 'hex');
      case 'rebootDevice':
        return jt808Message(header, JT808_MESSAGES.parameterSetting, parameter(0x23, Buffer.from([0x03])));
      case 'positionPeriodic': {
        const value = Buffer.alloc(4);
        value.writeUInt32BE(Number(command.attributes['frequency']));
        return jt808Message(header, JT808_MESSAGES.parameterSetting, parameter(0x06, value));
      }
      case 'alarmArm':
      case 'alarmDisarm':
        return jt808Message(header, JT808_MESSAGES.parameterSetting,
          parameter(0x24, Buffer.concat([Buffer.from([command.type === 'alarmArm' ? 1 : 0]), Buffer.from('user', 'latin1')])));
      default:
        return jt808Message(header, JT808_MESSAGES.terminalControl, Buffer.from([command.type === 'engineStop' ? 0xf0 : 0xf1]));
    }
  },
);

export const jt808Protocol: TcpProtocol = {
  name: 'jt808',
  splitFrames,
  decode,
  commands: jt808Commands,
};
