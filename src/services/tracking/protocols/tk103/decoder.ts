// TK103 and its clones (Traccar's `tk103`, port 5002, TCP and UDP): `(` + 12-character id + 4-character command +
// data + `)`, e.g. `(088047365460BR00151024A2555.3531S02855.3329E004.7055148276.1701000000L00009AA3)`, or the
// comma-separated form `(352606090042050,BP05,240414,A,4527.3513N,00909.9758E,4.80,112825,155.49)`. Handshake BP00
// is answered `(<id>AP01HSO)`, BP05 `(<id>AP05)`. Free text between `$` signs may hold a `)`.

import { ByteReader } from '../byte-reader.ts';
import { commandEncoder } from '../command-types.ts';
import type { DeviceCommand } from '../command-types.ts';
import { addAlarm, isValidCoordinate, knotsFromKmh, utcDate } from '../decode-helpers.ts';
import { LittleEndianReader } from '../little-endian-reader.ts';
import { splitTextFrames } from '../text-frames.ts';
import type { ConnectionState, DecodedMessage, DecodedStatus, TcpProtocol } from '../types.ts';
import { ProtocolError } from '../types.ts';

const OPEN = 0x28; // '('
const CLOSE = 0x29; // ')'
const DOLLAR = 0x24; // '$'
const MAX_FRAME_LENGTH = 1024; // Traccar discards an unterminated frame beyond this

/** The frame ends at the first ')' outside a $...$ free text. */
function frameEnd(buffer: Buffer, start: number, limit: number): number {
  let inText = false;
  for (let index = start + 1; index < limit; index++) {
    const byte = buffer[index]!;
    if (byte === DOLLAR) inText = !inText;
    else if (byte === CLOSE && !inText) return index;
  }
  return -1;
}

function splitFrames(buffer: Buffer): { frames: Buffer[]; consumed: number } {
  return splitTextFrames(buffer, (byte) => byte === OPEN, frameEnd, MAX_FRAME_LENGTH, 'tk103');
}

// Traccar's patterns; `.` spans line breaks there (DOTALL), hence the s flag.
const LOCATION = new RegExp(
  '^\\(?(?:(.{12})|([^,]+),)(.{4}),?(?:(\\d*)|,ALARM,(\\d),\\d+,)(\\d\\d)(\\d\\d)(\\d\\d),?([AV]),?' +
  ' *(\\d*)(\\d\\d\\.\\d+)([NS]),? *(\\d*)(\\d\\d\\.\\d+)([EW]),?([ \\d.]{1,5})(?:\\d*,)?(\\d\\d)(\\d\\d)(\\d\\d),?' +
  '(?:(?:([ \\d.]{6})|(\\d\\d)),?([01])([01])([0-9a-fA-F])([0-9a-fA-F])([0-9a-fA-F])([0-9a-fA-F]{3})L([0-9a-fA-F]+)|(\\d+\\.\\d+))' +
  '.*([+-]\\d{3}\\.\\d)?\\)?$',
  's',
);
const BATTERY = /^\(?(\d+),ZC20,(\d\d)(\d\d)(\d\d),(\d\d)(\d\d)(\d\d),(\d+),(\d+),(\d+),\d+.*$/s;
const CELLS = /^\((\d{12}).{4}(?:\d{15})?,(.+),([0-9a-fA-F]{8})\)$/s;
const NETWORK = /^\(?(\d{12})BZ00,(\d+),(\d+),([0-9a-fA-F]+),([0-9a-fA-F]+),.*$/s;
const LBS_WIFI = /^\(?(\d+),(.{4}),(\d+),(\d+),(\d+),(\d+),(\d+),((?:(?:[0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}\*[-+]?\d+\*\d+,)*)(\d\d)(\d\d)(\d\d),(\d\d)(\d\d)(\d\d).*$/s;
const COMMAND_RESULT = /^\(?(\d+),.{4},(\d\d)(\d\d)(\d\d),(\d\d)(\d\d)(\d\d),\$([\s\S]*?)(?:\$|$).*$/s;
const VIN = /^\((\d+)BV00(.{17})\)$/s;

const BO01_ALARMS = [undefined, 'accident', 'sos', 'vibration', 'lowspeed', 'overspeed', 'geofenceExit'];
const BQ81_ALARMS = ['lowBattery', 'overspeed', 'idle', 'hardAcceleration', 'hardBraking', 'temperature'];

// The command's meaning: an alarm or the ignition (ZC/DW families of the alarm and status reports).
function readType(type: string, data: string | undefined, attributes: Record<string, unknown>): void {
  const groups: [string[], (attributes: Record<string, unknown>) => void][] = [
    [['ZC11', 'DW31', 'DW51'], (into) => addAlarm(into, 'movement')],
    [['ZC12', 'DW32', 'DW52'], (into) => addAlarm(into, 'lowBattery')],
    [['ZC13', 'DW33', 'DW53'], (into) => addAlarm(into, 'powerCut')],
    [['ZC15', 'DW35', 'DW55', 'ZC29', 'DW42', 'DW62'], (into) => { into['ignition'] = true; }],
    [['ZC16', 'DW36', 'DW56'], (into) => { into['ignition'] = false; }],
    [['ZC17', 'DW37', 'DW57'], (into) => addAlarm(into, 'removing')],
    [['ZC25', 'DW3E', 'DW5E'], (into) => addAlarm(into, 'sos')],
    [['ZC26', 'DW3F', 'DW5F'], (into) => addAlarm(into, 'tampering')],
    [['ZC27', 'DW40', 'DW60'], (into) => addAlarm(into, 'lowPower')],
  ];
  if (type === 'BQ81') addAlarm(attributes, BQ81_ALARMS[Number(data)]);
  else if (type === 'BO01') addAlarm(attributes, BO01_ALARMS[Number(data?.charAt(0))]);
  else groups.find(([types]) => types.includes(type))?.[1](attributes);
}

/**
 * Traccar builds TK103 location times with a lenient calendar: a month or day past its end rolls over into the next
 * (month 18 of 2006 is June 2007), and devices in the field rely on it.
 */
function lenientDate(year: number, month: number, day: number, hour: number, minute: number, second: number): Date | null {
  if (month < 1 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  return new Date(Date.UTC(2000 + year, month - 1, day, hour, minute, second));
}

function dmyHms(match: RegExpExecArray, first: number): Date | null {
  const [day, month, year, hour, minute, second] = match.slice(first, first + 6).map(Number) as [number, number, number, number, number, number];
  return utcDate(year, month, day, hour, minute, second);
}

const BATTERY_LEVELS: Record<number, number> = { 6: 100, 5: 80, 4: 50, 3: 20, 2: 10 };

function status(message: DecodedMessage, uniqueId: string, deviceTime: Date | null, attributes: Record<string, unknown>): DecodedMessage {
  const report: DecodedStatus = { deviceTime, attributes };
  return { ...message, uniqueId, statuses: [report] };
}

function decodeOther(sentence: string, message: DecodedMessage): DecodedMessage | null {
  let match: RegExpExecArray | null;
  if (sentence.indexOf('{') > 0 && sentence.indexOf('}') > 0) {
    match = CELLS.exec(sentence);
    return match ? status(message, match[1]!, null, { odometer: Number.parseInt(match[3]!, 16) }) : message;
  }
  if (sentence.includes('ZC20')) {
    match = BATTERY.exec(sentence);
    if (!match) return message;
    const attributes: Record<string, unknown> = {};
    const [level, battery, power] = [Number(match[8]), Number(match[9]), Number(match[10])];
    if (level !== 255 && BATTERY_LEVELS[level] !== undefined) attributes['batteryLevel'] = BATTERY_LEVELS[level];
    if (battery !== 65535) attributes['battery'] = battery / 100;
    if (power !== 65535) attributes['power'] = power / 10;
    return status(message, match[1]!, dmyHms(match, 2), attributes);
  }
  if (sentence.includes('BZ00')) {
    match = NETWORK.exec(sentence);
    return match ? status(message, match[1]!, null, {}) : message;
  }
  if (sentence.includes('ZC03')) {
    match = COMMAND_RESULT.exec(sentence);
    return match ? status(message, match[1]!, dmyHms(match, 2), { result: match[8] }) : message;
  }
  if (sentence.includes('DW5')) {
    match = LBS_WIFI.exec(sentence);
    if (!match) return message;
    const attributes: Record<string, unknown> = {};
    readType(match[2]!, '0', attributes);
    return status(message, match[1]!, dmyHms(match, 9), attributes);
  }
  if (sentence.includes('BV00')) {
    match = VIN.exec(sentence);
    return match ? status(message, match[1]!, null, { vin: match[2] }) : message;
  }
  return null;
}

const HEX = /^(?:[0-9a-fA-F]{2})*$/;

function hexBytes(text: string): Buffer {
  if (!HEX.test(text)) throw new ProtocolError('tk103: battery report data is not hex');
  return Buffer.from(text, 'hex');
}

/** Temperatures come as degrees Celsius plus 40. */
const celsius = (value: number) => value - 40;

/**
 * A battery management system's report: BS50, one block of little-endian fields (cell voltages, current, charge,
 * protections, temperatures, capacities); BS51, `<key>:<hex>` pairs of big-endian fields, of which 90 (pack voltages,
 * current offset by 30000, state of charge), 91 (extreme cell voltages), 92 (extreme temperatures) and 96 (cell
 * temperatures) are read, as Traccar does. Traccar reads BS51 little-endian; its published frame reads sensibly only
 * big-endian (3.816 V cells, 26 °C, 0 A at rest), so we read it so.
 */
function decodeBms(sentence: string): Record<string, unknown> {
  const attributes: Record<string, unknown> = {};
  const payload = sentence.slice(1 + 12 + 4, -1);
  if (sentence.startsWith('BS50', 13)) {
    const reader = new LittleEndianReader(hexBytes(payload));
    reader.skip(3); // header
    const cells = reader.u8();
    for (let cell = 1; cell <= 24; cell++) {
      const voltage = reader.u16();
      if (cell <= cells) attributes[`battery${cell}`] = voltage / 1000;
    }
    attributes['charge'] = reader.u8() === 0;
    attributes['current'] = reader.u16() / 10;
    attributes['battery'] = reader.u16() / 100;
    attributes['batteryLevel'] = reader.u8();
    attributes['batteryOverheat'] = reader.u8() > 0;
    attributes['chargeProtection'] = reader.u8() > 0;
    attributes['dischargeProtection'] = reader.u8() > 0;
    reader.skip(2); // drop line, balanced
    attributes['cycles'] = reader.u16();
    attributes['faultAlarm'] = reader.u8();
    reader.skip(6);
    const sensors = reader.u8();
    attributes['powerTemp'] = celsius(reader.u8());
    attributes['equilibriumTemp'] = celsius(reader.u8());
    for (let sensor = 1; sensor <= 7; sensor++) {
      const temperature = celsius(reader.u8());
      if (sensor <= sensors) attributes[`batteryTemp${sensor}`] = temperature;
    }
    attributes['calibrationCapacity'] = reader.u16() / 100;
    attributes['dischargeCapacity'] = reader.u32();
    return attributes;
  }
  for (const pair of payload.split(',')) {
    const [key = '', value = ''] = pair.split(':');
    const reader = new ByteReader(hexBytes(value));
    switch (Number.parseInt(key, 16)) {
      case 0x90:
        attributes['cumulativeVoltage'] = reader.u16() / 10;
        attributes['gatherVoltage'] = reader.u16() / 10;
        attributes['current'] = (reader.u16() - 30000) / 10;
        attributes['soc'] = reader.u16() / 10;
        break;
      case 0x91:
        attributes['maxCellVoltage'] = reader.u16() / 1000;
        attributes['maxCellVoltageCount'] = reader.u8();
        attributes['minCellVoltage'] = reader.u16() / 1000;
        attributes['minCellVoltageCount'] = reader.u8();
        break;
      case 0x92:
        attributes['maxTemp'] = celsius(reader.u8());
        attributes['maxTempCount'] = reader.u8();
        attributes['minTemp'] = celsius(reader.u8());
        attributes['minTempCount'] = reader.u8();
        break;
      case 0x96:
        reader.skip(1); // frame
        for (let sensor = 1; reader.remaining > 0; sensor++) attributes[`cellTemp${sensor}`] = celsius(reader.u8());
        break;
    }
  }
  return attributes;
}

function readIo(match: RegExpExecArray, attributes: Record<string, unknown>): void {
  attributes['charge'] = match[22] === '0';
  attributes['ignition'] = match[23] === '1';
  const mask1 = Number.parseInt(match[24]!, 16);
  attributes['in2'] = mask1 & 1;
  attributes['panic'] = (mask1 >> 1) & 1;
  attributes['out2'] = (mask1 >> 2) & 1;
  if (mask1 & 8) attributes['blocked'] = 1;
  const mask2 = Number.parseInt(match[25]!, 16);
  for (let bit = 0; bit < 3; bit++) if ((mask2 >> bit) & 1) attributes[`hs${3 - bit}`] = 1;
  if (mask2 & 8) attributes['door'] = 1;
  const mask3 = Number.parseInt(match[26]!, 16);
  for (let bit = 1; bit <= 3; bit++) if ((mask3 >> bit) & 1) attributes[`ls${3 - bit + 1}`] = 1;
  attributes['fuel'] = Number.parseInt(match[27]!, 16);
  attributes['odometer'] = Number.parseInt(match[28]!, 16);
}

function decode(frame: Buffer): DecodedMessage {
  const sentence = frame.toString('latin1');
  const message: DecodedMessage = { positions: [], statuses: [] };
  const id = sentence.slice(1, 13);
  const command = sentence.slice(13, 17);
  if (command === 'BP00') {
    // Handshake: identifies the device and is answered, nothing to store.
    return { ...message, uniqueId: id, ack: Buffer.from(`(${id}AP01HSO)`, 'latin1') };
  }
  if (command === 'BP05') message.ack = Buffer.from(`(${id}AP05)`, 'latin1');
  if (sentence.includes('BS50') || sentence.includes('BS51')) return status(message, id, null, decodeBms(sentence));
  const other = decodeOther(sentence, message);
  if (other) return other;
  const match = LOCATION.exec(sentence);
  if (!match) return message;
  const alternative = match[2] !== undefined;
  const uniqueId = (alternative ? match[2] : match[1])!;
  const attributes: Record<string, unknown> = {};
  readType(match[3]!, match[4] ?? match[5], attributes);
  const [a, b, c] = [Number(match[6]), Number(match[7]), Number(match[8])];
  // yymmdd in the compact form, ddmmyy in the comma-separated one.
  const [year, month, day] = alternative ? [c, b, a] : [a, b, c];
  const time = lenientDate(year, month, day, Number(match[17]), Number(match[18]), Number(match[19]));
  const coordinate = (degrees: string, minutes: string, hemisphere: string) =>
    (Number(degrees || '0') + Number(minutes) / 60) * (hemisphere === 'S' || hemisphere === 'W' ? -1 : 1);
  const latitude = coordinate(match[10]!, match[11]!, match[12]!);
  const longitude = coordinate(match[13]!, match[14]!, match[15]!);
  const speed = Number(match[16]!.trim());
  let course = 0;
  const courseText = match[20] ?? match[21] ?? match[29];
  if (courseText !== undefined && Number.isFinite(Number(courseText.trim()))) course = Number(courseText.trim());
  if (match[22] !== undefined) readIo(match, attributes);
  if (match[30] !== undefined) attributes['temp1'] = Number(match[30]);
  message.uniqueId = uniqueId;
  if (time === null || !isValidCoordinate(latitude, longitude) || !Number.isFinite(speed)) {
    message.statuses.push({ deviceTime: null, attributes });
    return message;
  }
  message.positions.push({
    fixTime: time, deviceTime: time, valid: match[9] === 'A', latitude, longitude, altitude: 0,
    speed: knotsFromKmh(speed), course, accuracy: 0, attributes,
  });
  return message;
}

/** Traccar's TK103 instructions: `(<id><command><data>)`. */
export const tk103Commands = commandEncoder(
  ['custom', 'positionSingle', 'positionPeriodic', 'positionStop', 'engineStop', 'engineResume', 'rebootDevice', 'outputControl'],
  (command: DeviceCommand): string => {
    const attribute = (name: string) => String(command.attributes[name] ?? '');
    switch (command.type) {
      case 'custom': {
        const data = attribute('data');
        if (data === '' || /[()]/.test(data)) throw new ProtocolError('tk103: custom data must be one instruction without parentheses');
        return data;
      }
      case 'positionSingle':
        return 'AP00';
      case 'positionPeriodic': {
        const frequency = Number(command.attributes['frequency']);
        if (!Number.isInteger(frequency) || frequency <= 0 || frequency > 0xffff) throw new ProtocolError('tk103: frequency must be 1 to 65535 s');
        return `AR00${frequency.toString(16).toUpperCase().padStart(4, '0')}0000`;
      }
      case 'positionStop':
        return 'AR0000000000';
      case 'engineStop':
        return 'AV010';
      case 'engineResume':
        return 'AV011';
      case 'rebootDevice':
        return 'AT00';
      case 'outputControl': {
        // Traccar writes the data after AV00 (AV00<state>): the output is implied by the device model.
        const data = attribute('data');
        if (!/^[01]$/.test(data)) throw new ProtocolError('tk103: output data must be 0 or 1');
        return `AV00${data}`;
      }
      default:
        throw new ProtocolError(`tk103: ${command.type} is not supported`);
    }
  },
  (body, { uniqueId }) => Buffer.from(`(${uniqueId}${body})`, 'latin1'),
);

export const tk103Protocol: TcpProtocol = {
  name: 'tk103',
  splitFrames,
  decode: (frame: Buffer, _state: ConnectionState) => decode(frame),
  commands: tk103Commands,
};
