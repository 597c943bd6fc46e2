// The device side of the protocols: frames as trackers write them, for the simulator and the bench.
// Each encoder is the inverse of its decoder for the fields it writes; tests decode what they encode.

import { crc16Ibm, crc16X25 } from './checksum.ts';

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
    twoDigits(time.getUTCHours()) + twoDigits(time.getUTCMinutes()) + twoDigits(time.getUTCSeconds()),
    fix.valid ? 'A' : 'V',
    h02Coordinate(fix.latitude, 2),
    fix.latitude >= 0 ? 'N' : 'S',
    h02Coordinate(fix.longitude, 3),
    fix.longitude >= 0 ? 'E' : 'W',
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
