// Coban GPS103/TK102/TK103-2 and clones (Traccar's `gps103`, port 5001, TCP and UDP).
// Text sentences ended by ';', '*', or a line break: `imei:<imei>,<keyword>,<local date+time>,<phone>,F,<utc time>,A,
// <lat>,N,<lon>,E,<speed knots>,<course>,...;`, `L` in place of `F` without a fix. Handshake `##,imei:<imei>,A;`
// (answered LOAD), heartbeat `<imei>;` (answered ON), `help me` (answered `**,imei:<imei>,E;`), OBD reports, and
// an alternative CSV form ending in '*'.

import { commandEncoder } from '../command-types.ts';
import type { DeviceCommand } from '../command-types.ts';
import { addAlarm, isValidCoordinate, knotsFromKmh, utcDate } from '../decode-helpers.ts';
import { splitTextFrames } from '../text-frames.ts';
import type { ConnectionState, DecodedMessage, DecodedPosition, TcpProtocol } from '../types.ts';
import { ProtocolError } from '../types.ts';

const MAX_SENTENCE_LENGTH = 8192; // photo chunks are long hex lines
const MAX_REPORT_LENGTH = 512;
const ENDS = new Set([0x3b, 0x2a, 0x0d, 0x0a]); // ; * CR LF
const HASH = 0x23;
const IMEI_START = 0x69; // 'i'

function isDigit(byte: number): boolean {
  return byte >= 0x30 && byte <= 0x39;
}

function splitFrames(buffer: Buffer): { frames: Buffer[]; consumed: number } {
  return splitTextFrames(buffer, (byte) => byte === IMEI_START || byte === HASH || isDigit(byte), ENDS, MAX_SENTENCE_LENGTH, 'gps103');
}

// imei, keyword, [local yymmdd hhmm[ss]], [rfid/phone], then L with optional cell or F with the fix.
const REGULAR = new RegExp(
  '^imei:(\\d+),([^,]*),' +
  '(?:(\\d\\d)/?(\\d\\d)/?(\\d\\d) ?(\\d\\d):?(\\d\\d)(?:\\d\\d)?,|\\d*,)' +
  '([^,]+)?,' +
  '(?:L,(?:,,([0-9a-fA-F]+),,([0-9a-fA-F]+),,,)?' +
  '|F,(?:(\\d\\d)(\\d\\d)(\\d\\d)(?:\\.\\d+)?|(?:\\d{1,5}\\.\\d+)?),' +
  '([AV]),(?:([NS]),)?(\\d+)(\\d\\d\\.\\d+),(?:([NS]),)?(?:([EW]),)?(\\d+)(\\d\\d\\.\\d+),(?:([EW])?,)?' +
  '(\\d+\\.?\\d*)?(?:,(\\d+\\.?\\d*)?)?(?:,(-?\\d+\\.?\\d*)?)?(?:,([01])?)?(?:,([01])?)?' +
  '(?:,(?:(\\d+\\.\\d+)%)?,(?:(\\d+\\.\\d+)%|\\d+)?)?(?:,([-+]?\\d+)?)?)',
  's',
);

const OBD = /^imei:(\d+),OBD,(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d),(\d+)?,(\d+\.\d+)?,(\d+\.\d+)?,(\d+)?,(\d+),(\d+\.?\d*%),(?:([-+]?\d+)|[-+]?),(\d+\.?\d*%),(\d+),(\d+\.\d+),([^;]*)/s;

// Traccar lets the text fields span commas (.+); they never hold one, and [^,]+ keeps the match linear.
const ALTERNATIVE = /^imei:(\d+),[^,]+,(?:-+|([^,]+)),(?:-+|([^,]+)),(?:-+|([^,]+)),(\d\d)(\d\d)(\d\d),(\d\d)(\d\d)(\d\d),(\d+),(\d),(-?\d+\.\d+),(-?\d+\.\d+),(\d+),(\d+),(-?\d+),(\d+\.\d+),(\d+),([01]),([01]),(?:-+|([^,]+))/s;

const HANDSHAKE = /imei:(\d+),/;

const ALARMS: Record<string, string> = {
  'help me': 'sos',
  'low battery': 'lowBattery',
  stockade: 'geofence',
  move: 'movement',
  speed: 'overspeed',
  'door alarm': 'door',
  'ac alarm': 'powerCut',
  'accident alarm': 'accident',
  'sensor alarm': 'vibration',
  'bonnet alarm': 'bonnet',
  'footbrake alarm': 'footBrake',
  DTC: 'fault',
};

function alarmOf(keyword: string): string | undefined {
  if (keyword.startsWith('T:')) return 'temperature';
  if (keyword.startsWith('oil')) return 'fuelLeak';
  return ALARMS[keyword];
}

function coordinate(hemisphereBefore: string | undefined, degrees: string, minutes: string, hemisphereAfter: string | undefined): number {
  const value = Number(degrees) + Number(minutes) / 60;
  const hemisphere = hemisphereBefore ?? hemisphereAfter;
  return hemisphere === 'S' || hemisphere === 'W' ? -value : value;
}

function numberOr(text: string | undefined, fallback: number): number {
  return text === undefined ? fallback : Number(text);
}

/**
 * A command done: Coban trackers answer the instruction letter X with a report keyed `xt` (`jt` after J, engine
 * stopped; `kt` after K; `mt` after M). Traccar keeps it as `event`; it is also the answer, as `result`.
 */
const COMMAND_DONE = /^[a-z]t$/;

/** The keyword's meaning: alarm, ignition, temperature, fuel, command answer, or Traccar's `event` for the rest. */
function readKeyword(keyword: string, attributes: Record<string, unknown>): void {
  addAlarm(attributes, alarmOf(keyword));
  if (COMMAND_DONE.test(keyword)) attributes['result'] = keyword;
  if (keyword === 'acc on' || keyword === 'acc off') {
    attributes['ignition'] = keyword === 'acc on';
  } else if (keyword.startsWith('T:')) {
    const temperature = Number(keyword.slice(2));
    if (Number.isFinite(temperature)) attributes['temp1'] = temperature;
  } else if (keyword.startsWith('oil ')) {
    const fuel = Number(keyword.slice(4));
    if (Number.isFinite(fuel)) attributes['fuel'] = fuel;
  } else if (keyword !== '' && keyword !== 'help me' && !keyword.startsWith('vt') && attributes['alarm'] === undefined && keyword !== 'tracker') {
    attributes['event'] = keyword;
  }
}

function decodeRegular(sentence: string, message: DecodedMessage): void {
  const match = REGULAR.exec(sentence);
  if (!match) return;
  const [, imei, keyword = '', year, month, day, localHours, localMinutes, rfid] = match;
  message.uniqueId = imei;
  if (keyword === 'help me') message.ack = Buffer.from(`**,imei:${imei},E;`, 'latin1');
  const attributes: Record<string, unknown> = {};
  readKeyword(keyword, attributes);
  if (keyword === 'rfid' && rfid !== undefined) attributes['driverUniqueId'] = rfid;
  const validity = match[14];
  if (validity === undefined) {
    // No fix ('L'): what the sentence says goes onto the last known location.
    message.statuses.push({ deviceTime: null, attributes });
    return;
  }
  const [utcHours, utcMinutes, utcSeconds] = [match[11], match[12], match[13]];
  // The date and hh:mm are the device's local time; the fix's UTC hh:mm gives its offset (whole minutes).
  let offsetMinutes = 0;
  if (utcHours !== undefined && localHours !== undefined) {
    offsetMinutes = (Number(localHours) - Number(utcHours)) * 60 + Number(localMinutes) - Number(utcMinutes);
    if (offsetMinutes <= -12 * 60) offsetMinutes += 24 * 60;
    else if (offsetMinutes > 12 * 60) offsetMinutes -= 24 * 60;
  }
  const time = year === undefined ? null : utcDate(
    Number(year), Number(month), Number(day), Number(localHours), Number(localMinutes), numberOr(utcSeconds, 0), offsetMinutes,
  );
  const latitude = coordinate(match[15], match[16]!, match[17]!, match[18]);
  const longitude = coordinate(match[19], match[20]!, match[21]!, match[22]);
  if (time === null || !isValidCoordinate(latitude, longitude)) {
    message.statuses.push({ deviceTime: null, attributes });
    return;
  }
  if (match[26] !== undefined) attributes['ignition'] = match[26] === '1';
  if (match[27] !== undefined) attributes['door'] = match[27] === '1';
  if (match[28] !== undefined) attributes['fuel1'] = Number(match[28]);
  if (match[29] !== undefined) attributes['fuel2'] = Number(match[29]);
  if (match[30] !== undefined) attributes['temp1'] = Number(match[30]);
  message.positions.push({
    fixTime: time, deviceTime: time, valid: validity === 'A', latitude, longitude,
    altitude: numberOr(match[25], 0), speed: numberOr(match[23], 0), course: numberOr(match[24], 0), accuracy: 0, attributes,
  });
}

function decodeObd(sentence: string, message: DecodedMessage): void {
  const match = OBD.exec(sentence);
  if (!match) return;
  message.uniqueId = match[1];
  const [year, month, day, hours, minutes, seconds] = match.slice(2, 8).map(Number) as [number, number, number, number, number, number];
  const attributes: Record<string, unknown> = {
    odometer: numberOr(match[8], 0),
    fuelConsumption: numberOr(match[10], 0),
    obdSpeed: Number(match[12]),
    engineLoad: match[13],
    throttle: match[15],
    rpm: Number(match[16]),
    battery: Number(match[17]),
    dtcs: match[18]!.replace(/,/g, ' ').trim(),
  };
  if (match[11] !== undefined) attributes['hours'] = Number(match[11]) * 3_600_000;
  if (match[14] !== undefined) attributes['coolantTemp'] = Number(match[14]);
  message.statuses.push({ deviceTime: utcDate(year, month, day, hours, minutes, seconds), attributes });
}

function decodeAlternative(sentence: string, message: DecodedMessage): void {
  const match = ALTERNATIVE.exec(sentence);
  if (!match) return;
  message.uniqueId = match[1];
  const number = (index: number) => Number(match[index]);
  const time = utcDate(number(10), number(9), number(8), number(5), number(6), number(7));
  const latitude = number(13);
  const longitude = number(14);
  const attributes: Record<string, unknown> = {
    rssi: number(11), hdop: number(18), sat: number(19), ignition: number(20) > 0, charge: number(21) > 0,
  };
  if (match[2] !== undefined) attributes['event'] = match[2];
  if (match[3] !== undefined) attributes['sensorId'] = match[3];
  if (match[4] !== undefined && Number.isFinite(Number(match[4]))) attributes['sensorVoltage'] = Number(match[4]);
  if (match[22] !== undefined) attributes['error'] = match[22];
  if (time === null || !isValidCoordinate(latitude, longitude)) return;
  const position: DecodedPosition = {
    fixTime: time, deviceTime: time, valid: number(12) > 0, latitude, longitude, altitude: number(17),
    speed: knotsFromKmh(number(15)), course: number(16), accuracy: 0, attributes,
  };
  message.positions.push(position);
}

function decode(frame: Buffer): DecodedMessage {
  let sentence = frame.toString('latin1').trim();
  const message: DecodedMessage = { positions: [], statuses: [] };
  if (sentence.includes('imei:') && sentence.length <= 30) {
    // Log-on request: answered LOAD.
    message.ack = Buffer.from('LOAD', 'latin1');
    const imei = HANDSHAKE.exec(sentence)?.[1];
    if (imei !== undefined) message.uniqueId = imei;
    return message;
  }
  if (isDigit(sentence.charCodeAt(0))) {
    // Heartbeat (the IMEI alone), answered ON; some devices prefix a report with it.
    message.ack = Buffer.from('ON', 'latin1');
    const start = sentence.indexOf('imei:');
    if (start < 0) {
      const imei = /^\d+/.exec(sentence)![0];
      if (imei.length >= 10 && imei.length <= 20) message.uniqueId = imei;
      return message;
    }
    sentence = sentence.slice(start);
  }
  // Photo chunks are not kept; a report is far shorter than the cap, which bounds the patterns' backtracking.
  if (sentence.startsWith('vr', 21) || sentence.length > MAX_REPORT_LENGTH) return message;
  if (sentence.slice(21, 24).includes('OBD')) decodeObd(sentence, message);
  else if (sentence.endsWith('*')) decodeAlternative(sentence, message);
  else decodeRegular(sentence, message);
  return message;
}

/** Traccar's interval notation: whole hours, else minutes, else seconds, two digits and a unit. */
function interval(seconds: number): string {
  if (seconds >= 3600) return `${String(Math.floor(seconds / 3600)).padStart(2, '0')}h`;
  if (seconds >= 60) return `${String(Math.floor(seconds / 60)).padStart(2, '0')}m`;
  return `${String(seconds).padStart(2, '0')}s`;
}

const GPS103_LETTERS: Partial<Record<DeviceCommand['type'], string>> = {
  positionStop: 'D',
  positionSingle: 'B',
  engineStop: 'J',
  engineResume: 'K',
  alarmArm: 'L',
  alarmDisarm: 'M',
};

export const gps103Commands = commandEncoder(
  ['custom', 'positionSingle', 'positionPeriodic', 'positionStop', 'engineStop', 'engineResume', 'alarmArm', 'alarmDisarm'],
  (command: DeviceCommand): string => {
    if (command.type === 'custom') {
      const data = String(command.attributes['data'] ?? '');
      if (data === '' || /[\r\n;]/.test(data)) throw new ProtocolError('gps103: custom data must be one instruction');
      return data;
    }
    if (command.type === 'positionPeriodic') {
      const frequency = Number(command.attributes['frequency']);
      if (!Number.isInteger(frequency) || frequency <= 0 || frequency >= 100 * 3600) throw new ProtocolError('gps103: frequency must be 1 s to 99 h');
      return `C,${interval(frequency)}`;
    }
    const letter = GPS103_LETTERS[command.type];
    if (letter === undefined) throw new ProtocolError(`gps103: ${command.type} is not supported`);
    return letter;
  },
  (text, { uniqueId }) => Buffer.from(`**,imei:${uniqueId},${text}`, 'latin1'),
);

export const gps103Protocol: TcpProtocol = {
  name: 'gps103',
  splitFrames,
  decode: (frame: Buffer, _state: ConnectionState) => decode(frame),
  commands: gps103Commands,
};
