// The device side of the protocols: frames as trackers write them, for the simulator and the bench.
// Each encoder is the inverse of its decoder for the fields it writes; tests decode what they encode.

import { crc16Ibm, crc16Kermit, crc16Modbus, crc16X25 } from '../../services/tracking/protocols/checksum.ts';
import { JT808_MESSAGES, jt808Header, jt808Message } from '../../services/tracking/protocols/jt808/decoder.ts';
import { watchFrame } from '../../services/tracking/protocols/watch/decoder.ts';

/** One report as a simulated tracker sends it. Speed in knots, altitude in metres, odometer in metres. */
export interface DeviceFix {
  time: Date;
  latitude: number;
  longitude: number;
  altitude: number;
  speed: number;
  course: number;
  valid: boolean;
  satellites?: number;
  ignition?: boolean;
  motion?: boolean;
  odometer?: number;
  /** Raises the protocol's SOS alarm. */
  sos?: boolean;
}

const KMH_PER_KNOT = 1.852;

function kmh(knots: number): number {
  return Math.round(knots * KMH_PER_KNOT);
}

// --- Teltonika -------------------------------------------------------------------------------------------------

/** `<length:2> <IMEI ASCII>`: the first frame of every connection; the server answers 0x01 (accepted) or 0x00. */
export function teltonikaHandshake(imei: string): Buffer {
  const text = Buffer.from(imei, 'latin1');
  const frame = Buffer.alloc(2 + text.length);
  frame.writeUInt16BE(text.length, 0);
  text.copy(frame, 2);
  return frame;
}

/** IO elements of a Codec 8 record, grouped by value size as the codec writes them. */
function teltonikaIo(fix: DeviceFix): { one: [number, number][]; four: [number, number][] } {
  const one: [number, number][] = [];
  const four: [number, number][] = [];
  if (fix.ignition !== undefined) one.push([239, fix.ignition ? 1 : 0]);
  if (fix.motion !== undefined) one.push([240, fix.motion ? 1 : 0]);
  if (fix.sos) one.push([236, 1]);
  if (fix.odometer !== undefined) four.push([16, Math.max(0, Math.round(fix.odometer))]);
  return { one, four };
}

function teltonikaRecord(fix: DeviceFix): Buffer {
  const { one, four } = teltonikaIo(fix);
  // GPS element (24), event id, IO count, then each size group: its count and its (id, value) pairs.
  const record = Buffer.alloc(24 + 2 + (1 + one.length * 2) + 1 + (1 + four.length * 5) + 1);
  let offset = record.writeBigUInt64BE(BigInt(fix.time.getTime()), 0);
  offset = record.writeUInt8(0, offset); // priority: low
  offset = record.writeInt32BE(Math.round(fix.longitude * 1e7), offset);
  offset = record.writeInt32BE(Math.round(fix.latitude * 1e7), offset);
  offset = record.writeInt16BE(Math.round(fix.altitude), offset);
  offset = record.writeUInt16BE(Math.round(fix.course) % 360, offset);
  offset = record.writeUInt8(fix.valid ? (fix.satellites ?? 9) : 0, offset);
  offset = record.writeUInt16BE(kmh(fix.speed), offset);
  offset = record.writeUInt8(0, offset); // event IO id: periodic record
  offset = record.writeUInt8(one.length + four.length, offset);
  offset = record.writeUInt8(one.length, offset);
  for (const [id, value] of one) offset = record.writeUInt8(value, record.writeUInt8(id, offset));
  offset = record.writeUInt8(0, offset); // 2-byte elements
  offset = record.writeUInt8(four.length, offset);
  for (const [id, value] of four) offset = record.writeUInt32BE(value, record.writeUInt8(id, offset));
  record.writeUInt8(0, offset); // 8-byte elements
  return record;
}

/** A Codec 8 AVL packet carrying the fixes as records (1 to 255); the server acknowledges with the count. */
export function teltonikaAvlPacket(fixes: readonly DeviceFix[]): Buffer {
  if (fixes.length === 0 || fixes.length > 255) throw new RangeError('a Teltonika packet carries 1 to 255 records');
  const data = Buffer.concat([Buffer.from([0x08, fixes.length]), ...fixes.map(teltonikaRecord), Buffer.from([fixes.length])]);
  const frame = Buffer.alloc(12 + data.length);
  frame.writeUInt32BE(data.length, 4);
  data.copy(frame, 8);
  frame.writeUInt32BE(crc16Ibm(data), 8 + data.length);
  return frame;
}

// --- GT06 ------------------------------------------------------------------------------------------------------

function gt06Frame(type: number, body: Buffer, serial: number): Buffer {
  const frame = Buffer.alloc(10 + body.length);
  frame.writeUInt16BE(0x7878, 0);
  frame.writeUInt8(5 + body.length, 2);
  frame.writeUInt8(type, 3);
  body.copy(frame, 4);
  frame.writeUInt16BE(serial & 0xffff, 4 + body.length);
  frame.writeUInt16BE(crc16X25(frame.subarray(2, 6 + body.length)), 6 + body.length);
  frame.writeUInt16BE(0x0d0a, 8 + body.length);
  return frame;
}

/** Login (0x01): the IMEI as 8 BCD bytes with a leading 0; the server acknowledges it only for a known device. */
export function gt06Login(imei: string, serial: number): Buffer {
  if (!/^\d{15}$/.test(imei)) throw new RangeError('a GT06 IMEI has 15 digits');
  return gt06Frame(0x01, Buffer.from(`0${imei}`, 'hex'), serial);
}

/** GPS + LBS (0x22, UTC): the fix, a cell tower, ACC (ignition) and the odometer; an SOS fix is sent as 0x16 with its alarm. */
export function gt06Location(fix: DeviceFix, serial: number): Buffer {
  const gps = Buffer.alloc(18);
  const time = fix.time;
  gps.writeUInt8(time.getUTCFullYear() - 2000, 0);
  gps.writeUInt8(time.getUTCMonth() + 1, 1);
  gps.writeUInt8(time.getUTCDate(), 2);
  gps.writeUInt8(time.getUTCHours(), 3);
  gps.writeUInt8(time.getUTCMinutes(), 4);
  gps.writeUInt8(time.getUTCSeconds(), 5);
  gps.writeUInt8(0xc0 | Math.min(fix.satellites ?? 9, 15), 6);
  gps.writeUInt32BE(Math.round(Math.abs(fix.latitude) * 1_800_000), 7);
  gps.writeUInt32BE(Math.round(Math.abs(fix.longitude) * 1_800_000), 11);
  gps.writeUInt8(Math.min(kmh(fix.speed), 255), 15);
  let flags = Math.round(fix.course) % 360;
  if (fix.latitude >= 0) flags |= 0x0400;
  if (fix.longitude < 0) flags |= 0x0800;
  if (fix.valid) flags |= 0x1000;
  gps.writeUInt16BE(flags, 16);
  const cell = Buffer.from([0x01, 0xcc, 0x00, 0x28, 0x7d, 0x00, 0x1f, 0xb8]); // MCC 460, MNC 0, LAC, cell id
  if (fix.sos) {
    // Terminal info: ignition bit and SOS (4) in bits 3-5; voltage level 6, GSM signal 4, alarm 01 (sos), language 02.
    const status = Buffer.from([(fix.ignition ? 0x02 : 0) | (4 << 3), 6, 4, 0x01, 0x02]);
    return gt06Frame(0x16, Buffer.concat([gps, Buffer.from([cell.length]), cell, status]), serial);
  }
  const tail = Buffer.alloc(3 + (fix.odometer === undefined ? 0 : 4));
  tail.writeUInt8(fix.ignition ? 1 : 0, 0);
  tail.writeUInt8(0, 1); // upload mode: timed
  tail.writeUInt8(0, 2); // not re-uploaded
  if (fix.odometer !== undefined) tail.writeUInt32BE(Math.max(0, Math.round(fix.odometer)), 3);
  return gt06Frame(0x22, Buffer.concat([gps, cell, tail]), serial);
}

// --- H02 -------------------------------------------------------------------------------------------------------

function twoDigits(value: number): string {
  return String(value).padStart(2, '0');
}

function h02Coordinate(value: number, degreeDigits: number): string {
  const absolute = Math.abs(value);
  const degrees = Math.floor(absolute);
  const minutes = (absolute - degrees) * 60;
  return String(degrees).padStart(degreeDigits, '0') + minutes.toFixed(4).padStart(7, '0');
}

/** `ddmm.mmmm,N,dddmm.mmmm,E`, the coordinate fields of the NMEA-like text protocols. */
function degreeMinuteFields(fix: DeviceFix): string[] {
  return [
    h02Coordinate(fix.latitude, 2), fix.latitude >= 0 ? 'N' : 'S',
    h02Coordinate(fix.longitude, 3), fix.longitude >= 0 ? 'E' : 'W',
  ];
}

/** hhmmss of the fix, UTC. */
function utcClock(time: Date): string {
  return twoDigits(time.getUTCHours()) + twoDigits(time.getUTCMinutes()) + twoDigits(time.getUTCSeconds());
}

/** A V1 location: `*HQ,<id>,V1,hhmmss,A,ddmm.mmmm,N,dddmm.mmmm,E,speed,course,ddmmyy,status#`; the server echoes a V4. */
export function h02Location(id: string, fix: DeviceFix): Buffer {
  const time = fix.time;
  // The status word is active-low: every bit set means "no alarm"; bit 10 set means ignition on, bit 1 cleared SOS.
  let status = 0xfffffbff;
  if (fix.ignition) status |= 1 << 10;
  if (fix.sos) status &= ~(1 << 1);
  const fields = [
    '*HQ',
    id,
    'V1',
    utcClock(time),
    fix.valid ? 'A' : 'V',
    ...degreeMinuteFields(fix),
    fix.speed.toFixed(2),
    String(Math.round(fix.course) % 360),
    twoDigits(time.getUTCDate()) + twoDigits(time.getUTCMonth() + 1) + twoDigits(time.getUTCFullYear() % 100),
    (status >>> 0).toString(16).toUpperCase().padStart(8, '0'),
  ];
  return Buffer.from(`${fields.join(',')}#`, 'latin1');
}

// --- OsmAnd ----------------------------------------------------------------------------------------------------

/** The query string of an OsmAnd report (`?id=…&lat=…`), as the Traccar Client's classic mode sends it. */
export function osmAndQuery(id: string, fix: DeviceFix): string {
  const query = new URLSearchParams({
    id,
    lat: String(fix.latitude),
    lon: String(fix.longitude),
    timestamp: String(Math.floor(fix.time.getTime() / 1000)),
    speed: String(fix.speed),
    bearing: String(fix.course),
    altitude: String(fix.altitude),
    valid: String(fix.valid),
  });
  if (fix.ignition !== undefined) query.set('ignition', String(fix.ignition));
  if (fix.motion !== undefined) query.set('motion', String(fix.motion));
  if (fix.odometer !== undefined) query.set('odometer', String(Math.round(fix.odometer)));
  if (fix.sos) query.set('alarm', 'sos');
  return query.toString();
}

// --- JT/T 808 --------------------------------------------------------------------------------------------------

/** JT808 clocks run on China Standard Time. */
const JT808_CLOCK_OFFSET_MS = 8 * 3_600_000;

function bcdTime(time: Date, offsetMs: number): Buffer {
  const local = new Date(time.getTime() + offsetMs);
  const digits = [local.getUTCFullYear() % 100, local.getUTCMonth() + 1, local.getUTCDate(), local.getUTCHours(), local.getUTCMinutes(), local.getUTCSeconds()]
    .map(twoDigits)
    .join('');
  return Buffer.from(digits, 'hex');
}

/** Terminal registration (0x0100) of a 12-digit terminal id; the server answers 0x8100 with the auth code. */
export function jt808Register(terminalId: string, serial: number): Buffer {
  const body = Buffer.alloc(2 + 2 + 5 + 20 + 7 + 1);
  body.write('TRKSM', 4, 'latin1'); // manufacturer
  body.write('SIM808', 9, 'latin1'); // model
  body.write(terminalId.slice(-7), 29, 'latin1');
  return jt808Message(jt808Header(terminalId), JT808_MESSAGES.register, Buffer.concat([body, Buffer.from('SIM', 'latin1')]), serial);
}

/** Terminal authentication (0x0102) with the code the registration answer gave; answered 0x8001. */
export function jt808Auth(terminalId: string, authCode: string, serial: number): Buffer {
  return jt808Message(jt808Header(terminalId), JT808_MESSAGES.auth, Buffer.from(authCode, 'latin1'), serial);
}

/** The 28-byte basic location with odometer (0x01, 0.1 km) and satellites (0x31) items. */
function jt808LocationRecord(fix: DeviceFix): Buffer {
  const basic = Buffer.alloc(28);
  basic.writeUInt32BE(fix.sos ? 1 : 0, 0); // alarm word: bit 0 emergency
  const status = (fix.ignition ? 1 : 0) | (fix.valid ? 2 : 0) | (fix.latitude < 0 ? 4 : 0) | (fix.longitude < 0 ? 8 : 0);
  basic.writeUInt32BE(status, 4);
  basic.writeUInt32BE(Math.round(Math.abs(fix.latitude) * 1e6), 8);
  basic.writeUInt32BE(Math.round(Math.abs(fix.longitude) * 1e6), 12);
  basic.writeInt16BE(Math.round(fix.altitude), 16);
  basic.writeUInt16BE(Math.round(fix.speed * KMH_PER_KNOT * 10), 18);
  basic.writeUInt16BE(Math.round(fix.course) % 360, 20);
  bcdTime(fix.time, JT808_CLOCK_OFFSET_MS).copy(basic, 22);
  const items = [Buffer.from([0x31, 1, fix.satellites ?? 9])];
  if (fix.odometer !== undefined) {
    const odometer = Buffer.from([0x01, 4, 0, 0, 0, 0]);
    odometer.writeUInt32BE(Math.max(0, Math.round(fix.odometer / 100)), 2);
    items.push(odometer);
  }
  return Buffer.concat([basic, ...items]);
}

/** Location report (0x0200); the server answers a general response (0x8001) echoing the serial. */
export function jt808Location(terminalId: string, fix: DeviceFix, serial: number): Buffer {
  return jt808Message(jt808Header(terminalId), JT808_MESSAGES.location, jt808LocationRecord(fix), serial);
}

/** Batch of stored locations (0x0704, type 1 "blind area"); answered once with 0x8001. */
export function jt808LocationBatch(terminalId: string, fixes: readonly DeviceFix[], serial: number): Buffer {
  const records = fixes.map(jt808LocationRecord);
  const head = Buffer.alloc(3);
  head.writeUInt16BE(records.length, 0);
  head.writeUInt8(1, 2);
  const parts = records.flatMap((record) => {
    const length = Buffer.alloc(2);
    length.writeUInt16BE(record.length);
    return [length, record];
  });
  return jt808Message(jt808Header(terminalId), JT808_MESSAGES.locationBatch, Buffer.concat([head, ...parts]), serial);
}

// --- GPS103 (Coban) --------------------------------------------------------------------------------------------

/** The log-on request `##,imei:<imei>,A;`; the server answers LOAD. */
export function gps103Login(imei: string): Buffer {
  return Buffer.from(`##,imei:${imei},A;`, 'latin1');
}

/** The heartbeat, the IMEI alone; the server answers ON. */
export function gps103Heartbeat(imei: string): Buffer {
  return Buffer.from(`${imei};`, 'latin1');
}

/**
 * A `tracker` report (`help me` for SOS, answered `**,imei:<imei>,E;`; another keyword, such as a command's answer), its clock in UTC:
 * `imei:<imei>,tracker,yymmddhhmmss,,F,hhmmss.000,A,ddmm.mmmm,N,dddmm.mmmm,E,<knots>,<course>,<altitude>,<acc>,<door>;`
 */
export function gps103Location(imei: string, fix: DeviceFix, keyword = 'tracker'): Buffer {
  const time = fix.time;
  const hhmmss = utcClock(time);
  const date = twoDigits(time.getUTCFullYear() % 100) + twoDigits(time.getUTCMonth() + 1) + twoDigits(time.getUTCDate());
  const fields = [
    `imei:${imei}`,
    fix.sos ? 'help me' : keyword,
    date + hhmmss,
    '',
    'F',
    `${hhmmss}.000`,
    fix.valid ? 'A' : 'V',
    ...degreeMinuteFields(fix),
    fix.speed.toFixed(2),
    String(Math.round(fix.course) % 360),
    String(Math.round(fix.altitude)),
    fix.ignition === undefined ? '' : fix.ignition ? '1' : '0',
  ];
  return Buffer.from(`${fields.join(',')};`, 'latin1');
}

// --- TK103 -----------------------------------------------------------------------------------------------------

/** The handshake BP00 of a 12-character id; the server answers `(<id>AP01HSO)`. */
export function tk103Login(id: string): Buffer {
  return Buffer.from(`(${id}BP00${id}HSO)`, 'latin1');
}

/**
 * A compact location: BR00 (not answered), BP05 (the login with a location, answered `(<id>AP05)`), or BO01 with
 * the SOS alarm. `(<id>BR00yymmddA2233.1870N11354.3067E<km/h 5>hhmmss<course 6><charge><acc>000000L<odometer hex>)`.
 */
export function tk103Location(id: string, fix: DeviceFix, command: 'BR00' | 'BP05' = 'BR00'): Buffer {
  const time = fix.time;
  const date = twoDigits(time.getUTCFullYear() % 100) + twoDigits(time.getUTCMonth() + 1) + twoDigits(time.getUTCDate());
  const hhmmss = utcClock(time);
  const type = fix.sos ? 'BO012' : command === 'BP05' ? `BP05${id.padStart(15, '0')}` : 'BR00';
  const odometer = Math.max(0, Math.round(fix.odometer ?? 0)).toString(16).toUpperCase().padStart(8, '0');
  const body = [
    date,
    fix.valid ? 'A' : 'V',
    ...degreeMinuteFields(fix),
    Math.min(999.9, fix.speed * KMH_PER_KNOT).toFixed(1).padStart(5, '0'),
    hhmmss,
    (Math.round(fix.course * 100) / 100 % 360).toFixed(2).padStart(6, '0'),
    `0${fix.ignition ? 1 : 0}000000`,
    `L${odometer}`,
  ].join('');
  return Buffer.from(`(${id}${type}${body})`, 'latin1');
}

// --- Wialon IPS ------------------------------------------------------------------------------------------------

/** The login line `#L#<imei>;NA`; the server answers `#AL#1` for a known device. */
export function wialonLogin(imei: string): Buffer {
  return Buffer.from(`#L#${imei};NA\r\n`, 'latin1');
}

/** An extended data line (`#D#`, answered `#AD#1`), speed in km/h, ignition and SOS as parameters. */
export function wialonData(fix: DeviceFix): Buffer {
  const time = fix.time;
  const date = twoDigits(time.getUTCDate()) + twoDigits(time.getUTCMonth() + 1) + twoDigits(time.getUTCFullYear() % 100);
  const hhmmss = utcClock(time);
  const parameters = [`sos:1:${fix.sos ? 1 : 0}`];
  if (fix.ignition !== undefined) parameters.push(`ignition:3:${fix.ignition}`);
  if (fix.odometer !== undefined) parameters.push(`odometer:2:${Math.round(fix.odometer)}`);
  const fields = [
    date, hhmmss,
    ...degreeMinuteFields(fix),
    (fix.speed * KMH_PER_KNOT).toFixed(1), String(Math.round(fix.course) % 360), fix.altitude.toFixed(1),
    String(fix.valid ? (fix.satellites ?? 9) : 0), 'NA', 'NA', 'NA', 'NA', 'NA', parameters.join(','),
  ];
  return Buffer.from(`#D#${fields.join(';')}\r\n`, 'latin1');
}

// --- Watch -----------------------------------------------------------------------------------------------------

/** The link message LK, bare or with steps, tumbles and battery %; the server answers `[3G*<id>*0002*LK]`. */
export function watchLink(id: string, batteryLevel?: number): Buffer {
  return watchFrame('3G', id, undefined, batteryLevel === undefined ? 'LK' : `LK,0,0,${batteryLevel}`);
}

/** A location (UD, not answered; AL with the SOS status bit when `sos`, answered AL), decimal degrees, km/h. */
export function watchLocation(id: string, fix: DeviceFix): Buffer {
  const time = fix.time;
  const fields = [
    fix.sos ? 'AL' : 'UD',
    twoDigits(time.getUTCDate()) + twoDigits(time.getUTCMonth() + 1) + twoDigits(time.getUTCFullYear() % 100),
    utcClock(time),
    fix.valid ? 'A' : 'V',
    Math.abs(fix.latitude).toFixed(6), fix.latitude >= 0 ? 'N' : 'S',
    Math.abs(fix.longitude).toFixed(6), fix.longitude >= 0 ? 'E' : 'W',
    (fix.speed * KMH_PER_KNOT).toFixed(2), String(Math.round(fix.course) % 360), fix.altitude.toFixed(1),
    String(fix.satellites ?? 9), '100', '80', '0', '0',
    (fix.sos ? 0x10000 : 0).toString(16).padStart(8, '0'),
    '0', '0',
  ];
  return watchFrame('3G', id, undefined, fields.join(','));
}

// --- Meitrack --------------------------------------------------------------------------------------------------

/** A Meitrack frame: `$$<flag><length>,<imei>,<content>*<checksum>\r\n`, the length counted from the first comma. */
function meitrackFrame(imei: string, content: string): Buffer {
  const tail = `,${imei},${content}*`;
  const length = tail.length + 4; // checksum and CRLF
  const head = `$$A${length}${tail}`;
  const sum = [...Buffer.from(head, 'latin1')].reduce((total, byte) => (total + byte) & 0xff, 0);
  return Buffer.from(`${head}${sum.toString(16).toUpperCase().padStart(2, '0')}\r\n`, 'latin1');
}

/** An AAA report (event 35 "track by interval", 1 for SOS), not answered; speed in km/h, odometer in metres. */
export function meitrackLocation(imei: string, fix: DeviceFix): Buffer {
  const time = fix.time;
  const stamp = [time.getUTCFullYear() % 100, time.getUTCMonth() + 1, time.getUTCDate(), time.getUTCHours(), time.getUTCMinutes(), time.getUTCSeconds()].map(twoDigits).join('');
  const fields = [
    'AAA', fix.sos ? '1' : '35', fix.latitude.toFixed(6), fix.longitude.toFixed(6), stamp, fix.valid ? 'A' : 'V',
    String(fix.satellites ?? 9), '20', String(kmh(fix.speed)), String(Math.round(fix.course) % 360), '1.0',
    String(Math.round(fix.altitude)), String(Math.max(0, Math.round(fix.odometer ?? 0))), '0', '262|1|0001|0001',
    fix.ignition ? '0100' : '0000', '0000|0000|0000|0190|0514', '', '',
  ];
  return meitrackFrame(imei, fields.join(','));
}

/** AAC, which the server answers `@@z27,<imei>,AAC,1*<checksum>`. */
export function meitrackAac(imei: string): Buffer {
  return meitrackFrame(imei, 'AAC,1');
}

// --- Suntech ---------------------------------------------------------------------------------------------------

/** An SA200 status report (`STT`; `EMG` with emergency 1 for SOS), km/h; Suntech devices get no answer. */
export function suntechLocation(id: string, fix: DeviceFix): Buffer {
  const time = fix.time;
  const date = `${time.getUTCFullYear()}${twoDigits(time.getUTCMonth() + 1)}${twoDigits(time.getUTCDate())}`;
  const clock = `${twoDigits(time.getUTCHours())}:${twoDigits(time.getUTCMinutes())}:${twoDigits(time.getUTCSeconds())}`;
  const fields = [
    fix.sos ? 'SA200EMG' : 'SA200STT', id, '042', date, clock, '16d41',
    fix.latitude.toFixed(6), fix.longitude.toFixed(6), (fix.speed * KMH_PER_KNOT).toFixed(3), (Math.round(fix.course * 100) / 100 % 360).toFixed(2),
    String(fix.satellites ?? 9), fix.valid ? '1' : '0', String(Math.max(0, Math.round(fix.odometer ?? 0))), '12.50',
    `${fix.ignition ? 1 : 0}00000`, ...(fix.sos ? ['1'] : ['2', '1']),
  ];
  return Buffer.from(`${fields.join(';')}\r`, 'latin1');
}

// --- Queclink ---------------------------------------------------------------------------------------------------

function queclinkTime(time: Date): string {
  return `${time.getUTCFullYear()}${[time.getUTCMonth() + 1, time.getUTCDate(), time.getUTCHours(), time.getUTCMinutes(), time.getUTCSeconds()].map(twoDigits).join('')}`;
}

/**
 * A GL300 `+RESP:GTFRI` report (`+RESP:GTSOS` for SOS) with one fix, km/h, odometer in km; not answered. An invalid fix
 * is sent without coordinates, as the devices do.
 */
export function gl200Location(imei: string, fix: DeviceFix, count = 1): Buffer {
  const location = fix.valid
    ? [fix.longitude.toFixed(6), fix.latitude.toFixed(6), queclinkTime(fix.time)]
    : ['', '', ''];
  const fields = [
    fix.sos ? '+RESP:GTSOS' : '+RESP:GTFRI', '1A0800', imei, 'GL300', '0', '0', '1', fix.valid ? '1' : '0',
    (fix.speed * KMH_PER_KNOT).toFixed(1), String(Math.round(fix.course) % 360), fix.altitude.toFixed(1), ...location,
    '0460', '0000', '18d8', '6141', '', (Math.max(0, fix.odometer ?? 0) / 1000).toFixed(1), '90', queclinkTime(fix.time),
    count.toString(16).toUpperCase().padStart(4, '0'),
  ];
  return Buffer.from(`${fields.join(',')}$`, 'latin1');
}

/** A heartbeat, which the server answers `+SACK:GTHBD,<protocol version>,<count>$`. */
export function gl200Heartbeat(imei: string, time: Date, count = 1): Buffer {
  return Buffer.from(`+ACK:GTHBD,1A0800,${imei},GL300,${queclinkTime(time)},${count.toString(16).toUpperCase().padStart(4, '0')}$`, 'latin1');
}

// --- Ruptela ---------------------------------------------------------------------------------------------------

/** A device message: length, IMEI as a 64-bit number, command, body, CRC-16/KERMIT. */
function ruptelaFrame(imei: string, command: number, body: Buffer): Buffer {
  const data = Buffer.alloc(9 + body.length);
  data.writeBigUInt64BE(BigInt(imei), 0);
  data.writeUInt8(command, 8);
  body.copy(data, 9);
  const frame = Buffer.alloc(2 + data.length + 2);
  frame.writeUInt16BE(data.length, 0);
  data.copy(frame, 2);
  frame.writeUInt16BE(crc16Kermit(data), 2 + data.length);
  return frame;
}

/** Identification (15); the server answers `0002 73 01 <crc>`. */
export function ruptelaIdentification(imei: string): Buffer {
  return ruptelaFrame(imei, 15, Buffer.alloc(0));
}

/** Records (1), answered `0002 64 01 13bc`: ignition as IO 251, odometer (m) as IO 65. */
export function ruptelaRecords(imei: string, fixes: readonly DeviceFix[]): Buffer {
  const records = fixes.map((fix) => {
    const record = Buffer.alloc(23 + 3 + 1 + 1 + (fix.odometer === undefined ? 1 : 6) + 1);
    let offset = record.writeUInt32BE(Math.floor(fix.time.getTime() / 1000), 0);
    offset = record.writeUInt8(0, offset); // timestamp extension
    offset = record.writeUInt8(0, offset); // priority
    offset = record.writeInt32BE(Math.round(fix.longitude * 1e7), offset);
    offset = record.writeInt32BE(Math.round(fix.latitude * 1e7), offset);
    offset = record.writeUInt16BE(Math.max(0, Math.round(fix.altitude * 10)), offset);
    offset = record.writeUInt16BE(Math.round(fix.course * 100) % 36000, offset);
    offset = record.writeUInt8(fix.satellites ?? 9, offset);
    offset = record.writeUInt16BE(kmh(fix.speed), offset);
    offset = record.writeUInt8(9, offset); // hdop 0.9
    offset = record.writeUInt8(0, offset); // event
    offset = record.writeUInt8(1, offset); // one 1-byte element: ignition
    offset = record.writeUInt8(251, offset);
    offset = record.writeUInt8(fix.ignition ? 1 : 0, offset);
    offset = record.writeUInt8(0, offset); // 2-byte elements
    if (fix.odometer === undefined) {
      offset = record.writeUInt8(0, offset);
    } else {
      offset = record.writeUInt8(1, offset);
      offset = record.writeUInt8(65, offset);
      offset = record.writeUInt32BE(Math.max(0, Math.round(fix.odometer)), offset);
    }
    record.writeUInt8(0, offset); // 8-byte elements
    return record;
  });
  return ruptelaFrame(imei, 1, Buffer.concat([Buffer.from([0, records.length]), ...records]));
}

// --- Galileosky ------------------------------------------------------------------------------------------------

/** A main packet: 0x01, the tags' length (little-endian), the tags, CRC-16/MODBUS (little-endian). */
function galileoPacket(tags: Buffer): Buffer {
  const packet = Buffer.alloc(3 + tags.length + 2);
  packet.writeUInt8(0x01, 0);
  packet.writeUInt16LE(tags.length, 1);
  tags.copy(packet, 3);
  packet.writeUInt16LE(crc16Modbus(packet.subarray(0, 3 + tags.length)), 3 + tags.length);
  return packet;
}

/** The head packet naming the device (tags 0x01 hardware, 0x02 firmware, 0x03 IMEI); answered 0x02 + its CRC. */
export function galileoHead(imei: string): Buffer {
  return galileoPacket(Buffer.concat([Buffer.from([0x01, 0x82, 0x02, 0x13, 0x03]), Buffer.from(imei, 'latin1')]));
}

/** One record: time (0x20), coordinates (0x30), speed and course (0x33), altitude (0x34), odometer (0xd4). */
export function galileoRecord(fix: DeviceFix): Buffer {
  const tags = Buffer.alloc(5 + 10 + 5 + 3 + (fix.odometer === undefined ? 0 : 5));
  let offset = tags.writeUInt8(0x20, 0);
  offset = tags.writeUInt32LE(Math.floor(fix.time.getTime() / 1000), offset);
  offset = tags.writeUInt8(0x30, offset);
  offset = tags.writeUInt8(fix.valid ? Math.min(fix.satellites ?? 9, 15) : 0x10, offset);
  offset = tags.writeInt32LE(Math.round(fix.latitude * 1e6), offset);
  offset = tags.writeInt32LE(Math.round(fix.longitude * 1e6), offset);
  offset = tags.writeUInt8(0x33, offset);
  offset = tags.writeUInt16LE(Math.round(fix.speed * KMH_PER_KNOT * 10), offset);
  offset = tags.writeUInt16LE(Math.round(fix.course * 10) % 3600, offset);
  offset = tags.writeUInt8(0x34, offset);
  offset = tags.writeInt16LE(Math.round(fix.altitude), offset);
  if (fix.odometer !== undefined) {
    offset = tags.writeUInt8(0xd4, offset);
    tags.writeUInt32LE(Math.max(0, Math.round(fix.odometer)), offset);
  }
  return galileoPacket(tags);
}
