// Teltonika FMxxx TCP protocol (Traccar port 5027).
// Handshake: <len:2> <IMEI ASCII>, answered with loginReply. Then AVL packets:
// 0x00000000, <data length:4>, codec, count, records, count, <CRC-16/IBM of codec..count as 4 bytes>.
// A single 0xFF byte is a keep-alive ping.

import { readTeltonikaAnswer, TELTONIKA_COMMAND_CODECS, teltonikaCommands } from './commands.ts';
import { ByteReader } from '../byte-reader.ts';
import { crc16Ibm } from '../checksum.ts';
import { addAlarm, int64Value, isValidCoordinate, knotsFromKmh } from '../decode-helpers.ts';
import type { ConnectionState, DecodedMessage, DecodedPosition, DecodedStatus, TcpProtocol } from '../types.ts';
import { ProtocolError } from '../types.ts';

const TELTONIKA_CODEC = { gh3000: 0x07, codec8: 0x08, codec8Extended: 0x8e, codec16: 0x10 } as const;
const LOCATION_CODECS = new Set<number>(Object.values(TELTONIKA_CODEC));

// GH3000 (codec 7) counts seconds from 2007-01-01 in the low 30 bits of its timestamp.
const GH3000_EPOCH_SECONDS = 1_167_609_600;

const PING = 0xff;
const MAX_IMEI_LENGTH = 32;
const MAX_DATA_LENGTH = 0x10000;
const MAX_DATE_MS = 8.64e15;

interface RecordContext {
  attributes: Record<string, unknown>;
  speedKmh: number;
}

function toSigned(value: number, size: number): number {
  const bits = size * 8;
  return value >= 2 ** (bits - 1) ? value - 2 ** bits : value;
}

const BOOLEAN_IO: Record<number, string> = {
  1: 'in1', 2: 'in2', 3: 'in3', 4: 'in4', 179: 'out1', 180: 'out2', 239: 'ignition', 240: 'motion', 662: 'door',
};

const PLAIN_IO: Record<number, string> = {
  16: 'odometer', 21: 'rssi', 36: 'rpm', 69: 'gps', 199: 'tripOdometer', 205: 'cid2g', 206: 'lac', 241: 'operator',
  636: 'cid4g',
};

// The serving cell (LAC with a 2G or 4G cell id) as Traccar's network object, the operator code (MCC then MNC digits)
// giving its country and network.
function moveServingCellToNetwork(attributes: Record<string, unknown>): void {
  const { lac, cid2g, cid4g, operator } = attributes;
  if (typeof lac !== 'number' || (typeof cid2g !== 'number' && typeof cid4g !== 'number')) {
    return;
  }
  delete attributes['lac'];
  delete attributes['cid2g'];
  delete attributes['cid4g'];
  const operatorCode = typeof operator === 'number' && operator >= 1000 ? String(operator) : null;
  attributes['network'] = {
    ...(typeof cid2g === 'number' ? {} : { radioType: 'lte' }),
    cellTowers: [{
      ...(operatorCode ? { mobileCountryCode: Number(operatorCode.slice(0, 3)), mobileNetworkCode: Number(operatorCode.slice(3)) } : {}),
      locationAreaCode: lac,
      cellId: typeof cid2g === 'number' ? cid2g : cid4g,
    }],
  };
}

// Temperature sensors: BLE sensors (25-28), wired probes (10644-10649) and EYE sensors (10800-10803) in 1/100 °C.
function temperatureIo(first: number, count: number, prefix: string): [number, { key: string; divisor: number; signed: boolean }][] {
  return Array.from({ length: count }, (_, index) => [first + index, { key: `${prefix}${index + 1}`, divisor: 100, signed: true }]);
}

const SCALED_IO: Record<number, { key: string; divisor: number; signed?: boolean }> = {
  9: { key: 'adc1', divisor: 1000 },
  10: { key: 'adc2', divisor: 1000 },
  17: { key: 'axisX', divisor: 1, signed: true },
  18: { key: 'axisY', divisor: 1, signed: true },
  19: { key: 'axisZ', divisor: 1, signed: true },
  66: { key: 'power', divisor: 1000 },
  67: { key: 'battery', divisor: 1000 },
  72: { key: 'temp1', divisor: 10, signed: true },
  73: { key: 'temp2', divisor: 10, signed: true },
  74: { key: 'temp3', divisor: 10, signed: true },
  75: { key: 'temp4', divisor: 10, signed: true },
  115: { key: 'engineTemp', divisor: 10, signed: true },
  181: { key: 'pdop', divisor: 10 },
  182: { key: 'hdop', divisor: 10 },
  10832: { key: 'eyeRoll1', divisor: 1, signed: true },
  10833: { key: 'eyeRoll2', divisor: 1, signed: true },
  10834: { key: 'eyeRoll3', divisor: 1, signed: true },
  10835: { key: 'eyeRoll4', divisor: 1, signed: true },
  ...Object.fromEntries([
    ...temperatureIo(25, 4, 'bleTemp'), ...temperatureIo(10644, 6, 'tempProbe'), ...temperatureIo(10800, 4, 'eyeTemp'),
  ]),
};

const FLAG_ALARMS: Record<number, string> = {
  236: 'general', 246: 'tow', 247: 'accident', 249: 'jamming', 251: 'idle', 252: 'powerCut',
};

const GREEN_DRIVING_ALARMS: Record<number, string> = { 1: 'hardAcceleration', 2: 'hardBraking', 3: 'hardCornering' };

function readFixedIo(reader: ByteReader, id: number, size: 1 | 2 | 4 | 8, context: RecordContext): void {
  const { attributes } = context;
  if (size === 8) {
    const bytes = reader.bytes(8);
    if (id === 78) {
      // iButton id is transmitted little-endian; Traccar shows it as 16 upper-case hex digits.
      const driverId = Buffer.from(bytes).reverse().toString('hex').toUpperCase();
      if (!/^0+$/.test(driverId)) {
        attributes['driverUniqueId'] = driverId;
      }
    } else {
      attributes[`io${id}`] = int64Value(bytes.readBigInt64BE(0));
    }
    return;
  }
  const raw = size === 1 ? reader.u8() : size === 2 ? reader.u16() : reader.u32();
  const booleanKey = BOOLEAN_IO[id];
  const plainKey = PLAIN_IO[id];
  const scaled = SCALED_IO[id];
  if (booleanKey) {
    attributes[booleanKey] = raw > 0;
  } else if (plainKey) {
    attributes[plainKey] = raw;
  } else if (scaled) {
    attributes[scaled.key] = (scaled.signed ? toSigned(raw, size) : raw) / scaled.divisor;
  } else if (id in FLAG_ALARMS) {
    addAlarm(attributes, raw > 0 ? FLAG_ALARMS[id] : null);
  } else if (id === 253) {
    addAlarm(attributes, GREEN_DRIVING_ALARMS[raw]);
  } else if (id === 24) {
    context.speedKmh = raw;
  } else if (id === 113 && raw <= 100) {
    // Only FMB-family devices send a percentage under id 113; other values stay raw.
    attributes['batteryLevel'] = raw;
  } else {
    attributes[`io${id}`] = raw;
  }
}

// Variable-length IO elements that carry the BLE sensor tags (EYE sensors and beacons) seen by the device.
const BLE_TAG_IDS = new Set([548, 10828, 10829, 10831, 11317]);

// One field of a BLE tag, by its parameter id, read from its own bytes; `tag` is the attribute prefix (tag1, tag2...).
const BLE_TAG_FIELDS: Record<number, (field: ByteReader, attributes: Record<string, unknown>, tag: string) => void> = {
  0: (field, attributes, tag) => { attributes[`${tag}Rssi`] = field.i8(); },
  1: (field, attributes, tag) => { attributes[`${tag}Id`] = field.bytes(field.remaining).toString('hex'); },
  2: (field, attributes, tag) => {
    const flags = field.u8();
    if ((flags & 0x40) !== 0) attributes[`${tag}LowBattery`] = true;
    if ((flags & 0x80) !== 0) attributes[`${tag}Voltage`] = field.u8() * 10 + 2000;
  },
  5: (field, attributes, tag) => { attributes[`${tag}Name`] = field.bytes(field.remaining).toString('utf8'); },
  6: (field, attributes, tag) => { attributes[`${tag}Temp`] = field.i16(); },
  7: (field, attributes, tag) => { attributes[`${tag}Humidity`] = field.u8(); },
  8: (field, attributes, tag) => { attributes[`${tag}Magnet`] = field.u8() > 0; },
  9: (field, attributes, tag) => { attributes[`${tag}Motion`] = field.u8() > 0; },
  10: (field, attributes, tag) => { attributes[`${tag}MotionCount`] = field.u16(); },
  11: (field, attributes, tag) => { attributes[`${tag}Pitch`] = field.i8(); },
  12: (field, attributes, tag) => { attributes[`${tag}AngleRoll`] = field.i16(); },
  13: (field, attributes, tag) => { attributes[`${tag}LowBattery`] = field.u8(); },
  14: (field, attributes, tag) => { attributes[`${tag}Battery`] = field.u16(); },
  15: (field, attributes, tag) => { attributes[`${tag}Mac`] = field.bytes(6).toString('hex'); },
};

// A header byte, then per tag a length-led block of (parameter id, length, value) fields.
function readBleTags(reader: ByteReader, attributes: Record<string, unknown>): void {
  reader.u8(); // header
  for (let index = 1; reader.remaining > 0; index++) {
    const length = reader.u8();
    const tag = new ByteReader(reader.buffer, reader.offset, reader.offset + length);
    reader.skip(length);
    while (tag.remaining >= 2) {
      const id = tag.u8();
      const length = tag.u8();
      const field = new ByteReader(tag.buffer, tag.offset, Math.min(tag.offset + length, tag.end));
      tag.skip(Math.min(length, tag.remaining));
      BLE_TAG_FIELDS[id]?.(field, attributes, `tag${index}`);
    }
  }
}

function readRecord(reader: ByteReader, codec: number): DecodedPosition | DecodedStatus {
  const extended = codec === TELTONIKA_CODEC.codec8Extended;
  const wideIds = extended || codec === TELTONIKA_CODEC.codec16;
  const timestamp = Number(reader.u64());
  const attributes: Record<string, unknown> = { priority: reader.u8() };
  const longitude = reader.i32() / 1e7;
  const latitude = reader.i32() / 1e7;
  const altitude = reader.i16();
  const course = reader.u16();
  const satellites = reader.u8();
  attributes['sat'] = satellites;
  const context: RecordContext = { attributes, speedKmh: reader.u16() };
  attributes['event'] = wideIds ? reader.u16() : reader.u8();
  if (codec === TELTONIKA_CODEC.codec16) {
    reader.u8(); // generation type
  }
  reader.skip(extended ? 2 : 1); // total IO count, implied by the group counts

  for (const size of [1, 2, 4, 8] as const) {
    const count = extended ? reader.u16() : reader.u8();
    for (let index = 0; index < count; index++) {
      readFixedIo(reader, wideIds ? reader.u16() : reader.u8(), size, context);
    }
  }
  if (extended) {
    const count = reader.u16();
    for (let index = 0; index < count; index++) {
      const id = reader.u16();
      const value = reader.bytes(reader.u16());
      if (id === 256 || id === 325) {
        attributes['vin'] = value.toString('latin1');
      } else if (BLE_TAG_IDS.has(id)) {
        readBleTags(new ByteReader(value), attributes);
      } else {
        attributes[`io${id}`] = value.toString('hex');
      }
    }
  }
  moveServingCellToNetwork(attributes);

  const time = timestamp <= MAX_DATE_MS ? new Date(timestamp) : null;
  if (!time || !isValidCoordinate(latitude, longitude)) {
    return { deviceTime: time, attributes };
  }
  return {
    fixTime: time,
    deviceTime: time,
    valid: satellites > 0,
    latitude,
    longitude,
    altitude,
    speed: knotsFromKmh(context.speedKmh),
    course,
    accuracy: 0,
    attributes,
  };
}

const GH3000_IO: Record<number, (attributes: Record<string, unknown>, value: number) => void> = {
  1: (attributes, value) => { attributes['batteryLevel'] = value; },
  2: (attributes, value) => { attributes['usbConnected'] = value === 1; },
  5: (attributes, value) => { attributes['uptime'] = value; },
  20: (attributes, value) => { attributes['hdop'] = value / 10; },
  21: (attributes, value) => { attributes['vdop'] = value / 10; },
  22: (attributes, value) => { attributes['pdop'] = value / 10; },
  67: (attributes, value) => { attributes['battery'] = value / 1000; },
  221: (attributes, value) => { attributes['button'] = value; },
  222: (attributes, value) => { addAlarm(attributes, value === 1 ? 'sos' : null); },
  240: (attributes, value) => { attributes['motion'] = value === 1; },
  244: (attributes, value) => { attributes['roaming'] = value === 1; },
};

// GH3000 personal trackers (codec 7): a mask says which location fields and IO groups follow.
function readGh3000Record(reader: ByteReader): DecodedPosition | DecodedStatus {
  const time = new Date(((reader.u32() & 0x3fffffff) + GH3000_EPOCH_SECONDS) * 1000);
  const globalMask = reader.u8();
  const attributes: Record<string, unknown> = {};
  let location: { latitude: number; longitude: number } | null = null;
  let altitude = 0;
  let course = 0;
  let speedKmh = 0;
  if ((globalMask & 0x01) !== 0) {
    const locationMask = reader.u8();
    if ((locationMask & 0x01) !== 0) {
      const latitude = reader.bytes(4).readFloatBE(0);
      location = { latitude, longitude: reader.bytes(4).readFloatBE(0) };
    }
    if ((locationMask & 0x02) !== 0) altitude = reader.u16();
    if ((locationMask & 0x04) !== 0) course = (reader.u8() * 360) / 256;
    if ((locationMask & 0x08) !== 0) speedKmh = reader.u8();
    if ((locationMask & 0x10) !== 0) attributes['sat'] = reader.u8();
    if ((locationMask & 0x20) !== 0) {
      attributes['lac'] = reader.u16();
      attributes['cid'] = reader.u16();
    }
    if ((locationMask & 0x40) !== 0) attributes['rssi'] = reader.u8();
    if ((locationMask & 0x80) !== 0) attributes['operator'] = reader.u32();
  }
  for (const [bit, size] of [[0x02, 1], [0x04, 2], [0x08, 4]] as const) {
    if ((globalMask & bit) === 0) continue;
    const count = reader.u8();
    for (let index = 0; index < count; index++) {
      const id = reader.u8();
      const value = size === 1 ? reader.u8() : size === 2 ? reader.u16() : reader.u32();
      const known = GH3000_IO[id];
      if (known) known(attributes, value);
      else attributes[`io${id}`] = value;
    }
  }
  if (!location || !isValidCoordinate(location.latitude, location.longitude)) {
    return { deviceTime: time, attributes };
  }
  return {
    fixTime: time, deviceTime: time, valid: true, ...location, altitude,
    speed: knotsFromKmh(speedKmh), course, accuracy: 0, attributes,
  };
}

function isPosition(record: DecodedPosition | DecodedStatus): record is DecodedPosition {
  return 'fixTime' in record;
}

// A command answer is read within its length field; a CRC mismatch is kept and flagged like a location packet's.
function decodeCommandAnswer(frame: Buffer, codec: number, now: Date): DecodedMessage {
  const dataLength = frame.readUInt32BE(4);
  if (frame.length !== dataLength + 12) {
    throw new ProtocolError('teltonika: command answer length does not match the frame');
  }
  const data = frame.subarray(8, 8 + dataLength);
  const message: DecodedMessage = { positions: [], statuses: readTeltonikaAnswer(new ByteReader(data, 1), codec, now) };
  if (crc16Ibm(data) !== frame.readUInt32BE(8 + dataLength)) {
    message.checksumMismatch = true;
  }
  return message;
}

// As Traccar does, the records are read from the codec byte on whatever the length field, the trailing record count
// and the CRC say; a frame whose records decode whole but whose framing disagrees is kept and flagged.
function decodeAvlPacket(frame: Buffer, now: Date): DecodedMessage {
  if (frame.length < 11 || frame.readUInt32BE(0) !== 0) {
    throw new ProtocolError('teltonika: AVL packet without zero preamble');
  }
  const reader = new ByteReader(frame, 8);
  const codec = reader.u8();
  if (codec === TELTONIKA_COMMAND_CODECS.codec12 || codec === TELTONIKA_COMMAND_CODECS.codec13) {
    return decodeCommandAnswer(frame, codec, now);
  }
  if (!LOCATION_CODECS.has(codec)) {
    throw new ProtocolError(`teltonika: unsupported codec 0x${codec.toString(16)}`);
  }
  const count = reader.u8();
  const message: DecodedMessage = { positions: [], statuses: [] };
  for (let index = 0; index < count; index++) {
    const record = codec === TELTONIKA_CODEC.gh3000 ? readGh3000Record(reader) : readRecord(reader, codec);
    if (isPosition(record)) {
      message.positions.push(record);
    } else {
      message.statuses.push(record);
    }
  }
  const recordsEnd = reader.offset;
  const trailingCount = reader.remaining > 0 ? reader.u8() : null;
  if (trailingCount !== null && trailingCount !== count) {
    throw new ProtocolError('teltonika: record count mismatch');
  }
  const dataLength = frame.readUInt32BE(4);
  const wellFramed = trailingCount !== null && dataLength === recordsEnd + 1 - 8 && frame.length === dataLength + 12
    && crc16Ibm(frame.subarray(8, 8 + dataLength)) === frame.readUInt32BE(8 + dataLength);
  if (!wellFramed) {
    message.checksumMismatch = true;
  }
  const ack = Buffer.alloc(4);
  ack.writeUInt32BE(count, 0);
  message.ack = ack;
  return message;
}

function decode(frame: Buffer, now: Date): DecodedMessage {
  if (frame.length === 1 && frame[0] === PING) {
    return { positions: [], statuses: [] };
  }
  if (frame.length >= 2 && frame.readUInt16BE(0) !== 0) {
    const imei = frame.subarray(2).toString('latin1');
    if (frame.readUInt16BE(0) !== imei.length || !/^\d+$/.test(imei)) {
      throw new ProtocolError('teltonika: malformed IMEI handshake');
    }
    return { uniqueId: imei, positions: [], statuses: [] };
  }
  return decodeAvlPacket(frame, now);
}

// Some firmwares send 0 as the data length (and the CRC): the packet then ends where its records, trailing count and
// CRC do, found by reading them. Such packets are small; one that does not end within this many bytes is garbage, which
// also bounds the re-reading while a packet arrives in pieces.
const MAX_UNANNOUNCED_PACKET = 2048;

function unannouncedPacketLength(buffer: Buffer, offset: number): number | null {
  const limit = Math.min(buffer.length, offset + MAX_UNANNOUNCED_PACKET);
  const reader = new ByteReader(buffer, offset + 8, limit);
  try {
    const codec = reader.u8();
    if (!LOCATION_CODECS.has(codec)) {
      throw new ProtocolError(`teltonika: unsupported codec 0x${codec.toString(16)} in a packet without a length`);
    }
    const count = reader.u8();
    for (let index = 0; index < count; index++) {
      if (codec === TELTONIKA_CODEC.gh3000) readGh3000Record(reader);
      else readRecord(reader, codec);
    }
    reader.skip(1 + 4); // trailing count and CRC
  } catch (error) {
    const mayYetEnd = buffer.length < offset + MAX_UNANNOUNCED_PACKET;
    if (error instanceof ProtocolError && mayYetEnd && error.message.startsWith('truncated')) {
      return null;
    }
    throw new ProtocolError('teltonika: a packet without a length whose records do not end in time');
  }
  return reader.offset - offset;
}

function splitFrames(buffer: Buffer, state: ConnectionState): { frames: Buffer[]; consumed: number } {
  const frames: Buffer[] = [];
  let offset = 0;
  while (offset < buffer.length) {
    const available = buffer.length - offset;
    if (buffer[offset] === PING) {
      frames.push(buffer.subarray(offset, offset + 1));
      offset += 1;
      continue;
    }
    let frameLength: number;
    if (!state.teltonikaHandshakeDone) {
      if (available < 2) {
        break;
      }
      const imeiLength = buffer.readUInt16BE(offset);
      if (imeiLength === 0 || imeiLength > MAX_IMEI_LENGTH) {
        if (frames.length > 0) {
          break;
        }
        throw new ProtocolError('teltonika: expected an IMEI handshake');
      }
      frameLength = 2 + imeiLength;
    } else {
      const preamble = buffer.subarray(offset, offset + Math.min(4, available));
      const dataLength = available >= 8 ? buffer.readUInt32BE(offset + 4) : null;
      const malformed = preamble.some((byte) => byte !== 0)
        || (dataLength !== null && ((dataLength > 0 && dataLength < 3) || dataLength > MAX_DATA_LENGTH));
      if (malformed) {
        if (frames.length > 0) {
          break;
        }
        throw new ProtocolError('teltonika: expected an AVL packet preamble');
      }
      if (dataLength === null) {
        break;
      }
      if (dataLength === 0) {
        const measured = unannouncedPacketLength(buffer, offset);
        if (measured === null) {
          break;
        }
        frameLength = measured;
      } else {
        frameLength = 12 + dataLength;
      }
    }
    if (available < frameLength) {
      break;
    }
    frames.push(buffer.subarray(offset, offset + frameLength));
    offset += frameLength;
    state.teltonikaHandshakeDone = true;
  }
  return { frames, consumed: offset };
}

export const teltonikaProtocol: TcpProtocol = {
  name: 'teltonika',
  splitFrames,
  decode: (frame, _state, now) => decode(frame, now),
  loginReply: (accepted) => Buffer.from([accepted ? 0x01 : 0x00]),
  commands: teltonikaCommands,
};
