// Suntech ST300/ST340/ST500/ST600 (`ST300STT;…`), ST4xx, ST9xx and the "universal" protocol (`STT;<id>;<mask>;…`)
// (Traccar's `suntech`, port 5011, TCP). Text reports end at a carriage return; fields are `;`-separated; dates
// `yyyymmdd;hh:mm:ss` UTC; speed km/h. The universal binary form (`0x81`/`0x82`, a 24-bit field mask) is decoded too.
// Suntech devices expect no answer.

import { commandEncoder } from '../command-types.ts';
import type { DeviceCommand } from '../command-types.ts';
import { addAlarm, isValidCoordinate, knotsFromKmh, utcDate } from '../decode-helpers.ts';
import type { ConnectionState, DecodedMessage, DecodedPosition, DecodedStatus, TcpProtocol } from '../types.ts';
import { ProtocolError } from '../types.ts';

const MAX_FRAME_LENGTH = 4096;
const CR = 0x0d;
const LF = 0x0a;
const TEXT_STARTS = new Set([...'SABRUC-'].map((letter) => letter.charCodeAt(0)));
const ZIP = 0x02;

function splitFrames(buffer: Buffer): { frames: Buffer[]; consumed: number } {
  const frames: Buffer[] = [];
  let offset = 0;
  while (offset < buffer.length) {
    const first = buffer[offset]!;
    if (first === CR || first === LF) {
      offset += 1;
      continue;
    }
    let end: number;
    if (first === ZIP) {
      // The compressed report: 0x02, a 2-byte length, the body, a footer byte.
      if (buffer.length - offset < 3) break;
      end = offset + 3 + buffer.readUInt16BE(offset + 1) + 1;
      if (buffer.length < end) break;
      frames.push(buffer.subarray(offset, end));
      offset = end;
      continue;
    }
    if (buffer.length - offset > 1 && buffer[offset + 1] === 0 && (first === 0x81 || first === 0x82)) {
      if (buffer.length - offset < 3) break;
      end = offset + 3 + buffer.readUInt16BE(offset + 1);
      if (buffer.length < end) break;
      frames.push(buffer.subarray(offset, end));
      offset = end;
      continue;
    }
    if (!TEXT_STARTS.has(first)) {
      if (frames.length > 0) break;
      throw new ProtocolError(`suntech: garbage byte 0x${first.toString(16)} where a report was expected`);
    }
    // A report ends at a carriage return that no line feed follows (replies may hold CRLF line breaks).
    end = -1;
    const limit = Math.min(buffer.length, offset + MAX_FRAME_LENGTH);
    for (let index = offset; index < limit; index++) {
      if (buffer[index] === CR && buffer[index + 1] !== LF) {
        end = index;
        break;
      }
    }
    if (end < 0) {
      if (buffer.length - offset >= MAX_FRAME_LENGTH) throw new ProtocolError(`suntech: no report end within ${MAX_FRAME_LENGTH} bytes`);
      break;
    }
    frames.push(buffer.subarray(offset, end + 1));
    offset = end + 1;
  }
  return { frames, consumed: offset };
}

/** The report's fields in order; a missing or malformed one is a ProtocolError naming it. */
class Fields {
  readonly values: string[];
  index: number;

  constructor(values: string[], index = 0) {
    this.values = values;
    this.index = index;
  }

  get remaining(): number {
    return this.values.length - this.index;
  }

  text(what: string): string {
    const value = this.values[this.index++];
    if (value === undefined) throw new ProtocolError(`suntech: missing ${what}`);
    return value;
  }

  number(what: string): number {
    const text = this.text(what).trim();
    if (!/^[+-]?\d+(?:\.\d*)?$/.test(text)) throw new ProtocolError(`suntech: ${what} is not a number`);
    return Number(text);
  }

  integer(what: string, radix = 10): number {
    const text = this.text(what).trim();
    if (!(radix === 16 ? /^[0-9a-fA-F]{1,8}$/ : /^[+-]?\d{1,15}$/).test(text)) throw new ProtocolError(`suntech: ${what} is not an integer`);
    return Number.parseInt(text, radix);
  }

  /** `lat;lon;km/h;course` in decimal degrees; the speed in knots. */
  motion(): { latitude: number; longitude: number; speed: number; course: number } {
    return { latitude: this.number('latitude'), longitude: this.number('longitude'), speed: knotsFromKmh(this.number('speed')), course: this.number('course') };
  }

  skip(count = 1): void {
    this.index += count;
  }

  /** `yyyymmdd` and `hh:mm:ss`, UTC. */
  time(): Date | null {
    const date = this.text('date');
    const time = this.text('time');
    const dateMatch = /^(\d{4})(\d\d)(\d\d)$/.exec(date);
    const timeMatch = /^(\d\d):(\d\d):(\d\d)$/.exec(time);
    if (!dateMatch || !timeMatch) throw new ProtocolError('suntech: malformed date or time');
    return utcDate(Number(dateMatch[1]), Number(dateMatch[2]), Number(dateMatch[3]), Number(timeMatch[1]), Number(timeMatch[2]), Number(timeMatch[3]));
  }
}

/** ST9xx layouts: a date where the firmware would be, a decimal coordinate where the cell would be. */
const ST9_DATE = /^\d{8}$/;
const ST9_DECIMAL = /^[+-]?\d+\.\d+$/;

const EMERGENCIES: Record<number, string> = { 1: 'sos', 2: 'parking', 3: 'powerCut', 5: 'door', 6: 'door', 7: 'movement', 8: 'vibration' };
const ALERTS: Record<number, string> = {
  1: 'overspeed', 5: 'geofenceExit', 6: 'geofenceEnter', 14: 'lowBattery', 15: 'vibration', 16: 'accident', 40: 'powerRestored',
  41: 'powerCut', 42: 'sos', 46: 'hardAcceleration', 47: 'hardBraking', 50: 'jamming', 132: 'door',
};

interface Fix {
  time: Date | null;
  latitude?: number;
  longitude?: number;
  speed: number;
  course: number;
  valid: boolean;
  attributes: Record<string, unknown>;
}

function toReport(fix: Fix): DecodedPosition | DecodedStatus {
  const { time, latitude, longitude } = fix;
  if (time === null || latitude === undefined || longitude === undefined || !isValidCoordinate(latitude, longitude)) {
    return { deviceTime: time, attributes: fix.attributes };
  }
  return {
    fixTime: time, deviceTime: time, valid: fix.valid, latitude, longitude, altitude: 0, speed: fix.speed, course: fix.course,
    accuracy: 0, attributes: fix.attributes,
  };
}

function message(uniqueId: string, report: DecodedPosition | DecodedStatus): DecodedMessage {
  return 'latitude' in report
    ? { uniqueId, positions: [report], statuses: [] }
    : { uniqueId, positions: [], statuses: [report] };
}

/** UEX serial data: fuel sensors, driver id, temperatures; returns after the checksum field. */
function readSerialData(fields: Fields, attributes: Record<string, unknown>): void {
  let remaining = fields.integer('serial length');
  let totalFuel = 0;
  while (remaining > 0 && fields.remaining > 0) {
    const attribute = fields.text('serial data');
    if (attribute.startsWith('CabAVL')) {
      const data = attribute.split(',');
      for (const [index, key] of [[2, 'fuel1'], [3, 'fuel2']] as const) {
        const fuel = Number(data[index]);
        if (fuel > 0) {
          totalFuel += fuel;
          attributes[key] = fuel;
        }
      }
    } else if (attribute.startsWith('GTSL')) {
      const driver = attribute.split('|')[4];
      if (driver) attributes['driverUniqueId'] = driver;
    } else if (attribute.includes('=')) {
      const [key = '', raw = ''] = attribute.split('=');
      const value = Number.parseInt(raw.trim().split('.')[0]!, 16);
      if (Number.isFinite(value)) {
        if (key[0] === 't') attributes[`temp${key[2] ?? ''}`] = value;
        else if (key[0] === 'N') {
          totalFuel += value;
          attributes[`fuel${key[2] ?? ''}`] = value;
        } else if (key[0] === 'Q') attributes['drivingQuality'] = value;
      }
    } else {
      attributes['serial'] = attribute.trim();
    }
    remaining -= attribute.length + 1;
  }
  if (totalFuel > 0) attributes['fuel'] = totalFuel;
  fields.skip(); // checksum
}

/** ST300/ST340/ST500/ST600: `<model><type>;<id>;[model;]<firmware>;<date>;<time>;…`. */
function decode2356(protocol: string, values: string[]): DecodedMessage {
  const fields = new Fields(values, 1);
  const type = values[0]!.slice(5);
  const result = values[1] === 'Res';
  if (result) fields.skip();
  const uniqueId = fields.text('id');
  if (result) return message(uniqueId, { deviceTime: null, attributes: { type, result: values.slice(fields.index).join(';') } });
  if (!['STT', 'EMG', 'EVT', 'ALT', 'UEX'].includes(type)) return { uniqueId, positions: [], statuses: [] };
  if (protocol.startsWith('ST3') || protocol === 'ST500' || protocol === 'ST600') fields.skip(); // model
  const attributes: Record<string, unknown> = { type, versionFw: fields.text('firmware') };
  const time = fields.time();
  if (protocol !== 'ST500') {
    fields.skip(); // cell id
    if (protocol === 'ST600') fields.skip(4); // mcc, mnc, lac, rssi
  }
  const { latitude, longitude, speed, course } = fields.motion();
  attributes['sat'] = fields.integer('satellites');
  const valid = fields.text('fix') === '1';
  attributes['odometer'] = fields.integer('odometer');
  attributes['power'] = fields.number('power');
  const io = fields.text('io');
  if (io.length >= 6) {
    attributes['ignition'] = io[0] === '1';
    for (const [index, key] of [[1, 'in1'], [2, 'in2'], [3, 'in3'], [4, 'out1'], [5, 'out2']] as const) attributes[key] = io[index] === '1';
  }
  if (type === 'STT') {
    attributes['status'] = fields.integer('status');
    attributes['index'] = fields.integer('index');
  } else if (type === 'EMG') addAlarm(attributes, EMERGENCIES[fields.integer('emergency')]);
  else if (type === 'EVT') attributes['event'] = fields.integer('event');
  else if (type === 'ALT') addAlarm(attributes, ALERTS[fields.integer('alert')]);
  else readSerialData(fields, attributes);
  return message(uniqueId, toReport({ time, latitude, longitude, speed, course, valid, attributes }));
}

/** ST4xx: cell towers first, then the fix (empty when there is none). */
function decode4(values: string[]): DecodedMessage {
  const fields = new Fields(values, 1);
  const type = values[0]!.slice(5);
  const uniqueId = fields.text('id');
  if (type !== 'STT' && type !== 'ALT') return { uniqueId, positions: [], statuses: [] };
  const attributes: Record<string, unknown> = { type, versionFw: fields.text('firmware') };
  const model = fields.integer('model');
  if (model === 41) fields.skip(); // variant
  fields.skip(7 * 6); // seven cells: id, mcc, mnc, lac and rssi, timing advance
  attributes['battery'] = fields.number('battery');
  if (fields.text('mode') === '0') attributes['archive'] = true;
  attributes['index'] = fields.integer('index');
  attributes['status'] = fields.integer('status');
  if (values[fields.index]?.length === 3) fields.skip(); // collaborative network
  if (model === 41) {
    fields.skip(2); // collaborative network, temperature
    attributes['motion'] = fields.integer('motion') === 2;
  }
  if (values[fields.index] === '' || values[fields.index] === undefined) return message(uniqueId, { deviceTime: null, attributes });
  const time = fields.time();
  const { latitude, longitude, speed, course } = fields.motion();
  attributes['sat'] = fields.integer('satellites');
  const valid = fields.text('fix') === '1';
  return message(uniqueId, toReport({ time, latitude, longitude, speed, course, valid, attributes }));
}

/**
 * ST9xx: `ST9…;Location|Emergency|Alert;<id>;<firmware>;<date>;<time>;<lat>;<lon>;<speed>;<course>;<fix>`. A second
 * layout (Traccar's `suntech.protocolType` 1, ST910 firmwares from 2016 on) adds the serving cell after the time and
 * the odometer after the fix, and leaves the firmware out of alerts. It is told apart by its fields, so no setting
 * is needed: the field after the id is the date where the firmware is missing (a firmware is 3 digits, a date 8),
 * and the field after the time is the cell (hex, no decimal point) where a latitude would be (always with one).
 */
function decode9(values: string[]): DecodedMessage {
  const fields = new Fields(values, 1);
  const type = fields.text('type');
  if (!['Location', 'Emergency', 'Alert'].includes(type)) return { positions: [], statuses: [] };
  const uniqueId = fields.text('id');
  const attributes: Record<string, unknown> = {};
  if (type !== 'Location') addAlarm(attributes, 'general');
  if (!ST9_DATE.test(values[fields.index] ?? '')) attributes['versionFw'] = fields.text('firmware');
  const time = fields.time();
  const withCell = !ST9_DECIMAL.test(values[fields.index] ?? '');
  if (withCell) fields.skip(); // serving cell
  const { latitude, longitude, speed, course } = fields.motion();
  const valid = fields.text('fix') === '1';
  if (withCell) attributes['odometer'] = fields.integer('odometer');
  return message(uniqueId, toReport({ time, latitude, longitude, speed, course, valid, attributes }));
}

function isSet(mask: number, bit: number): boolean {
  return ((mask >>> bit) & 1) === 1;
}

/** The universal text protocol: `<type>;<id>;<mask hex>;…`, each field present when its mask bit is set. */
function decodeUniversal(values: string[]): DecodedMessage {
  const fields = new Fields(values, 1);
  const type = values[0]!;
  if (!['STT', 'ALT', 'BLE', 'RES', 'UEX'].includes(type)) return { positions: [], statuses: [] };
  const uniqueId = fields.text('id');
  const attributes: Record<string, unknown> = { type };
  if (type === 'RES') return message(uniqueId, { deviceTime: null, attributes: { type, result: values.slice(fields.index).join(';') } });
  const mask = type === 'BLE' ? 0b1100000110110 : fields.integer('mask', 16);
  if (isSet(mask, 1)) fields.skip(); // model
  if (isSet(mask, 2)) attributes['versionFw'] = fields.text('firmware');
  if (isSet(mask, 3) && fields.text('mode') === '0') attributes['archive'] = true;
  let time: Date | null = null;
  if (isSet(mask, 4) && isSet(mask, 5)) time = fields.time();
  for (const bit of [6, 7, 8, 9]) if (isSet(mask, bit)) fields.skip(); // cell id, mcc, mnc, lac
  if (isSet(mask, 10)) attributes['rssi'] = fields.integer('rssi');
  const latitude = isSet(mask, 11) ? fields.number('latitude') : undefined;
  const longitude = isSet(mask, 12) ? fields.number('longitude') : undefined;
  let speed = 0;
  let course = 0;
  let valid = false;
  if (type === 'BLE') {
    valid = true;
    const count = fields.integer('tag count');
    for (let tag = 1; tag <= count; tag++) {
      attributes[`tag${tag}Rssi`] = fields.integer('tag rssi');
      fields.skip(2);
      attributes[`tag${tag}Id`] = fields.text('tag id');
      attributes[`tag${tag}Samples`] = fields.integer('tag samples');
      attributes[`tag${tag}Major`] = fields.integer('tag major');
      attributes[`tag${tag}Minor`] = fields.integer('tag minor');
    }
    return message(uniqueId, toReport({ time, latitude, longitude, speed, course, valid, attributes }));
  }
  if (isSet(mask, 13)) speed = knotsFromKmh(fields.number('speed'));
  if (isSet(mask, 14)) course = fields.number('course');
  if (isSet(mask, 15)) attributes['sat'] = fields.integer('satellites');
  if (isSet(mask, 16)) valid = fields.text('fix') === '1';
  if (isSet(mask, 17)) {
    const input = fields.integer('input');
    attributes['ignition'] = isSet(input, 0);
    attributes['input'] = input;
  }
  if (isSet(mask, 18)) attributes['output'] = fields.integer('output');
  if (type === 'ALT') {
    if (isSet(mask, 19)) addAlarm(attributes, ALERTS[fields.integer('alert')]);
    if (isSet(mask, 20)) attributes['alertModifier'] = fields.text('alert modifier');
    if (isSet(mask, 21)) attributes['alertData'] = fields.text('alert data');
  } else if (type === 'UEX') {
    readSerialData(fields, attributes);
  } else {
    if (isSet(mask, 19)) attributes['mode'] = fields.integer('mode');
    if (isSet(mask, 20)) attributes['reason'] = fields.integer('reason');
    if (isSet(mask, 21)) attributes['index'] = fields.integer('index');
  }
  if (isSet(mask, 22)) fields.skip(); // reserved
  if (isSet(mask, 23) && type !== 'UEX') {
    const assignMask = fields.integer('assign mask', 16);
    for (let bit = 0; bit <= 30; bit++) if (isSet(assignMask, bit)) attributes[`io${bit + 1}`] = fields.text('assigned value');
  }
  for (let assign = 1; fields.remaining > 0; assign++) {
    const value = fields.text('assign');
    if (value !== '') attributes[`assign${assign}`] = value;
  }
  return message(uniqueId, toReport({ time, latitude, longitude, speed, course, valid, attributes }));
}

/** The universal binary form: type, length, id in BCD (5 bytes), a 24-bit mask, then the masked fields. */
function decodeBinary(frame: Buffer): DecodedMessage {
  if (frame.length < 11) throw new ProtocolError('suntech: binary report too short');
  let offset = 3;
  const take = (length: number) => {
    if (offset + length > frame.length) throw new ProtocolError('suntech: truncated binary report');
    const at = offset;
    offset += length;
    return at;
  };
  const type = frame[0]!;
  const uniqueId = frame.subarray(take(5), offset).toString('hex');
  const mask = frame.readUIntBE(take(3), 3);
  const u8 = () => frame.readUInt8(take(1));
  const u16 = () => frame.readUInt16BE(take(2));
  // A sign bit and a 31-bit magnitude.
  const signedMagnitude = () => {
    const value = frame.readUInt32BE(take(4));
    return (value & 0x80000000 ? -1 : 1) * (value & 0x7fffffff);
  };
  const attributes: Record<string, unknown> = {};
  if (isSet(mask, 1)) take(1); // model
  if (isSet(mask, 2)) attributes['versionFw'] = `${u8()}.${u8()}.${u8()}`;
  if (isSet(mask, 3) && u8() === 0) attributes['archive'] = true;
  let time: Date | null = null;
  if (isSet(mask, 4) && isSet(mask, 5)) time = utcDate(u8(), u8(), u8(), u8(), u8(), u8());
  if (isSet(mask, 6)) take(4);
  for (const bit of [7, 8, 9]) if (isSet(mask, bit)) take(2);
  if (isSet(mask, 10)) attributes['rssi'] = u8();
  const latitude = isSet(mask, 11) ? signedMagnitude() / 1e6 : undefined;
  const longitude = isSet(mask, 12) ? signedMagnitude() / 1e6 : undefined;
  const speed = isSet(mask, 13) ? knotsFromKmh(u16() / 100) : 0;
  const course = isSet(mask, 14) ? u16() / 100 : 0;
  if (isSet(mask, 15)) attributes['sat'] = u8();
  const valid = isSet(mask, 16) ? u8() > 0 : false;
  if (isSet(mask, 17)) {
    const input = u8();
    attributes['ignition'] = isSet(input, 0);
    attributes['input'] = input;
  }
  if (isSet(mask, 18)) attributes['output'] = u8();
  let alertId = 0;
  if (isSet(mask, 19)) {
    alertId = u8();
    if (type === 0x82) addAlarm(attributes, ALERTS[alertId]);
  }
  if (isSet(mask, 20)) take(2);
  if (isSet(mask, 21) && alertId === 59) attributes['driverUniqueId'] = frame.subarray(take(8), offset).toString('hex');
  return message(uniqueId, toReport({ time, latitude, longitude, speed, course, valid, attributes }));
}

/** Two BCD digits per byte. */
function bcd(bytes: Buffer): number {
  const digits = bytes.toString('hex');
  if (!/^\d+$/.test(digits)) throw new ProtocolError('suntech: bad BCD field');
  return Number(digits);
}

/** The compressed report (type 0x10): BCD id, date, coordinates as whole degrees and BCD millionths, hundredths. */
function decodeZip(frame: Buffer): DecodedMessage {
  if (frame.length < 46 || frame[3] !== 0x10) return { positions: [], statuses: [] };
  const uniqueId = frame.subarray(4, 9).toString('hex').slice(0, 9);
  let offset = 12; // model, firmware version
  const u8 = () => frame[offset++]!;
  const time = utcDate(u8(), u8(), u8(), u8(), u8(), u8());
  offset += 3; // lac, cell
  const latitude = u8() + bcd(frame.subarray(offset, (offset += 3))) / 1e6;
  const longitude = u8() + bcd(frame.subarray(offset, (offset += 3))) / 1e6;
  const speed = frame.readUInt16BE(offset) + bcd(frame.subarray(offset + 2, offset + 3)) / 100;
  const course = frame.readUInt16BE(offset + 3) + bcd(frame.subarray(offset + 5, offset + 6)) / 100;
  offset += 6;
  const flags = u8();
  const attributes: Record<string, unknown> = { odometer: frame.readUInt32BE(offset) };
  offset += 4;
  attributes['power'] = u8() + bcd(frame.subarray(offset, (offset += 1))) / 100;
  const io = u8();
  attributes['ignition'] = isSet(io, 0);
  for (let input = 1; input <= 3; input++) attributes[`in${input}`] = isSet(io, input);
  for (let output = 1; output <= 2; output++) attributes[`out${output}`] = isSet(io, output + 3);
  attributes['event'] = u8();
  return message(uniqueId, toReport({
    time, latitude: isSet(flags, 6) ? -latitude : latitude, longitude: isSet(flags, 5) ? -longitude : longitude,
    speed, course, valid: isSet(flags, 7), attributes,
  }));
}

function decode(frame: Buffer): DecodedMessage {
  if (frame[0] === ZIP) return decodeZip(frame);
  if (frame[1] === 0 && (frame[0] === 0x81 || frame[0] === 0x82)) return decodeBinary(frame);
  const values = frame.toString('latin1').replace(/\r$/, '').split(';');
  const prefix = values[0]!;
  if (prefix === 'CRR') return { positions: [], statuses: [] }; // crash reports (acceleration traces) are not kept
  if (prefix.length < 5) return decodeUniversal(values);
  if (prefix.endsWith('HTE')) {
    const uniqueId = values[1] ?? '';
    return message(uniqueId, { deviceTime: null, attributes: { driverUniqueId: values[values.length - 1] } });
  }
  if (prefix.startsWith('ST9')) return decode9(values);
  if (prefix.startsWith('ST4')) return decode4(values);
  if (prefix.startsWith('S')) return decode2356(prefix.slice(0, 5), values);
  return { positions: [], statuses: [] };
}

/**
 * Traccar's legacy Suntech commands, `SA200CMD;<id>;02;<action>`: Traccar switches to the universal form or another
 * model prefix after seeing the device's own reports on the live connection, which an encoder does not see, and
 * sends this form otherwise.
 */
const SUNTECH_ACTIONS: Partial<Record<string, string>> = {
  rebootDevice: 'Reboot',
  positionSingle: 'StatusReq',
  engineStop: 'Enable1',
  engineResume: 'Disable1',
  alarmArm: 'Enable2',
  alarmDisarm: 'Disable2',
};

export const suntechCommands = commandEncoder(
  ['rebootDevice', 'positionSingle', 'engineStop', 'engineResume', 'alarmArm', 'alarmDisarm', 'outputControl'],
  (command: DeviceCommand): string => {
    if (command.type === 'outputControl') {
      const index = String(command.attributes['index'] ?? '');
      const data = String(command.attributes['data'] ?? '');
      if (!/^\d{1,2}$/.test(index) || !/^[01]$/.test(data)) throw new ProtocolError('suntech: output index must be a number and data 0 or 1');
      return `${data === '1' ? 'Enable' : 'Disable'}${index}`;
    }
    const action = SUNTECH_ACTIONS[command.type];
    if (action === undefined) throw new ProtocolError(`suntech: ${command.type} is not supported`);
    return action;
  },
  (action, { uniqueId }) => Buffer.from(`SA200CMD;${uniqueId};02;${action}\r`, 'latin1'),
);

export const suntechProtocol: TcpProtocol = {
  name: 'suntech',
  splitFrames,
  decode: (frame: Buffer, _state: ConnectionState) => decode(frame),
  commands: suntechCommands,
};
