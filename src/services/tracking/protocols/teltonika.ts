// Teltonika FMxxx TCP protocol (Traccar port 5027).
// Handshake: <len:2> <IMEI ASCII>, answered with loginReply. Then AVL packets:
// 0x00000000, <data length:4>, codec, count, records, count, <CRC-16/IBM of codec..count as 4 bytes>.
// A single 0xFF byte is a keep-alive ping.

import { ByteReader } from './byte-reader.ts';
import { crc16Ibm } from './checksum.ts';
import { addAlarm, int64Value, isValidCoordinate, knotsFromKmh } from './decode-helpers.ts';
import type { ConnectionState, DecodedMessage, DecodedPosition, DecodedStatus, TcpProtocol } from './types.ts';
import { ProtocolError } from './types.ts';

const TELTONIKA_CODEC = { codec8: 0x08, codec8Extended: 0x8e, codec16: 0x10 } as const;

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
  1: 'in1', 2: 'in2', 3: 'in3', 4: 'in4', 179: 'out1', 180: 'out2', 239: 'ignition', 240: 'motion',
};

const PLAIN_IO: Record<number, string> = {
  16: 'odometer', 21: 'rssi', 69: 'gps', 199: 'tripOdometer', 241: 'operator',
};

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
  181: { key: 'pdop', divisor: 10 },
  182: { key: 'hdop', divisor: 10 },
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
      } else {
        attributes[`io${id}`] = value.toString('hex');
      }
    }
  }

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

function decodeAvlPacket(frame: Buffer): DecodedMessage {
  if (frame.length < 15 || frame.readUInt32BE(0) !== 0) {
    throw new ProtocolError('teltonika: AVL packet without zero preamble');
  }
  const dataLength = frame.readUInt32BE(4);
  if (dataLength + 12 !== frame.length) {
    throw new ProtocolError('teltonika: AVL data length does not match the frame');
  }
  const data = frame.subarray(8, 8 + dataLength);
  if (crc16Ibm(data) !== frame.readUInt32BE(8 + dataLength)) {
    throw new ProtocolError('teltonika: bad CRC');
  }
  const reader = new ByteReader(data);
  const codec = reader.u8();
  if (codec !== TELTONIKA_CODEC.codec8 && codec !== TELTONIKA_CODEC.codec8Extended
    && codec !== TELTONIKA_CODEC.codec16) {
    throw new ProtocolError(`teltonika: unsupported codec 0x${codec.toString(16)}`);
  }
  const count = reader.u8();
  const message: DecodedMessage = { positions: [], statuses: [] };
  for (let index = 0; index < count; index++) {
    const record = readRecord(reader, codec);
    if ('fixTime' in record) {
      message.positions.push(record);
    } else {
      message.statuses.push(record);
    }
  }
  if (reader.u8() !== count || reader.remaining !== 0) {
    throw new ProtocolError('teltonika: record count mismatch');
  }
  const ack = Buffer.alloc(4);
  ack.writeUInt32BE(count, 0);
  message.ack = ack;
  return message;
}

function decode(frame: Buffer): DecodedMessage {
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
  return decodeAvlPacket(frame);
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
        || (dataLength !== null && (dataLength < 3 || dataLength > MAX_DATA_LENGTH));
      if (malformed) {
        if (frames.length > 0) {
          break;
        }
        throw new ProtocolError('teltonika: expected an AVL packet preamble');
      }
      if (dataLength === null) {
        break;
      }
      frameLength = 12 + dataLength;
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
  decode: (frame) => decode(frame),
  loginReply: (accepted) => Buffer.from([accepted ? 0x01 : 0x00]),
};
