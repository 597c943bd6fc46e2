// GT06 / Concox binary protocol (Traccar port 5023).
// Frame: 0x7878 <len:1> or 0x7979 <len:2>, then type, body, serial:2, CRC-16/X-25:2 over length..serial, 0x0D0A.

import { ByteReader } from './byte-reader.ts';
import { crc16X25 } from './checksum.ts';
import { addAlarm, isValidCoordinate, knotsFromKmh, utcDate } from './decode-helpers.ts';
import type { ConnectionState, DecodedMessage, DecodedPosition, TcpProtocol } from './types.ts';
import { ProtocolError } from './types.ts';

const SHORT_HEADER = 0x7878;
const LONG_HEADER = 0x7979;
const TRAILER = Buffer.from([0x0d, 0x0a]);

const GT06_MESSAGE = {
  login: 0x01,
  gps: 0x10,
  gpsLbs: 0x12,
  status: 0x13,
  string: 0x15,
  gpsLbsStatus: 0x16,
  lbsStatus: 0x19,
  stringInfo: 0x21,
  gpsLbsUtc: 0x22,
  heartbeat: 0x23,
  gpsLbsStatusAlarm: 0x26,
  gpsLbsStatusFence: 0x27,
  timeRequest: 0x8a,
} as const;

// Server-to-device command frames: the device expects no answer to its replies on them.
const COMMAND_TYPES = new Set([0x80, 0x81, 0x82]);

// Alarm codes of the status block, named as Traccar does for standard (non model-specific) devices.
const ALARM_NAMES = new Map<number, string>([
  [0x01, 'sos'],
  [0x02, 'powerCut'],
  [0x03, 'vibration'],
  [0x04, 'geofenceEnter'],
  [0x05, 'geofenceExit'],
  [0x06, 'overspeed'],
  [0x09, 'vibration'],
  [0x0c, 'tampering'],
  [0x0e, 'lowBattery'],
  [0x0f, 'lowBattery'],
  [0x11, 'powerOff'],
  [0x13, 'tampering'],
  [0x14, 'door'],
  [0x18, 'removing'],
  [0x19, 'lowBattery'],
  [0x1a, 'hardBraking'],
  [0x1b, 'hardCornering'],
  [0x23, 'fallDown'],
  [0x25, 'tampering'],
  [0x26, 'hardAcceleration'],
  [0x27, 'hardBraking'],
  [0x28, 'hardBraking'],
  [0x29, 'hardAcceleration'],
  [0x2a, 'hardCornering'],
  [0x2b, 'hardCornering'],
  [0x2c, 'accident'],
  [0x2e, 'hardCornering'],
  [0x30, 'jamming'],
  [0x32, 'tampering'],
  [0x33, 'lock'],
  [0x34, 'unlock'],
  [0x53, 'fuelLeak'],
  [0x5b, 'temperature'],
  [0x5c, 'temperature'],
  [0xc9, 'idle'],
  [0xf0, 'hardAcceleration'],
  [0xf1, 'hardBraking'],
  [0xf2, 'accident'],
  [0x0107, 'jamming'],
  [0x010b, 'jamming'],
]);

// Alarm carried in bits 3..5 of the terminal information byte.
const TERMINAL_ALARMS: Record<number, string> = {
  1: 'vibration',
  2: 'powerCut',
  3: 'lowBattery',
  4: 'sos',
  6: 'geofence',
  7: 'removing',
};

interface GpsFix {
  time: Date | null;
  valid: boolean;
  latitude: number;
  longitude: number;
  speed: number;
  course: number;
}

export function gt06Response(type: number, serial: number, content: Buffer = Buffer.alloc(0)): Buffer {
  const frame = Buffer.alloc(10 + content.length);
  frame.writeUInt16BE(SHORT_HEADER, 0);
  frame.writeUInt8(5 + content.length, 2);
  frame.writeUInt8(type, 3);
  content.copy(frame, 4);
  frame.writeUInt16BE(serial, 4 + content.length);
  frame.writeUInt16BE(crc16X25(frame.subarray(2, 6 + content.length)), 6 + content.length);
  TRAILER.copy(frame, 8 + content.length);
  return frame;
}

function splitFrames(buffer: Buffer): { frames: Buffer[]; consumed: number } {
  const frames: Buffer[] = [];
  let offset = 0;
  while (offset < buffer.length) {
    const available = buffer.length - offset;
    const first = buffer[offset];
    const isHeader = (first === 0x78 || first === 0x79) && (available < 2 || buffer[offset + 1] === first);
    if (!isHeader) {
      if (frames.length > 0) {
        break;
      }
      throw new ProtocolError(`gt06: garbage byte 0x${first!.toString(16)} where a frame header was expected`);
    }
    if (available < 5) {
      break;
    }
    const declared = first === 0x78 ? 5 + buffer[offset + 2]! : 6 + buffer.readUInt16BE(offset + 2);
    if (available < declared) {
      break;
    }
    // Traccar cuts a frame whose length field does not point at a trailer at the first 0D0A, but
    // decode() refuses every such frame, so it is garbage here at once: no search through the buffer.
    if (!buffer.subarray(offset + declared - 2, offset + declared).equals(TRAILER)) {
      if (frames.length > 0) {
        break;
      }
      throw new ProtocolError('gt06: the frame length field does not point at a 0D0A trailer');
    }
    frames.push(buffer.subarray(offset, offset + declared));
    offset += declared;
  }
  return { frames, consumed: offset };
}

function readGpsFix(reader: ByteReader, offsetMinutes: number, attributes: Record<string, unknown>): GpsFix {
  const time = utcDate(reader.u8(), reader.u8(), reader.u8(), reader.u8(), reader.u8(), reader.u8(), offsetMinutes);
  attributes['sat'] = reader.u8() & 0x0f;
  let latitude = reader.u32() / 1_800_000;
  let longitude = reader.u32() / 1_800_000;
  const speed = knotsFromKmh(reader.u8());
  const flags = reader.u16();
  if ((flags & 0x0400) === 0) {
    latitude = -latitude;
  }
  if ((flags & 0x0800) !== 0) {
    longitude = -longitude;
  }
  if ((flags & 0x4000) !== 0) {
    attributes['ignition'] = (flags & 0x8000) !== 0;
  }
  return { time, valid: (flags & 0x1000) !== 0, latitude, longitude, speed, course: flags & 0x03ff };
}

// Cell tower fields (MCC, MNC, LAC, cell id) are read past: positions carry no network data.
function skipCellTower(reader: ByteReader): void {
  const mcc = reader.u16();
  reader.skip((mcc & 0x8000) !== 0 ? 2 : 1);
  reader.skip(2 + 3);
}

function skipCellTowerWithLength(reader: ByteReader): void {
  const length = reader.u8();
  if (length === 0) {
    return;
  }
  skipCellTower(reader);
  if (length > 9) {
    reader.skip(length - 9);
  }
}

function readTerminalInfo(value: number, attributes: Record<string, unknown>): void {
  attributes['status'] = value;
  attributes['ignition'] = (value & 0x02) !== 0;
  attributes['charge'] = (value & 0x04) !== 0;
  attributes['blocked'] = (value & 0x80) !== 0;
  addAlarm(attributes, TERMINAL_ALARMS[(value >> 3) & 0x07]);
}

// Terminal information, voltage level (0..6 or percent), GSM signal, alarm code; the language byte follows.
function readStatusBlock(reader: ByteReader, attributes: Record<string, unknown>, alarmHighBits: boolean): void {
  readTerminalInfo(reader.u8(), attributes);
  const voltageLevel = reader.u8();
  if (voltageLevel <= 6) {
    attributes['batteryLevel'] = Math.trunc((voltageLevel * 100) / 6);
  } else if (voltageLevel <= 100) {
    attributes['batteryLevel'] = voltageLevel;
  }
  attributes['rssi'] = reader.u8();
  let alarm = reader.u8();
  if (alarmHighBits && reader.remaining > 0) {
    alarm += (reader.buffer[reader.offset]! >> 4) << 8;
  }
  addAlarm(attributes, ALARM_NAMES.get(alarm));
}

// Optional trailing fields some firmwares append, recognised by how many bytes remain (as Traccar does).
function readTrailingIgnitionAndOdometer(reader: ByteReader, attributes: Record<string, unknown>): void {
  if (reader.remaining === 3 || reader.remaining === 7) {
    attributes['ignition'] = reader.u8() > 0;
    reader.u8(); // upload mode
    if (reader.u8() > 0) {
      attributes['archive'] = true;
    }
  }
  if (reader.remaining === 4) {
    attributes['odometer'] = reader.u32();
  }
}

function report(fix: GpsFix | null, attributes: Record<string, unknown>): Omit<DecodedMessage, 'ack'> {
  if (fix && fix.time && isValidCoordinate(fix.latitude, fix.longitude)) {
    const position: DecodedPosition = {
      fixTime: fix.time,
      deviceTime: fix.time,
      valid: fix.valid,
      latitude: fix.latitude,
      longitude: fix.longitude,
      altitude: 0,
      speed: fix.speed,
      course: fix.course,
      accuracy: 0,
      attributes,
    };
    return { positions: [position], statuses: [] };
  }
  return { positions: [], statuses: [{ deviceTime: fix?.time ?? null, attributes }] };
}

// Without trailing NULs. Found by one scan from the end: the regex /\0+$/ would retry from every NUL (quadratic).
function withoutTrailingNuls(text: string): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 0) {
    end -= 1;
  }
  return text.slice(0, end);
}

function readText(bytes: Buffer, encoding: 'latin1' | 'utf16be'): string {
  if (encoding === 'utf16be') {
    const swapped = Buffer.from(bytes.subarray(0, bytes.length - (bytes.length % 2)));
    return withoutTrailingNuls(swapped.swap16().toString('utf16le'));
  }
  return withoutTrailingNuls(bytes.toString('latin1'));
}

function decodeLogin(reader: ByteReader, state: ConnectionState, serial: number): DecodedMessage {
  const imei = reader.bytes(8).toString('hex').slice(1);
  if (!/^\d{15}$/.test(imei)) {
    throw new ProtocolError('gt06: login IMEI is not BCD');
  }
  if (reader.remaining >= 4) {
    reader.skip(2); // type identification code
    const extension = reader.u16();
    const value = extension >> 4;
    const hours = Math.trunc(value / 100);
    const minutes = value % 100;
    if (hours <= 14 && minutes < 60) {
      const offset = hours * 60 + minutes;
      state.gt06TimeZoneOffsetMinutes = (extension & 0x08) !== 0 ? -offset : offset;
    }
  }
  return { uniqueId: imei, positions: [], statuses: [], ack: gt06Response(GT06_MESSAGE.login, serial) };
}

function decodeBody(
  type: number, reader: ByteReader, extended: boolean, serial: number, state: ConnectionState, now: Date,
): DecodedMessage {
  const offsetMinutes = state.gt06TimeZoneOffsetMinutes ?? 0;
  const attributes: Record<string, unknown> = {};
  const ack = gt06Response(type, serial);
  switch (type) {
    case GT06_MESSAGE.login:
      return decodeLogin(reader, state, serial);

    case GT06_MESSAGE.gps: {
      const fix = readGpsFix(reader, offsetMinutes, attributes);
      return { ...report(fix, attributes), ack };
    }

    case GT06_MESSAGE.gpsLbs:
    case GT06_MESSAGE.gpsLbsUtc: {
      const fix = readGpsFix(reader, offsetMinutes, attributes);
      if (reader.remaining > 0) {
        skipCellTower(reader);
      }
      if (type === GT06_MESSAGE.gpsLbsUtc && reader.remaining >= 3) {
        attributes['ignition'] = reader.u8() > 0;
        attributes['event'] = reader.u8(); // upload mode: why the device sent this report
        if (reader.u8() > 0) {
          attributes['archive'] = true;
        }
        if (reader.remaining === 4) {
          attributes['odometer'] = reader.u32();
        }
      } else {
        readTrailingIgnitionAndOdometer(reader, attributes);
      }
      return { ...report(fix, attributes), ack };
    }

    case GT06_MESSAGE.gpsLbsStatus:
    case GT06_MESSAGE.gpsLbsStatusAlarm:
    case GT06_MESSAGE.gpsLbsStatusFence: {
      const fix = readGpsFix(reader, offsetMinutes, attributes);
      skipCellTowerWithLength(reader);
      const isFence = type === GT06_MESSAGE.gpsLbsStatusFence;
      readStatusBlock(reader, attributes, isFence);
      if (isFence && reader.remaining > 0) {
        reader.u8(); // language
      }
      readTrailingIgnitionAndOdometer(reader, attributes);
      if (isFence && reader.remaining > 0) {
        attributes['geofence'] = reader.u8();
      }
      return { ...report(fix, attributes), ack };
    }

    case GT06_MESSAGE.status:
      readStatusBlock(reader, attributes, false);
      return { ...report(null, attributes), ack };

    case GT06_MESSAGE.lbsStatus:
      skipCellTower(reader);
      readStatusBlock(reader, attributes, false);
      return { ...report(null, attributes), ack };

    case GT06_MESSAGE.heartbeat: {
      const status = reader.u8();
      attributes['armed'] = (status & 0x01) !== 0;
      attributes['ignition'] = (status & 0x02) !== 0;
      attributes['charge'] = (status & 0x04) !== 0;
      if (reader.remaining >= 2) {
        attributes['battery'] = reader.u16() / 100;
      }
      if (reader.remaining >= 1) {
        attributes['rssi'] = reader.u8();
      }
      return { ...report(null, attributes), ack };
    }

    case GT06_MESSAGE.string: {
      const length = reader.u8();
      if (length >= 4) {
        reader.skip(4); // server flag
        const text = readText(reader.bytes(length - 4), 'latin1');
        if (text.startsWith('<ICCID:')) {
          attributes['iccid'] = text.substring(7, 27);
        } else {
          attributes['result'] = text;
        }
      }
      return { ...report(null, attributes), ack };
    }

    case GT06_MESSAGE.stringInfo: {
      // Traccar does not acknowledge this extended command result.
      reader.skip(4); // server flag
      const encoding = reader.u8() === 1 ? 'latin1' : 'utf16be';
      attributes['result'] = readText(reader.bytes(reader.remaining), encoding);
      return report(null, attributes);
    }

    case GT06_MESSAGE.timeRequest: {
      const time = Buffer.from([
        now.getUTCFullYear() - 2000, now.getUTCMonth() + 1, now.getUTCDate(),
        now.getUTCHours(), now.getUTCMinutes(), now.getUTCSeconds(),
      ]);
      return { positions: [], statuses: [], ack: gt06Response(GT06_MESSAGE.timeRequest, 0, time) };
    }

    default:
      // Unsupported types are acknowledged like Traccar does so the device does not resend them.
      if (extended || COMMAND_TYPES.has(type)) {
        return { positions: [], statuses: [] };
      }
      return { positions: [], statuses: [], ack };
  }
}

function decode(frame: Buffer, state: ConnectionState, now: Date): DecodedMessage {
  if (frame.length < 10) {
    throw new ProtocolError('gt06: frame too short');
  }
  const header = frame.readUInt16BE(0);
  if (header !== SHORT_HEADER && header !== LONG_HEADER) {
    throw new ProtocolError('gt06: bad frame header');
  }
  const extended = header === LONG_HEADER;
  const declared = extended ? 6 + frame.readUInt16BE(2) : 5 + frame[2]!;
  if (declared !== frame.length || frame.length < (extended ? 11 : 10)) {
    throw new ProtocolError('gt06: frame length does not match its length field');
  }
  if (!frame.subarray(frame.length - 2).equals(TRAILER)) {
    throw new ProtocolError('gt06: bad frame trailer');
  }
  const crc = frame.readUInt16BE(frame.length - 4);
  if (crc16X25(frame.subarray(2, frame.length - 4)) !== crc) {
    throw new ProtocolError('gt06: bad CRC');
  }
  const bodyStart = extended ? 5 : 4;
  const type = frame[bodyStart - 1]!;
  const serial = frame.readUInt16BE(frame.length - 6);
  return decodeBody(type, new ByteReader(frame, bodyStart, frame.length - 6), extended, serial, state, now);
}

export const gt06Protocol: TcpProtocol = {
  name: 'gt06',
  splitFrames: (buffer) => splitFrames(buffer),
  decode,
};
