// Meitrack MVT/T/P/TC series (Traccar's `meitrack`, port 5020, TCP and UDP). Frames `$$<flag><length>,<imei>,<command>,
// <data>*<checksum>\r\n`, where the length counts from the first comma to the end. Commands: AAA (and AFF) text
// locations, CCC binary batches (answered `@@<flag>…,CCC,<count>`), CCE binary TLV batches, AAC (answered), D82 result.
// Times are UTC; speeds km/h.

import { commandEncoder } from '../command-types.ts';
import type { DeviceCommand } from '../command-types.ts';
import { addAlarm, isValidCoordinate, knotsFromKmh, utcDate } from '../decode-helpers.ts';
import { LittleEndianReader } from '../little-endian-reader.ts';
import type { ConnectionState, DecodedMessage, DecodedPosition, DecodedStatus, TcpProtocol } from '../types.ts';
import { ProtocolError } from '../types.ts';

const MAX_FRAME_LENGTH = 8192;
const SECONDS_1970_TO_2000 = 946_684_800;

function splitFrames(buffer: Buffer): { frames: Buffer[]; consumed: number } {
  const frames: Buffer[] = [];
  let offset = 0;
  while (offset < buffer.length) {
    if (buffer[offset] === 0x0d || buffer[offset] === 0x0a) {
      offset += 1;
      continue;
    }
    if (buffer[offset] !== 0x24 || (buffer.length - offset > 1 && buffer[offset + 1] !== 0x24)) {
      if (frames.length > 0) break;
      throw new ProtocolError('meitrack: a frame must start with $$');
    }
    // `$$`, the flag, then the decimal length up to the first comma.
    const comma = buffer.subarray(offset, offset + 16).indexOf(0x2c);
    if (comma < 0) {
      if (buffer.length - offset >= 16) throw new ProtocolError('meitrack: no length field');
      break;
    }
    const lengthText = buffer.toString('latin1', offset + 3, offset + comma);
    if (!/^\d{1,5}$/.test(lengthText)) throw new ProtocolError('meitrack: bad length field');
    const length = comma + Number(lengthText);
    if (length > MAX_FRAME_LENGTH) throw new ProtocolError(`meitrack: frame longer than ${MAX_FRAME_LENGTH} bytes`);
    if (buffer.length - offset < length) break;
    frames.push(buffer.subarray(offset, offset + length));
    offset += length;
  }
  return { frames, consumed: offset };
}

/** Traccar's checksum: the byte sum of everything up to and including `*`, two upper-case hex digits. */
function checksum(text: string): string {
  let sum = 0;
  for (let index = 0; index < text.length; index++) sum = (sum + text.charCodeAt(index)) & 0xff;
  return sum.toString(16).toUpperCase().padStart(2, '0');
}

function answer(text: string): Buffer {
  return Buffer.from(`${text}${checksum(text)}\r\n`, 'latin1');
}

const HEX = '[0-9a-fA-F]';
const AAA = new RegExp(
  `^\\$\\$.\\d+,(\\d+),${HEX}{3},(?:\\d+,)?(\\d+),(-?\\d+\\.\\d+),(-?\\d+\\.\\d+),(\\d\\d)(\\d\\d)(\\d\\d)(\\d\\d)(\\d\\d)(\\d\\d),([AV]),` +
  `(\\d+),(\\d+),(\\d+(?:\\.\\d*)?),(\\d+),(\\d+(?:\\.\\d*)?),(-?\\d+),(\\d+),(\\d+),(\\d+)\\|(\\d+)\\|(${HEX}+)?\\|(${HEX}+)?,(${HEX}{2})(${HEX}{2}),` +
  `(?:(\\d+\\.\\d+)\\|(\\d+\\.\\d+)\\|\\d+\\.\\d+\\|\\d+\\.\\d+\\|\\d+\\.\\d+,|(${HEX}+)?\\|(${HEX}+)?\\|(${HEX}+)?\\|(${HEX}+)\\|(${HEX}+)?,)` +
  `(?:(?:([^,]+)?,)?[^,]*,(\\d+)?,(${HEX}{4})?(?:,(${HEX}{6}(?:\\|${HEX}{6})*)?(?:,(\\d+),([^*]*))?)?|[^*]*)\\*${HEX}{2}(?:\\r\\n)?$`,
);

const EVENT_ALARMS: Record<number, string> = {
  1: 'sos', 17: 'lowBattery', 18: 'lowPower', 19: 'overspeed', 20: 'geofenceEnter', 21: 'geofenceExit', 22: 'powerRestored',
  23: 'powerCut', 36: 'tow', 44: 'jamming', 78: 'accident', 90: 'hardCornering', 91: 'hardCornering', 129: 'hardBraking',
  130: 'hardAcceleration', 135: 'fatigueDriving',
};

function decodeText(sentence: string): DecodedMessage {
  const match = AAA.exec(sentence);
  if (!match) return { positions: [], statuses: [] };
  const group = (index: number) => match[index];
  const number = (index: number) => Number(match[index]);
  const event = number(2);
  const attributes: Record<string, unknown> = { event };
  addAlarm(attributes, EVENT_ALARMS[event]);
  attributes['sat'] = number(12);
  attributes['hdop'] = number(16);
  attributes['odometer'] = number(18);
  attributes['runtime'] = group(19);
  attributes['input'] = Number.parseInt(group(24)!, 16);
  attributes['output'] = Number.parseInt(group(25)!, 16);
  if (group(26) !== undefined) {
    attributes['battery'] = number(26);
    attributes['power'] = number(27);
  } else {
    for (const [offset, index] of [[28, 1], [29, 2], [30, 3]] as const) {
      if (group(offset)) attributes[`adc${index}`] = Number.parseInt(group(offset)!, 16);
    }
    attributes['battery'] = Number.parseInt(group(31)!, 16) / 100;
    attributes['power'] = Number.parseInt(group(32) ?? '0', 16) / 100;
  }
  const eventData = group(33);
  if (eventData) attributes[event === 37 ? 'driverUniqueId' : 'eventData'] = eventData;
  const protocol = Number(group(34) ?? 0);
  const fuel = group(35);
  if (fuel) attributes['fuel'] = Number.parseInt(fuel.slice(0, 2), 16) + Number.parseInt(fuel.slice(2), 16) / 100;
  for (const temperature of group(36)?.split('|') ?? []) {
    const index = Number.parseInt(temperature.slice(0, 2), 16);
    if (protocol >= 3) {
      attributes[`temp${index}`] = ((Number.parseInt(temperature.slice(2), 16) << 16) >> 16) / 100;
    } else {
      const whole = (Number.parseInt(temperature.slice(2, 4), 16) << 24) >> 24;
      attributes[`temp${index}`] = whole + (whole < 0 ? -0.01 : 0.01) * Number.parseInt(temperature.slice(4), 16);
    }
  }
  const time = utcDate(number(5), number(6), number(7), number(8), number(9), number(10));
  const latitude = number(3);
  const longitude = number(4);
  const message: DecodedMessage = { uniqueId: group(1), positions: [], statuses: [] };
  if (time === null || !isValidCoordinate(latitude, longitude)) {
    message.statuses.push({ deviceTime: null, attributes });
    return message;
  }
  message.positions.push({
    fixTime: time, deviceTime: time, valid: group(11) === 'A', latitude, longitude, altitude: number(17),
    speed: knotsFromKmh(number(14)), course: number(15), accuracy: 0, attributes,
  });
  return message;
}

/** A parameter id: one byte, or two (big-endian) when the first is 0xFE. */
function parameterId(reader: LittleEndianReader): number {
  if (reader.offset < reader.end && reader.buffer[reader.offset] === 0xfe) return reader.bytes(2).readUInt16BE(0);
  return reader.u8();
}

function binaryTime(seconds: number): Date {
  return new Date((SECONDS_1970_TO_2000 + seconds) * 1000);
}

function report(time: Date | null, latitude: number | undefined, longitude: number | undefined, valid: boolean, speed: number, course: number, altitude: number, attributes: Record<string, unknown>): DecodedPosition | DecodedStatus {
  if (time === null || latitude === undefined || longitude === undefined || !isValidCoordinate(latitude, longitude)) {
    return { deviceTime: time, attributes };
  }
  return { fixTime: time, deviceTime: time, valid, latitude, longitude, altitude, speed, course, accuracy: 0, attributes };
}

function add(message: DecodedMessage, decoded: DecodedPosition | DecodedStatus): void {
  if ('latitude' in decoded) message.positions.push(decoded);
  else message.statuses.push(decoded);
}

/** The header up to the binary part: `$$<flag><length>,<imei>,<command>,`. */
function binaryHeader(frame: Buffer): { flag: string; imei: string; start: number } {
  const first = frame.indexOf(0x2c);
  const imei = frame.toString('latin1', first + 1, first + 16);
  if (!/^\d{15}$/.test(imei)) throw new ProtocolError('meitrack: bad IMEI');
  return { flag: frame.toString('latin1', 2, 3), imei, start: first + 1 + 15 + 1 + 3 + 1 };
}

const CCC_RECORD_LENGTH = 52;

function decodeCcc(frame: Buffer): DecodedMessage {
  const { flag, imei, start } = binaryHeader(frame);
  const reader = new LittleEndianReader(frame, start, frame.length);
  reader.skip(2 + 2 + 4); // protocol version, remaining, count
  const message: DecodedMessage = { uniqueId: imei, positions: [], statuses: [] };
  let count = 0;
  while (frame.length - reader.offset >= CCC_RECORD_LENGTH) {
    const attributes: Record<string, unknown> = { event: reader.u8() };
    const latitude = reader.i32() / 1e6;
    const longitude = reader.i32() / 1e6;
    const time = binaryTime(reader.u32());
    const valid = reader.u8() === 1;
    attributes['sat'] = reader.u8();
    reader.skip(1); // rssi, kept with the cell
    const speed = knotsFromKmh(reader.u16());
    const course = reader.u16();
    attributes['hdop'] = reader.u16() / 10;
    const altitude = reader.u16();
    attributes['odometer'] = reader.u32();
    attributes['runtime'] = reader.u32();
    reader.skip(8); // cell
    attributes['status'] = reader.u16();
    attributes['adc1'] = reader.u16();
    attributes['battery'] = reader.u16() / 100;
    attributes['power'] = reader.u16();
    reader.skip(4); // geofence
    add(message, report(time, latitude, longitude, valid, speed, course, altitude, attributes));
    count += 1;
  }
  const text = `@@${flag}${27 + Math.floor(count / 10)},${imei},CCC,${count}*`;
  message.ack = answer(text);
  return message;
}

function decodeCceRecord(reader: LittleEndianReader): DecodedPosition | DecodedStatus {
  const attributes: Record<string, unknown> = {};
  let valid = false;
  let latitude: number | undefined;
  let longitude: number | undefined;
  let time: Date | null = null;
  let speed = 0;
  let course = 0;
  let altitude = 0;
  reader.skip(2); // index
  for (let count = reader.u8(); count > 0; count--) {
    const id = parameterId(reader);
    const value = reader.u8();
    if (id === 0x01) attributes['event'] = value;
    else if (id === 0x05) valid = value > 0;
    else if (id === 0x06) attributes['sat'] = value;
    else if (id === 0x07) attributes['rssi'] = value;
    else if (id === 0x14) attributes['output'] = value;
    else if (id === 0x15) attributes['input'] = value;
    else if (id === 0x47 && value > 0) attributes['lock'] = value === 2;
    else if (id === 0x97) attributes['throttle'] = value;
    else if (id === 0x9d) attributes['fuel'] = value;
    else if (id === 0xfe69) attributes['batteryLevel'] = value;
  }
  for (let count = reader.u8(); count > 0; count--) {
    const id = parameterId(reader);
    const raw = reader.u16();
    const signed = (raw << 16) >> 16;
    if (id === 0x08) speed = knotsFromKmh(raw);
    else if (id === 0x09) course = raw;
    else if (id === 0x0a) attributes['hdop'] = raw;
    else if (id === 0x0b) altitude = signed;
    else if (id === 0x16) attributes['adc1'] = raw / 100;
    else if (id === 0x17) attributes['adc2'] = raw / 100;
    else if (id === 0x19) attributes['battery'] = raw / 100;
    else if (id === 0x1a) attributes['power'] = raw / 100;
    else if (id === 0x29) attributes['fuel'] = raw / 100;
    else if (id === 0x40) attributes['event'] = raw;
    else if (id === 0x91 || id === 0x92) attributes['obdSpeed'] = raw;
    else if (id === 0x98) attributes['fuelUsed'] = raw;
    else if (id === 0x99) attributes['rpm'] = raw;
    else if (id === 0x9c) attributes['coolantTemp'] = raw;
    else if (id === 0x9f) attributes['temp1'] = raw;
    else if (id === 0xc9) attributes['fuelConsumption'] = raw;
  }
  for (let count = reader.u8(); count > 0; count--) {
    const id = parameterId(reader);
    const at = reader.offset;
    const raw = reader.u32();
    const signed = reader.buffer.readInt32LE(at);
    if (id === 0x02) latitude = signed / 1e6;
    else if (id === 0x03) longitude = signed / 1e6;
    else if (id === 0x04) time = binaryTime(raw);
    else if (id === 0x0c) attributes['odometer'] = raw;
    else if (id === 0x0d) attributes['runtime'] = raw;
    else if (id === 0x25) attributes['driverUniqueId'] = String(raw);
    else if (id === 0x9b) attributes['obdOdometer'] = raw;
    else if (id === 0xa0) attributes['fuelUsed'] = raw / 1000;
    else if (id === 0xa2) attributes['fuelConsumption'] = raw / 100;
    else if (id === 0xfef4) attributes['hours'] = raw * 60_000;
  }
  for (let count = reader.u8(); count > 0; count--) {
    const id = parameterId(reader);
    const length = reader.u8();
    const end = reader.offset + length;
    const item = new LittleEndianReader(reader.buffer, reader.offset, Math.min(end, reader.end));
    if (id >= 0x2a && id <= 0x31 && length >= 3) {
      item.skip(1); // label
      attributes[`temp${id - 0x2a}`] = item.i16() / 100;
    } else if (id === 0xfe31 && length >= 2) {
      item.skip(1);
      attributes['alarmType'] = item.u8();
    } else if (id === 0xfea8 && length >= 6) {
      for (let battery = 1; battery <= 3; battery++) {
        const present = item.u8() > 0;
        const level = item.u8();
        if (present) attributes[battery === 1 ? 'batteryLevel' : `battery${battery}Level`] = level;
      }
    } else if (id === 0xfe73 && length >= 3) {
      item.skip(1); // version
      const nameLength = item.u8();
      attributes['tagName'] = reader.buffer.toString('latin1', item.offset, item.offset + nameLength);
      item.skip(nameLength + 6);
      attributes['tagBattery'] = item.u8();
      attributes['tagTemp'] = item.i16() / 256;
      attributes['tagHumidity'] = item.i16() / 256;
    }
    reader.skip(length);
  }
  return report(time, latitude, longitude, valid, speed, course, altitude, attributes);
}

function decodeCce(frame: Buffer): DecodedMessage {
  const { imei, start } = binaryHeader(frame);
  const reader = new LittleEndianReader(frame, start, frame.length);
  reader.skip(4); // remaining cache
  const message: DecodedMessage = { uniqueId: imei, positions: [], statuses: [] };
  for (let count = reader.u16(); count > 0; count--) {
    const length = reader.u16();
    const end = reader.offset + length;
    if (end > frame.length) throw new ProtocolError('meitrack: record runs past the frame');
    add(message, decodeCceRecord(new LittleEndianReader(frame, reader.offset, end)));
    reader.offset = end;
  }
  return message;
}

function decode(frame: Buffer): DecodedMessage {
  const first = frame.indexOf(0x2c);
  const second = frame.indexOf(0x2c, first + 1);
  if (first < 0 || second < 0) throw new ProtocolError('meitrack: no command field');
  const imei = frame.toString('latin1', first + 1, second);
  const type = frame.toString('latin1', second + 1, second + 4);
  switch (type) {
    case 'CCC':
      return decodeCcc(frame);
    case 'CCE':
      return decodeCce(frame);
    case 'AAC':
      return { uniqueId: imei, positions: [], statuses: [], ack: answer(`@@z27,${imei},AAC,1*`) };
    case 'D82':
      return {
        uniqueId: imei, positions: [],
        statuses: [{ deviceTime: null, attributes: { result: frame.toString('latin1', second + 1, frame.lastIndexOf(0x2a)) } }],
      };
    case 'D00':
    case 'D03':
      return { uniqueId: imei, positions: [], statuses: [] }; // photo transfer: pictures are not kept
    default:
      return decodeText(frame.toString('latin1'));
  }
}

/** Traccar's instructions: `@@A<length>,<imei>,<content>*<checksum>\r\n`. */
export function meitrackCommand(imei: string, content: string): Buffer {
  const length = 1 + imei.length + 1 + content.length + 5;
  return answer(`@@A${String(length).padStart(2, '0')},${imei},${content}*`);
}

const MEITRACK_CONTENT: Partial<Record<string, string>> = {
  positionSingle: 'A10',
  engineStop: 'C01,0,12222',
  engineResume: 'C01,0,02222',
  alarmArm: 'C01,0,22122',
  alarmDisarm: 'C01,0,22022',
};

export const meitrackCommands = commandEncoder(
  ['custom', 'positionSingle', 'engineStop', 'engineResume', 'alarmArm', 'alarmDisarm'],
  (command: DeviceCommand): string => {
    const content = command.type === 'custom' ? String(command.attributes['data'] ?? '') : MEITRACK_CONTENT[command.type];
    if (content === undefined) throw new ProtocolError(`meitrack: ${command.type} is not supported`);
    if (content === '' || /[*\r\n]/.test(content)) throw new ProtocolError('meitrack: custom data must be one instruction without * or line breaks');
    return content;
  },
  (content, { uniqueId }) => meitrackCommand(uniqueId, content),
);

export const meitrackProtocol: TcpProtocol = {
  name: 'meitrack',
  splitFrames,
  decode: (frame: Buffer, _state: ConnectionState) => decode(frame),
  commands: meitrackCommands,
};
