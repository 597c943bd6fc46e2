// H02 protocol (Sinotrack and clones, Traccar port 5013).
// Text frames: *<maker>,<id>,<type>,...# ; binary frames: '$' + fixed-length BCD record (32 or 45 bytes per device).

import { h02Commands } from './commands.ts';
import { addAlarm, isValidCoordinate, utcDate } from '../decode-helpers.ts';
import type { ConnectionState, DecodedMessage, DecodedPosition, DecodedStatus, TcpProtocol } from '../types.ts';
import { ProtocolError } from '../types.ts';

const TEXT_MARKER = 0x2a; // '*'
const TEXT_END = 0x23; // '#'
const BINARY_MARKER = 0x24; // '$'
const UNKNOWN_BINARY_MARKER = 0x58; // 'X', fixed 32-byte frames Traccar splits but does not decode
const SHORT_BINARY_LENGTH = 32;
const LONG_BINARY_LENGTH = 45;
// Same record with an 8-byte id (15 BCD digits and a pad nibble), plus trailing bytes Traccar does not read.
const LONG_ID_BINARY_LENGTH = 42;
const LONG_ID_BYTES = 8;
const SHORT_ID_BYTES = 5;
const MAX_TEXT_LENGTH = 4096;
const LINE_BREAKS = new Set([0x0d, 0x0a]);

function isFrameBoundary(buffer: Buffer, index: number): boolean {
  if (index >= buffer.length) {
    return true;
  }
  const byte = buffer[index]!;
  return byte === TEXT_MARKER || byte === BINARY_MARKER || LINE_BREAKS.has(byte);
}

// The binary frame length is not announced; like Traccar, infer it once per connection from the first frame.
function binaryFrameLength(buffer: Buffer, offset: number, state: ConnectionState): number | null {
  if (state.h02BinaryFrameLength) {
    return state.h02BinaryFrameLength;
  }
  const available = buffer.length - offset;
  let length: number | null = null;
  const endsAt = (candidate: number) => available >= candidate && isFrameBoundary(buffer, offset + candidate)
    && !isFrameBoundary(buffer, offset + SHORT_BINARY_LENGTH);
  if (endsAt(LONG_BINARY_LENGTH)) {
    length = LONG_BINARY_LENGTH;
  } else if ((available === LONG_ID_BINARY_LENGTH || available >= LONG_BINARY_LENGTH) && endsAt(LONG_ID_BINARY_LENGTH)) {
    // A read of exactly 42 bytes is taken as one long-id frame: devices send one frame per segment.
    length = LONG_ID_BINARY_LENGTH;
  } else if (available >= SHORT_BINARY_LENGTH
    && (isFrameBoundary(buffer, offset + SHORT_BINARY_LENGTH) || available >= LONG_BINARY_LENGTH)) {
    length = SHORT_BINARY_LENGTH;
  }
  if (length !== null) {
    state.h02BinaryFrameLength = length;
  }
  return length;
}

function splitFrames(buffer: Buffer, state: ConnectionState): { frames: Buffer[]; consumed: number } {
  const frames: Buffer[] = [];
  let offset = 0;
  while (offset < buffer.length) {
    const marker = buffer[offset]!;
    const available = buffer.length - offset;
    let frameLength: number | null;
    if (LINE_BREAKS.has(marker)) {
      offset += 1;
      continue;
    } else if (marker === TEXT_MARKER) {
      // Only the longest frame's worth of bytes is searched, so each call's work is bounded.
      const end = buffer.subarray(offset, offset + MAX_TEXT_LENGTH).indexOf(TEXT_END);
      if (end < 0 && available >= MAX_TEXT_LENGTH) {
        throw new ProtocolError(`h02: text frame without # terminator within ${MAX_TEXT_LENGTH} bytes`);
      }
      frameLength = end < 0 ? null : end + 1;
    } else if (marker === BINARY_MARKER) {
      frameLength = binaryFrameLength(buffer, offset, state);
    } else if (marker === UNKNOWN_BINARY_MARKER) {
      frameLength = SHORT_BINARY_LENGTH;
    } else {
      if (frames.length > 0) {
        break;
      }
      throw new ProtocolError(`h02: garbage byte 0x${marker.toString(16)} where a frame was expected`);
    }
    if (frameLength === null || available < frameLength) {
      break;
    }
    frames.push(buffer.subarray(offset, offset + frameLength));
    offset += frameLength;
  }
  return { frames, consumed: offset };
}

// Status word bits are active-low alarms; bit 10 is ignition. Traccar reports only the first alarm found.
function readStatus(status: number, attributes: Record<string, unknown>): void {
  const isSet = (bit: number) => ((status >>> bit) & 1) === 1;
  if (!isSet(0)) {
    addAlarm(attributes, 'vibration');
  } else if (!isSet(1) || !isSet(18)) {
    addAlarm(attributes, 'sos');
  } else if (!isSet(2)) {
    addAlarm(attributes, 'overspeed');
  } else if (!isSet(19)) {
    addAlarm(attributes, 'powerCut');
  }
  attributes['ignition'] = isSet(10);
  attributes['status'] = status;
}

const HEX_STATUS = /^[0-9A-Fa-f]{8}$/;

function readHexStatus(text: string | undefined, attributes: Record<string, unknown>): boolean {
  if (text === undefined || !HEX_STATUS.test(text)) {
    return false;
  }
  readStatus(Number.parseInt(text, 16), attributes);
  return true;
}

function parseCoordinate(text: string | undefined, hemisphere: string | undefined): number | null {
  if (text === undefined || hemisphere === undefined) {
    return null;
  }
  let degrees: number;
  let minutes: number;
  const dashed = /^-(\d+)-(\d+\.\d+)$/.exec(text);
  const decimalMinutes = /^(\d*)(\d\d\.\d+)$/.exec(text);
  const packedMinutes = /^(\d+)(\d\d)(\d{4})$/.exec(text);
  if (dashed) {
    degrees = Number(dashed[1]);
    minutes = Number(dashed[2]);
  } else if (decimalMinutes) {
    degrees = Number(decimalMinutes[1] || '0');
    minutes = Number(decimalMinutes[2]);
  } else if (packedMinutes) {
    degrees = Number(packedMinutes[1]);
    minutes = Number(`${packedMinutes[2]}.${packedMinutes[3]}`);
  } else {
    return null;
  }
  const value = degrees + minutes / 60;
  return hemisphere === 'S' || hemisphere === 'W' ? -value : value;
}

// hhmmss (possibly empty) and ddmmyy; undefined date means the message has none, null means it is malformed.
function parseDateTime(time: string, date: string | undefined): Date | null | undefined {
  if (date === undefined || date === '') {
    return undefined;
  }
  if (!/^\d{6}$/.test(date) || !/^(\d{6})?$/.test(time)) {
    return null;
  }
  const field = (text: string, index: number) => Number(text.slice(index, index + 2));
  const hasTime = time !== '';
  return utcDate(
    field(date, 4), field(date, 2), field(date, 0),
    hasTime ? field(time, 0) : 0, hasTime ? field(time, 2) : 0, hasTime ? field(time, 4) : 0,
  );
}

function formatUtc(date: Date): string {
  return date.toISOString().slice(0, 19).replace(/[-T:]/g, '');
}

interface TextLocation {
  position: DecodedPosition;
  response: string | null; // V4 command response text preceding the location
}

const NUMBER = /^\d+(\.\d*)?$/;

// Locates "<hhmmss>,<validity>,<lat>,<N|S>,<lon>,<E|W>,<speed>,<course>,[battery,]<ddmmyy>" anywhere after the type,
// then the status word and extra fields that may follow.
function parseTextLocation(fields: string[], now: Date): TextLocation | null {
  for (let index = 4; index + 6 < fields.length; index++) {
    const time = fields[index - 1]!;
    const validity = fields[index]!;
    if (!/^[NS]$/.test(fields[index + 2]!) || !/^[EW]$/.test(fields[index + 4]!)
      || !/^(\d{6})?$/.test(time) || !/^([ABV]?|\d+)$/.test(validity)) {
      continue;
    }
    const latitude = parseCoordinate(fields[index + 1], fields[index + 2]);
    const longitude = parseCoordinate(fields[index + 3], fields[index + 4]);
    const speedText = fields[index + 5]!.trim();
    const courseText = fields[index + 6]!.trim();
    if (latitude === null || longitude === null || !isValidCoordinate(latitude, longitude)
      || !NUMBER.test(speedText) || !(courseText === '' || NUMBER.test(courseText))) {
      return null;
    }
    let next = index + 7;
    if (/^\d{1,5}$/.test(fields[next] ?? '') && /^\d{6}$/.test(fields[next + 1] ?? '')) {
      next += 1; // battery level, not decoded by Traccar either
    }
    const fixTime = parseDateTime(time, fields[next]);
    if (fixTime === null) {
      return null;
    }
    next += 1;
    const attributes: Record<string, unknown> = {};
    if (readHexStatus(fields[next], attributes)) {
      next += 1;
    } else if (readHexStatus(fields[next + 3], attributes)) {
      next += 4; // SIM information precedes the status word
    }
    const altitude = readExtras(fields.slice(next), attributes);
    return {
      position: {
        fixTime: fixTime ?? now,
        deviceTime: fixTime ?? null,
        valid: validity === 'A' || /^\d+$/.test(validity),
        latitude,
        longitude,
        altitude,
        speed: Number(speedText),
        course: courseText === '' ? 0 : Number(courseText),
        accuracy: 0,
        attributes,
      },
      response: fields.slice(3, index - 1).join(',') || null,
    };
  }
  return null;
}

const SENSOR_FIELDS = [/^\d+$/, /^-?\d+$/, /^\d+\.\d+$/, /^-?\d+$/, /^[0-9A-Fa-f]+$/, /^[0-9A-Fa-f]+$/];

// After the status word: either odometer,temperature,fuel,altitude,lac,cid or free-form values kept as io<N>.
// Returns the altitude in metres, 0 when absent.
function readExtras(extras: string[], attributes: Record<string, unknown>): number {
  if (extras.length === SENSOR_FIELDS.length && extras.every((value, index) => SENSOR_FIELDS[index]!.test(value))) {
    attributes['odometer'] = Number(extras[0]);
    attributes['temp1'] = Number(extras[1]);
    attributes['fuel'] = Number(extras[2]);
    return Number(extras[3]);
  }
  extras.forEach((value, index) => {
    attributes[`io${index + 1}`] = value.trim();
  });
  return 0;
}

function status(deviceTime: Date | null, attributes: Record<string, unknown>): DecodedStatus {
  return { deviceTime, attributes };
}

function decodeNbr(fields: string[], attributes: Record<string, unknown>): DecodedStatus | null {
  if (!/^\d+$/.test(fields[7] ?? '')) {
    return null;
  }
  const dateIndex = 8 + Number(fields[7]) * 3;
  const deviceTime = parseDateTime(fields[3] ?? '', fields[dateIndex]);
  if (!deviceTime || !readHexStatus(fields[dateIndex + 1], attributes)) {
    return null;
  }
  return status(deviceTime, attributes);
}

function decodeLink(fields: string[], attributes: Record<string, unknown>): DecodedStatus | null {
  const counters = fields.slice(4, 9);
  const deviceTime = parseDateTime(fields[3] ?? '', fields[9]);
  if (counters.length < 5 || !counters.every((value) => /^\d+$/.test(value)) || !deviceTime) {
    return null;
  }
  const [rssi, satellites, batteryLevel, steps, turnovers] = counters.map(Number);
  Object.assign(attributes, { rssi, sat: satellites, batteryLevel, steps, turnovers });
  if (!readHexStatus(fields[10], attributes)) {
    return null;
  }
  return status(deviceTime, attributes);
}

function decodeV3(fields: string[], attributes: Record<string, unknown>): DecodedStatus | null {
  const last = fields.length - 1;
  const deviceTime = parseDateTime(fields[3] ?? '', fields[last - 1]);
  if (fields[last - 2] !== 'X' || !deviceTime || !readHexStatus(fields[last], attributes)) {
    return null;
  }
  return status(deviceTime, attributes);
}

function decodeVp1(fields: string[]): DecodedPosition | null {
  if (!/^[AB]$/.test(fields[3] ?? '') || fields.length < 11) {
    return null;
  }
  const latitude = parseCoordinate(fields[4], fields[5]);
  const longitude = parseCoordinate(fields[6], fields[7]);
  const fixTime = parseDateTime('', fields[10]);
  const speed = fields[8]!;
  const course = fields[9]!;
  if (latitude === null || longitude === null || !isValidCoordinate(latitude, longitude) || !fixTime
    || !NUMBER.test(speed) || !NUMBER.test(course)) {
    return null;
  }
  return {
    fixTime, deviceTime: fixTime, valid: true, latitude, longitude, altitude: 0,
    speed: Number(speed), course: Number(course), accuracy: 0, attributes: {},
  };
}

function decodeText(frame: Buffer, now: Date): DecodedMessage {
  const sentence = frame.toString('latin1').trim();
  if (!sentence.startsWith('*') || !sentence.endsWith('#')) {
    throw new ProtocolError('h02: text frame must start with * and end with #');
  }
  const body = sentence.slice(1, -1);
  const fields = body.split(',');
  const [maker = '', id = '', type = ''] = fields;
  const message: DecodedMessage = { positions: [], statuses: [] };
  if (/^\d+$/.test(id)) {
    message.uniqueId = id;
  }
  const attributes: Record<string, unknown> = {};
  const addStatus = (report: DecodedStatus | null) => {
    if (report) {
      message.statuses.push(report);
    }
  };
  switch (type) {
    case 'V0':
    case 'HTBT':
      message.ack = Buffer.from(`*${maker},${id},${type}#`, 'latin1');
      if (type === 'HTBT' && /^\d+$/.test(fields[3] ?? '')) {
        addStatus(status(null, { batteryLevel: Number(fields[3]) }));
      }
      break;
    case 'NBR':
      addStatus(decodeNbr(fields, attributes));
      message.ack = Buffer.from(`*HQ,${id},V4,NBR,${formatUtc(now)}#`, 'latin1');
      break;
    case 'LINK':
      addStatus(decodeLink(fields, attributes));
      break;
    case 'V3':
      addStatus(decodeV3(fields, attributes));
      break;
    case 'VP1': {
      const position = decodeVp1(fields);
      if (position) {
        message.positions.push(position);
      }
      break;
    }
    case 'SMS':
      addStatus(status(null, { result: body.slice(body.indexOf(',SMS,') + 5) }));
      break;
    default: {
      const location = type.startsWith('V') ? parseTextLocation(fields, now) : null;
      if (location) {
        if (location.response !== null && type === 'V4') {
          location.position.attributes['result'] = location.response;
        }
        message.positions.push(location.position);
        if (type === 'V1' && message.uniqueId) {
          message.ack = Buffer.from(`*HQ,${id},V4,V1,${formatUtc(now)}#`, 'latin1');
        }
      }
    }
  }
  return message;
}

// Active-low battery code of binary frames, mapped to percent as Traccar does.
function batteryLevel(value: number): number | null {
  if (value === 0) {
    return null;
  } else if (value <= 3) {
    return (value - 1) * 10;
  } else if (value <= 6) {
    return (value - 1) * 20;
  } else if (value <= 100) {
    return value;
  } else if (value >= 0xf1 && value <= 0xf6) {
    return value - 0xf0;
  }
  return null;
}

function decodeBinary(frame: Buffer): DecodedMessage {
  if (frame.length < SHORT_BINARY_LENGTH) {
    throw new ProtocolError('h02: binary frame too short');
  }
  // Past the id both layouts agree, so the long id is read apart and the record is read as a short-id one.
  const idBytes = frame.length === LONG_ID_BINARY_LENGTH ? LONG_ID_BYTES : SHORT_ID_BYTES;
  const idNibbles = frame.subarray(1, 1 + idBytes).toString('hex');
  const nibbles = idNibbles.slice(0, 10) + frame.subarray(1 + idBytes, SHORT_BINARY_LENGTH + idBytes - SHORT_ID_BYTES)
    .toString('hex');
  const digits = (start: number, end: number) => {
    const text = nibbles.slice(start, end);
    if (!/^\d+$/.test(text)) {
      throw new ProtocolError(`h02: bad BCD field at nibble ${start}`);
    }
    return text;
  };
  const number = (start: number, end: number) => Number(digits(start, end));
  const uniqueId = idBytes === LONG_ID_BYTES ? idNibbles.slice(0, 15) : digits(0, 10);
  if (!/^\d+$/.test(uniqueId)) {
    throw new ProtocolError('h02: bad BCD device id');
  }
  const time = utcDate(number(20, 22), number(18, 20), number(16, 18), number(10, 12), number(12, 14), number(14, 16));
  const attributes: Record<string, unknown> = {};
  let latitude = number(22, 24) + Number(`${digits(24, 26)}.${digits(26, 30)}`) / 60;
  const battery = batteryLevel(frame[16 + idBytes - SHORT_ID_BYTES]!);
  if (battery !== null) {
    attributes['batteryLevel'] = battery;
  }
  let longitude = number(32, 35) + Number(`${digits(35, 37)}.${digits(37, 41)}`) / 60;
  const flags = Number.parseInt(nibbles[41]!, 16);
  if ((flags & 0x04) === 0) {
    latitude = -latitude;
  }
  if ((flags & 0x08) === 0) {
    longitude = -longitude;
  }
  const speed = number(42, 45);
  const course = number(45, 48);
  readStatus(frame.readUInt32BE(25 + idBytes - SHORT_ID_BYTES), attributes);
  const message: DecodedMessage = { uniqueId, positions: [], statuses: [] };
  if (time && isValidCoordinate(latitude, longitude)) {
    message.positions.push({
      fixTime: time, deviceTime: time, valid: (flags & 0x02) !== 0, latitude, longitude, altitude: 0,
      speed, course, accuracy: 0, attributes,
    });
  } else {
    message.statuses.push(status(time, attributes));
  }
  return message;
}

function decode(frame: Buffer, _state: ConnectionState, now: Date): DecodedMessage {
  switch (frame[0]) {
    case TEXT_MARKER:
      return decodeText(frame, now);
    case BINARY_MARKER:
      return decodeBinary(frame);
    case UNKNOWN_BINARY_MARKER:
      return { positions: [], statuses: [] };
    default:
      throw new ProtocolError('h02: unknown frame marker');
  }
}

export const h02Protocol: TcpProtocol = {
  name: 'h02',
  splitFrames,
  decode,
  commands: h02Commands,
};
