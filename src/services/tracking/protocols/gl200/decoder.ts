// Queclink GL/GV/GMT/CV series, text ("@Track") protocol (Traccar's `gl200`, port 5004, TCP and UDP). Reports are
// `+RESP:GT<type>,<protocol version>,<imei>,…,<send time>,<count>$` (`+BUFF:` when sent from the device's buffer);
// fields are comma-separated, times `yyyyMMddHHmmss` UTC, speeds km/h, coordinates `lon,lat`. The first two
// characters of the protocol version name the model, which decides some layouts. Heartbeats `+ACK:GTHBD` are answered
// `+SACK:GTHBD,<protocol version>,<count>$`; other `+ACK:` messages answer commands and become results. The binary
// form (`+RSP`, `+EVT`, …) is split by its length and decoded in binary.ts.

import { commandEncoder } from '../command-types.ts';
import type { DeviceCommand } from '../command-types.ts';
import { commandText } from '../command-text.ts';
import { textFrameEnd } from '../text-frames.ts';
import { decodeGl200Binary } from './binary.ts';
import { addAlarm, isValidCoordinate, knotsFromKmh, utcDate } from '../decode-helpers.ts';
import type { ConnectionState, DecodedMessage, DecodedPosition, DecodedStatus, TcpProtocol } from '../types.ts';
import { ProtocolError } from '../types.ts';

const MAX_FRAME_LENGTH = 4096;
const BINARY_HEADERS = new Set(['+RSP', '+BSP', '+EVT', '+BVT', '+INF', '+BNF', '+HBD', '+CRD', '+BRD', '+LGN']);
const PLUS = 0x2b;
const TEXT_ENDS = new Set([0x24, 0x00]); // `$`, or a NUL
const LINE_BREAKS = new Set([0x0d, 0x0a]);

function isBinary(buffer: Buffer, offset: number): boolean {
  if (buffer[offset + 1] === 0) return true;
  const header = buffer.toString('latin1', offset, offset + 4);
  if (header === '+ACK') return buffer[offset + 4] !== 0x3a;
  return BINARY_HEADERS.has(header);
}

/** The length a binary frame declares, read where its header puts it; undefined until those bytes are there. */
function binaryLength(buffer: Buffer, offset: number): number | undefined {
  if (buffer[offset + 1] === 0) return buffer.length - offset >= 4 ? buffer.readUInt16BE(offset + 2) : undefined;
  const header = buffer.toString('latin1', offset, offset + 4);
  const [at, size] = header === '+ACK' ? [6, 1] : header === '+INF' || header === '+BNF' ? [7, 2] : header === '+HBD' ? [5, 1]
    : header === '+CRD' || header === '+BRD' || header === '+LGN' ? [6, 2] : [9, 2];
  if (buffer.length - offset < at + size) return undefined;
  return size === 1 ? buffer[offset + at]! : buffer.readUInt16BE(offset + at);
}

/** Text reports end at `$` (or a NUL); binary ones carry their length. Line breaks between frames are skipped. */
function splitFrames(buffer: Buffer): { frames: Buffer[]; consumed: number } {
  const frames: Buffer[] = [];
  let offset = 0;
  while (offset < buffer.length) {
    if (LINE_BREAKS.has(buffer[offset]!)) {
      offset += 1;
      continue;
    }
    if (buffer[offset] !== PLUS) {
      if (frames.length > 0) break;
      throw new ProtocolError(`gl200: garbage byte 0x${buffer[offset]!.toString(16)} where a report was expected`);
    }
    if (buffer.length - offset < 5) break;
    if (isBinary(buffer, offset)) {
      const length = binaryLength(buffer, offset);
      if (length === undefined) break;
      if (length < 5) throw new ProtocolError('gl200: binary frame length too small');
      if (buffer.length - offset < length) break;
      frames.push(buffer.subarray(offset, offset + length));
      offset += length;
      continue;
    }
    const end = textFrameEnd(buffer, offset, TEXT_ENDS, MAX_FRAME_LENGTH, 'gl200');
    if (end === undefined) break;
    frames.push(buffer.subarray(offset, end + 1));
    offset = end + 1;
  }
  return { frames, consumed: offset };
}

// --- Numbers, dates and models, parsed as strictly as Traccar's Java parsing (a bad one drops the report) ---------

function int(text: string | undefined, radix = 10): number {
  const pattern = radix === 16 ? /^[+-]?[0-9a-fA-F]{1,8}$/ : /^[+-]?\d{1,10}$/;
  if (text === undefined || !pattern.test(text)) throw new ProtocolError(`gl200: ${JSON.stringify(text?.slice(0, 20))} is not an integer`);
  const value = Number.parseInt(text, radix);
  if (value > 0x7fffffff || value < -0x80000000) throw new ProtocolError('gl200: integer out of range');
  return value;
}

function long(text: string | undefined, radix = 10): number {
  const pattern = radix === 16 ? /^[0-9a-fA-F]{1,13}$/ : /^[+-]?\d{1,15}$/;
  if (text === undefined || !pattern.test(text)) throw new ProtocolError(`gl200: ${JSON.stringify(text?.slice(0, 20))} is not an integer`);
  return Number.parseInt(text, radix);
}

function double(text: string | undefined): number {
  const trimmed = text?.trim();
  if (trimmed === undefined || !/^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/.test(trimmed)) {
    throw new ProtocolError(`gl200: ${JSON.stringify(text?.slice(0, 20))} is not a number`);
  }
  return Number(trimmed);
}

function time(text: string | undefined): Date {
  const match = /^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)$/.exec(text ?? '');
  const date = match && utcDate(Number(match[1]), Number(match[2]), Number(match[3]), Number(match[4]), Number(match[5]), Number(match[6]));
  if (!date) throw new ProtocolError('gl200: bad time');
  return date;
}

function bit(value: number, index: number): boolean {
  return Math.floor(value / 2 ** index) % 2 === 1;
}

/** `hhhhh:mm:ss` (or fewer parts) of engine hours, in milliseconds. */
function hours(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const [h, m, s] = text.split(':');
  return (int(h) * 3600 + (m === undefined ? 0 : int(m) * 60) + (s === undefined ? 0 : int(s))) * 1000;
}

const PROTOCOL_MODELS: Record<string, string> = {
  '02': 'GL200', '04': 'GV200', '06': 'GV300', '08': 'GMT100', '09': 'GV50P', '0F': 'GV55', '10': 'GV55 LITE', '11': 'GL500',
  '1A': 'GL300', '1F': 'GV500', '21': 'GL200', '25': 'GV300', '27': 'GV300W', '28': 'GL300VC', '2C': 'GL300W', '2D': 'GV500VC',
  '2F': 'GV55', '4F': 'GV56', '30': 'GL300', '31': 'GV65', '35': 'GV200', '36': 'GV500', '3F': 'GMT100', '40': 'GL500',
  '41': 'GV75W', '42': 'GT501', '44': 'GL530', '45': 'GB100', '50': 'GV55W', '52': 'GL50', '55': 'GL50B', '5E': 'GV500MAP',
  '6E': 'GV310LAU', 'BD': 'CV200', 'C2': 'GV600M', 'C3': 'GL320M', 'DC': 'GV600MG', 'DE': 'GL500M', 'DF': 'CV100LG',
  'F1': 'GV350M', 'F8': 'GV800W', 'FC': 'GV600W', '802004': 'GV58LAU', '802005': 'GV355CEU', '80201E': 'GV30CEU',
};

/** The model a protocol version names: its first six characters when longer than six, else its first two. */
function modelOf(protocolVersion: string): string {
  return PROTOCOL_MODELS[protocolVersion.length > 6 ? protocolVersion.slice(0, 6) : protocolVersion.slice(0, 2)] ?? '';
}

// --- Reports -----------------------------------------------------------------------------------------------------

/** One report being built: a fix once its coordinates are read, else attributes merged into the last known position. */
class Report {
  attributes: Record<string, unknown> = {};
  fix?: { time: Date; latitude: number; longitude: number; valid: boolean };
  valid = false;
  speed = 0;
  course = 0;
  altitude = 0;
  deviceTime: Date | null = null;
  /** Traccar keeps a report without attributes when it carries a cell tower. */
  network = false;

  set(key: string, value: unknown): void {
    if (value !== undefined && value !== null && value !== '') this.attributes[key] = value;
  }

  locate(longitude: number, latitude: number, fixTime: Date): void {
    this.valid = true;
    this.fix = { time: fixTime, latitude, longitude, valid: true };
  }

  toDecoded(): DecodedPosition | DecodedStatus {
    const fix = this.fix;
    if (!fix || !isValidCoordinate(fix.latitude, fix.longitude)) return { deviceTime: this.deviceTime, attributes: this.attributes };
    return {
      fixTime: fix.time, deviceTime: this.deviceTime ?? fix.time, valid: this.valid, latitude: fix.latitude, longitude: fix.longitude,
      altitude: this.altitude, speed: this.speed, course: this.course, accuracy: 0, attributes: this.attributes,
    };
  }
}

function message(uniqueId: string, reports: readonly Report[]): DecodedMessage {
  const decoded: DecodedMessage = { uniqueId, positions: [], statuses: [] };
  for (const report of reports) {
    const one = report.toDecoded();
    if ('latitude' in one) decoded.positions.push(one);
    else decoded.statuses.push(one);
  }
  return decoded;
}

/** Comma-separated fields, read in order; reading past the last is a ProtocolError (Traccar's index error). */
class Fields {
  readonly values: readonly string[];
  index: number;

  constructor(values: readonly string[], index: number) {
    this.values = values;
    this.index = index;
  }

  at(index: number): string {
    const value = this.values[index];
    if (value === undefined) throw new ProtocolError('gl200: report has too few fields');
    return value;
  }

  peek(offset = 0): string {
    return this.at(this.index + offset);
  }

  next(): string {
    return this.at(this.index++);
  }

  skip(count = 1): void {
    this.index += count;
  }

  /** The send time: the field before the count number. */
  sendTime(): Date {
    return time(this.at(this.values.length - 2));
  }
}

/** Traccar's positional location block: hdop, speed, course, altitude, lon, lat, fix time, cell, then an append mask. */
function readLocation(report: Report, model: string, fields: Fields): void {
  const hdop = fields.next();
  report.set('hdop', hdop === '' ? 0 : double(hdop));
  const speed = fields.next();
  report.speed = knotsFromKmh(speed === '' ? 0 : double(speed));
  const course = fields.next();
  report.course = course === '' ? 0 : int(course);
  const altitude = fields.next();
  report.altitude = altitude === '' ? 0 : double(altitude);
  if (fields.peek() !== '') {
    const longitude = fields.next();
    const latitude = fields.next();
    report.locate(longitude === '' ? 0 : double(longitude), latitude === '' ? 0 : double(latitude), time(fields.next()));
  } else {
    fields.skip(3);
  }
  if (fields.peek() !== '') {
    int(fields.next());
    int(fields.next());
    int(fields.next(), 16);
    long(fields.next(), 16);
    report.network = true;
  } else {
    fields.skip(4);
  }
  if (model.startsWith('GL5')) fields.skip(2); // csq rssi and ber
  if (model !== 'GL320M') {
    const appendMask = fields.next();
    if (appendMask !== '') {
      const mask = int(appendMask);
      if (bit(mask, 0)) report.set('sat', int(fields.next()));
      if (bit(mask, 1)) fields.skip(); // trigger type
    }
  }
}

/** The status word: ignition in the third byte, inputs in the second, outputs in the low byte. */
function readStatus(report: Report, value: number): void {
  const ignition = Math.floor(value / 0x10000) % 0x100;
  if (bit(ignition, 4)) report.set('ignition', false);
  else if (bit(ignition, 5)) report.set('ignition', true);
  const input = Math.floor(value / 0x100) % 0x100;
  const output = value % 0x100;
  report.set('input', input);
  report.set('in1', bit(input, 1));
  report.set('in2', bit(input, 2));
  report.set('output', output);
  report.set('out1', bit(output, 0));
  report.set('out2', bit(output, 1));
}

function readAnalog(report: Report, index: number, text: string): void {
  if (text.startsWith('F')) report.set(`fuel${index}`, int(text.slice(1)));
  else report.set(`adc${index}`, int(text) / 1000);
}

// --- Regular-expression layouts, built from Traccar's shorthand: d a digit, x a hex digit, '.' a literal dot --------

function num(shorthand: string): string {
  return shorthand.replace(/d/g, '\\d').replace(/x/g, '[0-9a-fA-F]').replace(/\./g, '\\.');
}

const VERSION = '(?:.{6}|.{10})?,';
const IMEI = '(\\d{15}|[0-9a-fA-F]{14}),';
const SEND_TIME = `(?:${num('(dddd)(dd)(dd)(dd)(dd)(dd)')})?,([0-9a-fA-F]{4})\\$?`;
// Traccar's location block, written so that no text matches it in two ways: its `d{1,2}.?d?` fields as `d{1,3}` or
// `d{1,2}.d?`, and its two cell forms (decimal or hex, neither kept) as one hex form. Repeated in GTFRI, an ambiguous
// block would backtrack exponentially on a report that fails to match.
const LOCATION = [
  '(\\d{1,2}\\.\\d?|\\d{1,3})?,', num('(d{1,3}.d)?,'), '(\\d{1,3}\\.\\d?|\\d{1,4})?,', num('(-?d{1,5}.d)?,'), num('(-?d{1,3}.d{6})?,'),
  num('(-?d{1,2}.d{6})?,'), `(?:${num('(dddd)(dd)(dd)(dd)(dd)(dd)')})?`, `(?:${num(',d+')}((?:,[0-9a-fA-F]{12},-\\d+,,,)+))?`, ',',
  '\\d*,\\d*,[0-9a-fA-F]*,[0-9a-fA-F]*,', num('(?:(d+.d)|d+)?,'),
].join('');
const LOCATION_GROUPS = 14;

function pattern(...parts: string[]): RegExp {
  return new RegExp(`^${parts.join('')}$`, 's');
}

// Every expression layout ends with the count number; checked first, so a report that lacks it costs one short scan
// rather than the expression's backtracking.
const COUNT_AT_END = /,[0-9a-fA-F]{4}\$?$/;

function matchLayout(expression: RegExp, sentence: string): RegExpExecArray | null {
  return COUNT_AT_END.test(sentence) ? expression.exec(sentence) : null;
}

/** A regular-expression match read group by group, as Traccar's Parser reads it. */
class Groups {
  readonly match: RegExpExecArray;
  position = 1;

  constructor(match: RegExpExecArray) {
    this.match = match;
  }

  has(count = 1): boolean {
    for (let index = this.position; index < this.position + count; index++) {
      if (!this.match[index]) {
        this.position += count;
        return false;
      }
    }
    return true;
  }

  next(): string | undefined {
    return this.match[this.position++];
  }

  int(): number | undefined {
    return this.has() ? int(this.next()) : undefined;
  }

  hexInt(): number | undefined {
    return this.has() ? int(this.next(), 16) : undefined;
  }

  double(): number | undefined {
    return this.has() ? double(this.next()) : undefined;
  }

  time(): Date {
    const parts = Array.from({ length: 6 }, () => Number(this.next()));
    const date = utcDate(parts[0]!, parts[1]!, parts[2]!, parts[3]!, parts[4]!, parts[5]!);
    if (!date) throw new ProtocolError('gl200: bad time');
    return date;
  }

  skip(count: number): void {
    this.position += count;
  }
}

/** The location block of the expression layouts. */
function readLocationGroups(report: Report, groups: Groups): void {
  const hdop = groups.double();
  report.valid = hdop === undefined || hdop > 0;
  report.set('hdop', hdop);
  report.speed = knotsFromKmh(groups.double() ?? 0);
  report.course = groups.double() ?? 0;
  report.altitude = groups.double() ?? 0;
  if (groups.has(8)) {
    const longitude = double(groups.next());
    const latitude = double(groups.next());
    report.locate(longitude, latitude, groups.time());
  }
  if (groups.has()) {
    groups.next(); // wifi access points: not kept
    report.network = true;
  }
  if (groups.has()) report.set('odometer', double(groups.next()) * 1000);
}

function readDeviceTime(report: Report, groups: Groups): void {
  if (groups.has(6)) report.deviceTime = groups.time();
}

const FRI = pattern(
  '\\+(?:RESP|BUFF):GT...,', VERSION, IMEI, '(?:([0-9A-Z]{17}),)?', '[^,]*,', num('(d+)?,'), `(?:${num('(d{1,2}),')})?`,
  `(?:${num('d{1,2},')})?`, `(?:${num('d*,')})?`, `(?:${num('(d+),')})?`, `((?:${LOCATION})+)`,
  '(?:', num('d{1,2},'), num('(d{1,5})?,'), num('(d{1,3}),'), num('[01],'), num('(?:[01])?,'), num('(-?d{1,2}.d)?,'),
  '|', num('(d{1,7}.d)?,'), num('(d{5}:dd:dd)?,'), num('(x+)?,'), num('(x+)?,'), `(?:${num('d*,')})?`, num('(d{1,3})?,'),
  num('(x{6})?,'), num('(d+)?,'), '(?:\\d+\\.?\\d*|Inf|NaN)?,', num('(d+)?,'),
  '|', num('(-?d),'), num('(d{1,3}),'),
  '|', `(?:${num('(d{1,7}.d)?,')})?`, num('(d{1,3})?,'), ')', '.*', SEND_TIME,
);
const LOCATION_ITEM = new RegExp(LOCATION, 'gs');

function decodeFri(sentence: string): DecodedMessage | null {
  const match = matchLayout(FRI, sentence);
  if (!match) return null;
  const groups = new Groups(match);
  const uniqueId = groups.next()!;
  const vin = groups.next();
  const power = groups.int();
  const reportType = groups.int();
  const battery = groups.int();
  const block = groups.next()!;
  const reports: Report[] = [];
  for (const item of block.matchAll(LOCATION_ITEM)) {
    const report = new Report();
    report.set('vin', vin);
    readLocationGroups(report, new Groups(item));
    reports.push(report);
  }
  const report = reports.at(-1);
  if (!report) throw new ProtocolError('gl200: report without a location block');
  groups.skip(LOCATION_GROUPS);
  if (power !== undefined && power > 10) report.set('power', power / 1000);
  if (battery !== undefined) report.set('batteryLevel', battery);
  if (groups.has()) report.set('battery', int(groups.next()) / 1000);
  report.set('batteryLevel', groups.int());
  report.set('temp1', groups.double());
  if (groups.has()) report.set('odometer', double(groups.next()) * 1000);
  report.set('hours', hours(groups.next()));
  report.set('adc1', groups.next());
  report.set('adc2', groups.next());
  report.set('batteryLevel', groups.int());
  if (groups.has()) readStatus(report, long(groups.next(), 16));
  report.set('rpm', groups.int());
  report.set('fuel', groups.int());
  if (groups.has(2)) {
    if (reportType !== undefined) {
      report.set('motion', bit(reportType, 0));
      report.set('charge', bit(reportType, 1));
    }
    report.set('rssi', groups.int());
    report.set('batteryLevel', groups.int());
  }
  if (groups.has()) report.set('odometer', double(groups.next()) * 1000);
  report.set('batteryLevel', groups.int());
  readDeviceTime(report, groups);
  return message(uniqueId, reports);
}

/** Reports laid out as expressions: the match, the device, then the report the reader fills. */
function decodeWith(expression: RegExp, sentence: string, read: (report: Report, groups: Groups) => void): DecodedMessage | null {
  const match = matchLayout(expression, sentence);
  if (!match) return null;
  const groups = new Groups(match);
  const uniqueId = groups.next()!;
  const report = new Report();
  read(report, groups);
  return message(uniqueId, [report]);
}

const TAIL = ['.*', SEND_TIME] as const;
const OBD = pattern(
  '\\+RESP:GTOBD,', VERSION, IMEI, '(?:[0-9A-Z]{17})?,', '[^,]{0,20},', '[01],', num('x{1,8},'), '(?:[0-9A-Z]{17})?,', '[01],',
  num('(?:d{1,5})?,'), num('(?:x{8})?,'), num('(d{1,5})?,'), num('(d{1,3})?,'), num('(-?d{1,3})?,'), '(\\d+\\.?\\d*|Inf|NaN)?,',
  num('(d{1,5})?,'), num('(?:d{1,5})?,'), '([01])?,', num('(d{1,3})?,'), num('(x*),'), num('(d{1,3})?,'), num('(?:d{1,3})?,'),
  num('(d{1,3})?,'), '(?:[0-9A],)?', num('(d+),'), LOCATION, num('(d{1,7}.d)?,'), SEND_TIME,
);
const LSW = pattern('\\+RESP:GT[LT]SW,', VERSION, IMEI, '[^,]*,', '[01],', '([01]),', LOCATION, SEND_TIME);
const IDA = pattern('\\+RESP:GTIDA,', VERSION, IMEI, '[^,]*,,', '([^,]+),', '[01],', '1,', LOCATION, num('(d+.d),'), ',,,,', SEND_TIME);
const WIF = pattern('\\+RESP:GTWIF,', VERSION, IMEI, '[^,]*,', num('(d+),'), '((?:[0-9a-fA-F]{12},-?\\d+,,,,)+),,,,', num('(d{1,3}),'), SEND_TIME);
const GSM = pattern('\\+RESP:GTGSM,', VERSION, IMEI, '(?:STR|CTN|NMR|RTL),', '(.*)', SEND_TIME);
const VER = pattern('\\+(?:RESP|BUFF):GTVER,', VERSION, IMEI, '[^,]*,', '([^,]*),', num('(xxxx),(xxxx),'), SEND_TIME);
const PNA = pattern('\\+RESP:GTP[NF]A,', VERSION, IMEI, '[^,]*,', SEND_TIME);
const DAR = pattern('\\+RESP:GTDAR,', VERSION, IMEI, '[^,]*,', num('(d),'), num('(d{1,2}),,,'), LOCATION, ...TAIL);
const DTT = pattern('\\+RESP:GTDTT,', VERSION, IMEI, '[^,]*,,,', num('d,'), num('d+,'), num('(x+),'), SEND_TIME);
const BAA = pattern(
  '\\+RESP:GTBAA,', VERSION, IMEI, '[^,]*,', num('x+,'), num('d,'), num('d,'), num('x+,'), num('(x{4}),'), '((?:[^,]+,){0,6})', LOCATION, ...TAIL,
);
const BID = pattern('\\+RESP:GTBID,', VERSION, IMEI, '[^,]*,', num('d,'), num('d,'), num('(x{4}),'), '((?:[^,]+,){0,2})', LOCATION, ...TAIL);
const LSA = pattern(
  '\\+RESP:GTLSA,', VERSION, IMEI, '[^,]*,', num('d,'), num('d,'), num('d+,'), LOCATION, num('d+,'), num('(d),'), num('(d+),'), '[01],',
  '[01]?,', num('(-?d+.d)?,'), SEND_TIME,
);

function readObd(report: Report, groups: Groups): void {
  report.set('rpm', groups.int());
  report.set('obdSpeed', groups.int());
  report.set('temp1', groups.int());
  report.set('fuelConsumption', groups.next());
  report.set('dtcsClearedDistance', groups.int());
  if (groups.has()) report.set('odbConnect', int(groups.next()) === 1);
  report.set('dtcsNumber', groups.int());
  report.set('dtcsCodes', groups.next());
  report.set('throttle', groups.int());
  report.set('fuel', groups.int());
  if (groups.has()) report.set('obdOdometer', int(groups.next()) * 1000);
  readLocationGroups(report, groups);
  if (groups.has()) report.set('obdOdometer', Math.trunc(double(groups.next()) * 1000));
  readDeviceTime(report, groups);
}

function readBaa(report: Report, groups: Groups): void {
  const mask = groups.hexInt() ?? 0;
  const values = (groups.next() ?? '').split(',');
  let index = 0;
  const value = () => {
    const text = values[index++];
    if (text === undefined) throw new ProtocolError('gl200: accessory field missing');
    return text;
  };
  if (bit(mask, 0)) report.set('accessoryName', value());
  if (bit(mask, 1)) report.set('accessoryMac', value());
  if (bit(mask, 2)) report.set('accessoryStatus', int(value()));
  if (bit(mask, 3)) report.set('accessoryVoltage', int(value()) / 1000);
  if (bit(mask, 4)) report.set('accessoryTemp', int(value()));
  if (bit(mask, 5)) report.set('accessoryHumidity', int(value()));
  readLocationGroups(report, groups);
  readDeviceTime(report, groups);
}

function readBid(report: Report, groups: Groups): void {
  const mask = groups.hexInt() ?? 0;
  const values = (groups.next() ?? '').split(',');
  if (bit(mask, 1)) report.set('accessoryMac', values[0]);
  if (bit(mask, 3)) report.set('accessoryVoltage', int(values[bit(mask, 1) ? 1 : 0]) / 1000);
  readLocationGroups(report, groups);
  readDeviceTime(report, groups);
}

function readDtt(report: Report, groups: Groups): void {
  const data = Buffer.from(groups.next() ?? '', 'hex').toString('latin1');
  if (data.includes('COMB')) report.set('fuel', double(data.split(',')[2]));
  else report.set('result', data);
  readDeviceTime(report, groups);
}

function readGsm(report: Report, groups: Groups): void {
  const data = (groups.next() ?? '').split(',');
  for (let cell = 0; cell < 6; cell++) {
    const mcc = data[cell * 6];
    if (mcc === undefined) throw new ProtocolError('gl200: cell list too short');
    if (mcc !== '') {
      int(mcc);
      int(data[cell * 6 + 1]);
      int(data[cell * 6 + 2], 16);
      int(data[cell * 6 + 3], 16);
      int(data[cell * 6 + 4]);
    }
  }
  report.network = true;
}

// --- Positional layouts --------------------------------------------------------------------------------------------

/** The head of the positional reports: the protocol version (which names the model) and the IMEI, read past. */
function openReport(values: readonly string[]): { fields: Fields; protocolVersion: string; uniqueId: string; model: string } {
  const fields = new Fields(values, 1);
  const protocolVersion = fields.next();
  const uniqueId = fields.next();
  return { fields, protocolVersion, uniqueId, model: modelOf(protocolVersion) };
}

/** `+RESP:GTINF`: device state, ICCID, signal, power and battery, merged into the last known position. */
function decodeInf(values: readonly string[]): DecodedMessage | null {
  const { fields, protocolVersion, uniqueId, model } = openReport(values);
  if (protocolVersion.length > 10) return null; // the GT300 layout
  const report = new Report();
  fields.skip(); // device name
  const state = fields.next();
  if (state !== '') {
    const value = int(state, 16);
    if (value === 0x16 || value === 0x1a || value === 0x12) Object.assign(report.attributes, { ignition: false, motion: true });
    else if (value === 0x11) Object.assign(report.attributes, { ignition: false, motion: false });
    else if (value === 0x21) Object.assign(report.attributes, { ignition: true, motion: false });
    else if (value === 0x22) Object.assign(report.attributes, { ignition: true, motion: true });
    else if (value === 0x41) report.set('motion', false);
    else if (value === 0x42) report.set('motion', true);
  }
  report.set('iccid', fields.next());
  const rssi = fields.next();
  if (rssi !== '') report.set('rssi', int(rssi));
  fields.skip(2); // signal quality, external power supply
  if (fields.peek(1).length >= 12) {
    fields.skip(); // BLE sensor MAC
    report.set('deviceTemp', int(fields.next()));
    report.set('humidity', int(fields.next()));
  }
  const supply = fields.next();
  if (supply !== '') {
    if (supply.includes('.')) report.set('odometer', double(supply) * 1000);
    else report.set('power', int(supply) / 1000);
  }
  if (model !== 'GV500VC') {
    if (model === 'GV350M' || model === 'GV310LAU') fields.skip(); // expand mask or network type
    else {
      const power2 = fields.next();
      if (power2 !== '') report.set('power2', int(power2) / 1000);
    }
  }
  const battery = fields.next();
  if (battery !== '') report.set('battery', double(battery));
  if (fields.next() !== '' && int(fields.next()) === 1) report.set('charge', true);
  if (model === 'GV310LAU') {
    fields.skip(5); // led state, power saving, external antenna, last fix time, pin mask
    for (let adc = 1; adc <= 3; adc++) report.set(`adc${adc}`, int(fields.next()));
  }
  report.deviceTime = fields.sendTime();
  return message(uniqueId, [report]);
}

/** `+RESP:GTERI`: one or more fixes, then power, odometer, hours, analog inputs, battery and accessories. */
function decodeEri(values: readonly string[]): DecodedMessage {
  const { fields, uniqueId, model } = openReport(values);
  fields.skip(); // device name
  const mask = long(fields.next(), 16);
  const powerText = fields.next();
  const power = powerText === '' ? undefined : int(powerText) / 1000;
  fields.skip(); // report type
  const count = int(fields.next());
  if (count < 1) throw new ProtocolError('gl200: ERI without a fix');
  const reports: Report[] = [];
  for (let item = 0; item < count; item++) {
    const report = new Report();
    readLocation(report, model, fields);
    reports.push(report);
  }
  const report = reports.at(-1)!;
  const optionalInt = (text: string, radix = 10) => (text === '' ? undefined : int(text, radix));
  report.set('power', power);
  if (!model.startsWith('GL5')) {
    const odometer = fields.next();
    if (odometer !== '') report.set('odometer', double(odometer) * 1000);
  }
  if (!model.startsWith('GL5') && model !== 'GL320M') {
    report.set('hours', hours(fields.next()));
    const adc1 = fields.next();
    if (adc1 !== '') readAnalog(report, 1, adc1);
  }
  if (model.startsWith('GV') && !model.startsWith('GV6') && model !== 'GV350M') {
    const adc2 = fields.next();
    if (adc2 !== '') readAnalog(report, 2, adc2);
  }
  if (model === 'GV200' || model === 'GV310LAU') {
    const adc3 = fields.next();
    if (adc3 !== '') readAnalog(report, 3, adc3);
  }
  if ((model.startsWith('GV3') && model.endsWith('CEU')) || model.startsWith('GV600M')) fields.skip(); // reserved
  if (model.startsWith('GL5')) {
    report.set('batteryLevel', optionalInt(fields.next()));
    fields.skip(); // mode selection
    const motion = fields.next();
    if (motion !== '') report.set('motion', int(motion) > 0);
  } else if (model === 'GV200') {
    report.set('input', optionalInt(fields.next(), 16));
    report.set('output', optionalInt(fields.next(), 16));
    fields.skip(); // uart device type
  } else if (model === 'GL320M') {
    report.set('batteryLevel', optionalInt(fields.next()));
    if (bit(mask, 7)) report.set('externalBattery', optionalInt(fields.next()));
  } else {
    report.set('batteryLevel', optionalInt(fields.next()));
    const status = fields.next();
    if (status !== '') readStatus(report, long(status, 16));
    fields.skip(); // reserved or uart device type
  }
  report.deviceTime = fields.sendTime();
  readEriAccessories(report, model, mask, fields);
  return message(uniqueId, reports);
}

/** The ERI tail the mask announces: fuel, 1-wire temperatures, fuel sensors, BLE tags. */
function readEriAccessories(report: Report, model: string, mask: number, fields: Fields): void {
  if (bit(mask, 0) && model !== 'GV350M') {
    const fuel = fields.next();
    if (fuel !== '') report.set('fuel', int(fuel, 16));
  }
  if (bit(mask, 1)) {
    const count = int(fields.next());
    for (let sensor = 1; sensor <= count; sensor++) {
      fields.skip(2); // id, type
      const temperature = fields.next();
      if (temperature !== '') report.set(`temp${sensor}`, (((int(temperature, 16) & 0xffff) << 16) >> 16) * 0.0625);
    }
  }
  if (bit(mask, 2)) return; // CAN data: not decoded, as in Traccar
  if ((bit(mask, 3) || bit(mask, 4) || (bit(mask, 0) && model === 'GV350M')) && fields.index < fields.values.length - 2) {
    const count = int(fields.next());
    for (let sensor = 1; sensor <= count; sensor++) {
      fields.skip(); // type
      if (model === 'GV350M') {
        fields.skip(); // uart id
        if (bit(mask, 0)) report.set('fuel', int(fields.next(), 16));
      }
      if (bit(mask, 3)) report.set('fuel', double(fields.next()));
      if (bit(mask, 4)) fields.skip(); // volume
    }
  }
  if (bit(mask, 7) && model !== 'GL320M') {
    const count = int(fields.next());
    for (let sensor = 1; sensor <= count; sensor++) {
      fields.skip(); // serial number
      const type = int(fields.next());
      fields.skip(type === 2 ? 2 : 1); // temperature, humidity
    }
  }
  if (bit(mask, 8) && model !== 'GL320M') {
    const count = int(fields.next());
    for (let tag = 1; tag <= count; tag++) {
      fields.skip(model.startsWith('GV600M') ? 5 : 4); // index, type, model, [raw length,] raw data
      const tagMask = int(fields.next(), 16);
      if (bit(tagMask, 0)) fields.skip(); // name
      if (bit(tagMask, 1)) report.set(`tag${tag}Id`, fields.next());
      if (bit(tagMask, 2)) fields.skip(); // status
      if (bit(tagMask, 3)) fields.skip(); // battery level
      if (bit(tagMask, 4)) {
        const temperature = fields.next();
        if (temperature !== '') report.set(`tag${tag}Temp`, double(temperature));
      }
      if (bit(tagMask, 5)) {
        const humidity = fields.next();
        if (humidity !== '') report.set(`tag${tag}Humidity`, int(humidity));
      }
      for (const skipped of [7, 8, 9, 10, 11, 12]) if (bit(tagMask, skipped)) fields.skip();
      if (bit(tagMask, 13)) {
        const battery = fields.next();
        if (battery !== '') report.set(`tag${tag}Battery`, int(battery));
      }
      if (bit(tagMask, 14)) fields.skip(); // relay
    }
  }
}

/** `GTIGN`/`GTIGF`/`GTVGN`/`GTVGF`: ignition on or off, with the fix, hours and odometer. */
function decodeIgnition(values: readonly string[], type: string): DecodedMessage {
  const { fields, uniqueId, model } = openReport(values);
  const report = new Report();
  fields.skip(model === 'CV200' ? 4 : 2); // device name, [reserved, report type,] duration
  readLocation(report, model, fields);
  report.set('ignition', type.includes('GN'));
  report.set('hours', hours(fields.next()));
  const odometer = fields.next();
  if (odometer !== '') report.set('odometer', double(odometer) * 1000);
  report.deviceTime = fields.sendTime();
  return message(uniqueId, [report]);
}

/** `+RESP:GTLBS`: cell towers only, merged into the last known position. */
function decodeLbs(values: readonly string[]): DecodedMessage {
  const fields = new Fields(values, 2);
  const uniqueId = fields.next();
  const report = new Report();
  fields.skip(3); // device name, trigger type, report type
  report.set('batteryLevel', int(fields.next()));
  fields.skip(5); // reserved, motion status, reserved, reserved, expansion mask
  for (let cell = 0; cell <= 6; cell++) {
    if (fields.peek(1) !== '') {
      int(fields.next());
      int(fields.next());
      int(fields.next(), 16);
      int(fields.next(), 16);
      int(fields.next());
    } else {
      fields.skip(5);
    }
    fields.skip(); // reserved
  }
  report.network = true;
  report.deviceTime = fields.sendTime();
  return message(uniqueId, [report]);
}

/** `+RESP:GTDAT`: data passed through from a serial device, with the fix. */
function decodeDat(values: readonly string[]): DecodedMessage {
  const { fields, uniqueId, model } = openReport(values);
  const report = new Report();
  fields.skip(4); // device name, report type, reserved, reserved
  report.set('data', fields.next());
  readLocation(report, model, fields);
  report.deviceTime = fields.sendTime();
  return message(uniqueId, [report]);
}

const CAN_FIELDS: readonly (readonly [bit: number, read: (report: Report, value: string) => void])[] = [
  [0, (report, value) => report.set('vin', value)],
  [1, (report, value) => value !== '' && report.set('ignition', int(value) > 0)],
  [2, (report, value) => value !== '' && report.set('obdOdometer', int(value.slice(1)))],
  [3, (report, value) => value !== '' && report.set('fuelUsed', double(value))],
  [5, (report, value) => value !== '' && report.set('rpm', int(value))],
  [4, (report, value) => value !== '' && report.set('obdSpeed', int(value))],
  [6, (report, value) => value !== '' && report.set('coolantTemp', int(value))],
  [7, (report, value) => value.startsWith('L/H') && report.set('fuelConsumption', double(value.slice(3)))],
  [8, (report, value) => value !== '' && report.set('fuel', double(value.slice(1)))],
  [9, (report, value) => value !== '' && report.set('range', long(value) * 100)],
  [10, (report, value) => value !== '' && report.set('throttle', int(value))],
  [11, (report, value) => value !== '' && report.set('hours', Math.trunc(double(value) * 3_600_000))],
  [12, (report, value) => value !== '' && report.set('drivingTime', double(value))],
  [13, (report, value) => value !== '' && report.set('idleHours', double(value))],
  [14, (report, value) => value !== '' && report.set('idleFuelConsumption', double(value))],
  [15, (report, value) => value !== '' && report.set('axleWeight', int(value))],
  [16, (report, value) => value !== '' && report.set('tachographInfo', int(value, 16))],
  [17, (report, value) => value !== '' && report.set('indicators', int(value, 16))],
  [18, (report, value) => value !== '' && report.set('lights', int(value, 16))],
  [19, (report, value) => value !== '' && report.set('doors', int(value, 16))],
  [20, (report, value) => value !== '' && report.set('vehicleOverspeed', double(value))],
  [21, (report, value) => value !== '' && report.set('engineOverspeed', double(value))],
];

const CAN_EXTENDED_FIELDS: Partial<Record<number, (report: Report, value: string) => void>> = {
  0: (report, value) => report.set('adBlueLevel', double(value.slice(1))),
  1: (report, value) => report.set('axleWeight1', int(value)),
  2: (report, value) => report.set('axleWeight3', int(value)),
  3: (report, value) => report.set('axleWeight4', int(value)),
  7: (report, value) => report.set('adc1', int(value) / 1000),
  15: (report, value) => report.set('driver1Card', value),
  16: (report, value) => report.set('driver2Card', value),
  17: (report, value) => report.set('driver1Name', value),
  18: (report, value) => report.set('driver2Name', value),
  19: (report, value) => report.set('registration', value),
};

/** `+RESP:GTCAN`: the vehicle bus fields the report mask announces, then (bit 30) the fix. */
function decodeCan(values: readonly string[]): DecodedMessage {
  const { fields, uniqueId, model } = openReport(values);
  const report = new Report();
  fields.skip(3); // device name, report type, bus state
  const mask = long(fields.next(), 16);
  for (const [index, read] of CAN_FIELDS) if (bit(mask, index)) read(report, fields.next());
  const modelBits = model === 'GV350M' ? 3 : model === 'GV355CEU' ? 7 : 0;
  for (let index = 22; index < 22 + modelBits; index++) if (bit(mask, index)) fields.skip();
  let extended = 0;
  if (bit(mask, 29)) {
    const text = fields.next();
    if (text !== '') extended = long(text, 16);
  }
  for (let index = 0; index <= 30; index++) {
    if (!bit(extended, index)) continue;
    const read = CAN_EXTENDED_FIELDS[index];
    const value = fields.next();
    if (read && value !== '') read(report, value);
  }
  let canMask = 0;
  if (bit(extended, 31)) {
    const text = fields.next();
    if (text !== '') canMask = long(text, 16);
  }
  for (let index = 0; index <= 2; index++) if (bit(canMask, index)) fields.skip();
  if (model !== 'GV355CEU' && bit(mask, 30)) {
    while (fields.peek() === '') fields.skip();
    report.valid = int(fields.next()) > 0;
    if (fields.peek() !== '') {
      report.speed = knotsFromKmh(double(fields.next()));
      report.course = int(fields.next());
      report.altitude = double(fields.next());
      const longitude = double(fields.next());
      const latitude = double(fields.next());
      const valid = report.valid;
      report.locate(longitude, latitude, time(fields.next()));
      report.valid = valid;
    }
  }
  report.deviceTime = fields.sendTime();
  return message(uniqueId, [report]);
}

// --- The fallback: any report holding a fix where Traccar's scan finds one --------------------------------------

const COORDINATE = /^-?\d{1,3}\.\d{6}$/;
const BASIC_ALARMS: Record<string, string> = {
  SOS: 'sos', SPD: 'overspeed', TOW: 'tow', IDL: 'idle', PNA: 'powerOn', PFA: 'powerOff', EPN: 'powerRestored', MPN: 'powerRestored',
  EPF: 'powerCut', MPF: 'powerCut', BPL: 'lowBattery', STT: 'movement', SWG: 'geofence', TMP: 'temperature', TEM: 'temperature',
  JDR: 'jamming', JDS: 'jamming',
};
const HARSH_BEHAVIOUR = ['hardBraking', 'hardAcceleration', 'hardCornering', 'hardBraking', 'hardAcceleration'];

function decodeBasic(values: readonly string[], type: string): DecodedMessage | null {
  const fields = new Fields(values, 2);
  const uniqueId = fields.next();
  const report = new Report();
  const reportTypeText = fields.peek(2);
  if (/^[0-9a-fA-F]{1,2}$/.test(reportTypeText)) {
    const reportType = int(reportTypeText, 16);
    if (type === 'NMR') report.set('motion', reportType === 1);
    else if (type === 'DIS') report.set(`in${Math.floor(reportType / 0x10)}`, reportType % 0x10 === 1);
    else if (type === 'IGL') report.set('ignition', reportType % 0x10 === 1);
    else if (type === 'HBM') addAlarm(report.attributes, HARSH_BEHAVIOUR[reportType % 0x10]);
  }
  let located = false;
  while (fields.index + 2 < values.length) {
    if (COORDINATE.test(fields.peek()) && COORDINATE.test(fields.peek(1))) {
      fields.skip(-4);
      report.set('hdop', int(fields.next()));
      report.speed = knotsFromKmh(double(fields.next()));
      report.course = int(fields.next());
      report.altitude = double(fields.next());
      const longitude = double(fields.next());
      const latitude = double(fields.next());
      report.locate(longitude, latitude, time(fields.next()));
      located = true;
      break;
    }
    fields.skip();
  }
  if (!located) fields.index = 2;
  while (fields.index + 3 < values.length) {
    const [mcc, mnc, lac, cid] = [fields.peek(), fields.peek(1), fields.peek(2), fields.peek(3)];
    if (/^\d{4}$/.test(mcc) && /^\d{4}$/.test(mnc) && /^[0-9a-fA-F]{4}$/.test(lac) && /^[0-9a-fA-F]{4,8}$/.test(cid)) {
      report.network = true;
      break;
    }
    fields.skip();
  }
  const sendTime = fields.at(values.length - 2);
  if (sendTime.length === 14) {
    report.deviceTime = time(sendTime);
    const battery = fields.at(values.length - 3);
    if (located && /^\d{1,3}$/.test(battery)) report.set('batteryLevel', int(battery));
  }
  addAlarm(report.attributes, BASIC_ALARMS[type]);
  if (Object.keys(report.attributes).length === 0 && !report.network) return null;
  return message(uniqueId, [report]);
}

// --- Command answers ---------------------------------------------------------------------------------------------

/** `+ACK:GTHBD` is a heartbeat, answered; any other `+ACK:` answers a command and becomes its result. */
function decodeAck(values: readonly string[]): DecodedMessage {
  const fields = new Fields(values, 0);
  const uniqueId = fields.at(2);
  if (values[0] === '+ACK:GTHBD') {
    return { uniqueId, positions: [], statuses: [], ack: Buffer.from(`+SACK:GTHBD,${fields.at(1)},${fields.at(values.length - 1)}$`, 'latin1') };
  }
  return { uniqueId, positions: [], statuses: [{ deviceTime: time(fields.at(values.length - 2)), attributes: { result: values[0] } }] };
}

function decodeText(frame: Buffer): DecodedMessage {
  const sentence = frame.toString('latin1').replace(/[$\0]$/, '');
  const typeIndex = sentence.indexOf(':GT');
  if (typeIndex < 0) return { positions: [], statuses: [] };
  // Java's split drops trailing empty fields; Traccar's index arithmetic counts on it.
  const values = sentence.split(',');
  while (values.length > 1 && values.at(-1) === '') values.pop();
  const type = sentence.slice(typeIndex + 3, typeIndex + 6);
  if (sentence.startsWith('+ACK')) return decodeAck(values);
  const result = decodeType(sentence, values, type) ?? decodeBasic(values, type);
  if (!result) return { positions: [], statuses: [] };
  for (const report of [...result.positions, ...result.statuses]) report.attributes['type'] = type;
  return result;
}

function decodeType(sentence: string, values: readonly string[], type: string): DecodedMessage | null {
  switch (type) {
    case 'INF': return decodeInf(values);
    case 'OBD': return decodeWith(OBD, sentence, readObd);
    case 'CAN': return decodeCan(values);
    case 'CTN': case 'FRI': case 'GEO': case 'RTL': case 'DOG': case 'STR': return decodeFri(sentence);
    case 'ERI': return decodeEri(values);
    case 'IGN': case 'IGF': case 'VGN': case 'VGF': return decodeIgnition(values, type);
    case 'LSW': case 'TSW':
      return decodeWith(LSW, sentence, (report, groups) => {
        report.set(sentence.includes('LSW') ? 'in1' : 'in2', int(groups.next()) === 1);
        readLocationGroups(report, groups);
        readDeviceTime(report, groups);
      });
    case 'IDA':
      return decodeWith(IDA, sentence, (report, groups) => {
        report.set('driverUniqueId', groups.next());
        readLocationGroups(report, groups);
        report.set('odometer', double(groups.next()) * 1000);
        readDeviceTime(report, groups);
      });
    case 'WIF':
      return decodeWith(WIF, sentence, (report, groups) => {
        groups.skip(2); // count, access points: not kept
        report.network = true;
        report.set('batteryLevel', groups.int());
      });
    case 'GSM': return decodeWith(GSM, sentence, readGsm);
    case 'VER':
      return decodeWith(VER, sentence, (report, groups) => {
        report.set('deviceType', groups.next());
        report.set('versionFw', groups.hexInt());
        report.set('versionHw', groups.hexInt());
        report.deviceTime = groups.has(6) ? groups.time() : null;
      });
    case 'PNA': case 'PFA':
      return decodeWith(PNA, sentence, (report) => addAlarm(report.attributes, sentence.includes('PNA') ? 'powerOn' : 'powerOff'));
    case 'DAR':
      return decodeWith(DAR, sentence, (report, groups) => {
        const warningType = groups.int();
        const fatigueDegree = groups.int();
        if (warningType === 1) {
          addAlarm(report.attributes, 'fatigueDriving');
          report.set('fatigueDegree', fatigueDegree);
        } else {
          report.set('warningType', warningType);
        }
        readLocationGroups(report, groups);
        readDeviceTime(report, groups);
      });
    case 'DTT': return decodeWith(DTT, sentence, readDtt);
    case 'BAA': return decodeWith(BAA, sentence, readBaa);
    case 'BID': return decodeWith(BID, sentence, readBid);
    case 'LSA':
      return decodeWith(LSA, sentence, (report, groups) => {
        readLocationGroups(report, groups);
        report.set('lightLevel', groups.int());
        report.set('batteryLevel', groups.int());
        report.set('temp1', groups.double());
        readDeviceTime(report, groups);
      });
    case 'LBS': return decodeLbs(values);
    case 'DAT': return decodeDat(values);
    default: return null;
  }
}

function decode(frame: Buffer): DecodedMessage {
  return isBinary(frame, 0) ? decodeGl200Binary(frame) : decodeText(frame);
}

// --- Commands ----------------------------------------------------------------------------------------------------

/** The password Queclink devices ship with, which Traccar's encoder is configured with unless told otherwise. */
export const GL200_DEVICE_PASSWORD = 'gl200';

const GL200_COMMANDS: Partial<Record<string, string>> = {
  positionSingle: `AT+GTRTO=${GL200_DEVICE_PASSWORD},1,,,,,,FFFF$`,
  engineStop: `AT+GTOUT=${GL200_DEVICE_PASSWORD},1,,,0,0,0,0,0,0,0,,,,,,,FFFF$`,
  engineResume: `AT+GTOUT=${GL200_DEVICE_PASSWORD},0,,,0,0,0,0,0,0,0,,,,,,,FFFF$`,
  rebootDevice: `AT+GTRTO=${GL200_DEVICE_PASSWORD},3,,,,,,FFFF$`,
};

export const gl200Commands = commandEncoder(
  ['custom', 'positionSingle', 'engineStop', 'engineResume', 'rebootDevice'],
  (command: DeviceCommand): string => {
    if (command.type === 'custom') {
      const data = commandText(command);
      if (!/^AT\+GT[A-Z]{3}=[^$\r\n]*\$?$/.test(data)) throw new ProtocolError('gl200: custom data must be one AT+GT command');
      return data.endsWith('$') ? data : `${data}$`;
    }
    const text = GL200_COMMANDS[command.type];
    if (text === undefined) throw new ProtocolError(`gl200: ${command.type} is not supported`);
    return text;
  },
  (text) => Buffer.from(text, 'latin1'),
);

export const gl200Protocol: TcpProtocol = {
  name: 'gl200',
  splitFrames,
  decode: (frame: Buffer, _state: ConnectionState) => decode(frame),
  commands: gl200Commands,
};
