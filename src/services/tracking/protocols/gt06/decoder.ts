// GT06 / Concox binary protocol (Traccar port 5023).
// Frame: 0x7878 <len:1> or 0x7979 <len:2>, then type, body, serial:2, CRC-16/X-25:2 over length..serial, 0x0D0A.

import { ByteReader } from '../byte-reader.ts';
import { crc16X25 } from '../checksum.ts';
import { addAlarm, int64Value, isValidCoordinate, knotsFromKmh, utcDate } from '../decode-helpers.ts';
import { gt06Commands } from './commands.ts';
import type { ConnectionState, DecodedMessage, DecodedPosition, TcpProtocol } from '../types.ts';
import { ProtocolError } from '../types.ts';

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
  gpsLbs6: 0x11, // 2-byte MNC, 4-byte cell id
  gpsLbsExtend: 0x1e, // JI09
  lbsMultiple3: 0x24, // neighbour cells; GPS + cell + voltages on the SR411 mini
  gpsLbs4: 0x2d,
  gpsLbs5: 0x31,
  gpsLbsStatus4: 0x32, // 0x7979: AZ735 location
  wifi5: 0x33, // 0x7979: AZ735 alarm
  x1Gps: 0x34, // neighbour cells on SL4X
  rfidLocation: 0x36, // TRX16i; Jimi IoT 4G status otherwise
  gpsLbs3: 0x37,
  gpsLbs8: 0x38,
  gpsModular: 0x70,
  gpsLbs7: 0xa0, // 4G cell
  gpsLbsStatus5: 0xa2, // LW4G; 4G neighbour cells and Wi-Fi otherwise
  gpsLbsRfid: 0x17, // with length 0x28; Wi-Fi otherwise
  gpsPhone: 0x1a,
  gpsLbsDriver: 0x25, // XT40
  alarmModule: 0x39, // Jimi IoT 4G
  iButton: 0x61,
  info: 0x94,
  alarm: 0x95, // JC100, JC400
  serial: 0x9b, // external serial device passthrough
  fenceSingle: 0xa3, // GK310
  fenceMulti: 0xa4, // GK310, JM-LL301
  lbsAlarm: 0xa5, // GK310, JM-LL301
  lbsAddress: 0xa7, // GK310
  deviceStatus: 0xf1, // Jimi IoT 4G
  addressRequest: 0x2a, // GK310
  wifi4: 0xf3,
  obd: 0x8c, // FM08ABC
} as const;

// Types that carry a GPS block.
const LOCATION_TYPES = new Set<number>([
  GT06_MESSAGE.gps, GT06_MESSAGE.gpsLbs, GT06_MESSAGE.gpsLbsStatus, GT06_MESSAGE.gpsLbsUtc,
  GT06_MESSAGE.gpsLbsStatusAlarm, GT06_MESSAGE.gpsLbsStatusFence, GT06_MESSAGE.gpsLbs6, GT06_MESSAGE.gpsLbsExtend,
  GT06_MESSAGE.gpsLbs4, GT06_MESSAGE.gpsLbs5, GT06_MESSAGE.gpsLbs3, GT06_MESSAGE.gpsLbs8, GT06_MESSAGE.gpsLbs7,
  GT06_MESSAGE.gpsPhone, GT06_MESSAGE.gpsLbsDriver, GT06_MESSAGE.fenceMulti, GT06_MESSAGE.alarmModule,
]);

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
  altitude?: number; // metres, where the message carries it
  accuracy?: number; // metres, where the message carries it
}

// An answer frame: header, length, type, content, serial, CRC-16/X-25 of length through serial, 0D0A.
function responseFrame(extended: boolean, type: number, serial: number, content: Buffer): Buffer {
  const head = extended ? 5 : 4;
  const frame = Buffer.alloc(head + content.length + 6);
  frame.writeUInt16BE(extended ? LONG_HEADER : SHORT_HEADER, 0);
  if (extended) {
    frame.writeUInt16BE(5 + content.length, 2);
  } else {
    frame.writeUInt8(5 + content.length, 2);
  }
  frame.writeUInt8(type, head - 1);
  content.copy(frame, head);
  frame.writeUInt16BE(serial, head + content.length);
  frame.writeUInt16BE(crc16X25(frame.subarray(2, head + content.length + 2)), head + content.length + 2);
  TRAILER.copy(frame, head + content.length + 4);
  return frame;
}

export function gt06Response(type: number, serial: number, content: Buffer = Buffer.alloc(0)): Buffer {
  return responseFrame(false, type, serial, content);
}

// The 0x7979 form of the answer, which AZ735 devices expect for their 0x7979 reports (and GK310 for an address).
function gt06ExtendedResponse(type: number, serial: number, content: Buffer = Buffer.alloc(0)): Buffer {
  return responseFrame(true, type, serial, content);
}

// GK310 asks the server for a street address (0x2A); like Traccar, it is told none is known (0x97).
const NO_ADDRESS = Buffer.from('NA&&NA&&0##', 'latin1');
const ADDRESS_RESPONSE = 0x97;

// Longest 0x7878 frame: its length byte counts at most 255 bytes after itself.
const MAX_SHORT_FRAME = 5 + 0xff;
// How far past the end its length field gives a frame's trailer may be, for firmwares that miscount.
const LENGTH_SLACK = 16;

// Where the frame at `offset` ends, or null to wait for more bytes. A frame whose length field misses its trailer is
// cut at the first 0D0A, as Traccar does (some firmwares miscount the length). The search is bounded by the longest
// frame the header allows, so a trickled stream costs a bounded scan per read.
function frameEnd(buffer: Buffer, offset: number, declared: number, short: boolean): number | null {
  const available = buffer.length - offset;
  if (available < declared) {
    return null;
  }
  if (buffer[offset + declared - 2] === 0x0d && buffer[offset + declared - 1] === 0x0a) {
    return offset + declared;
  }
  const windowEnd = offset + (short ? MAX_SHORT_FRAME : declared) + LENGTH_SLACK;
  const trailer = buffer.subarray(offset + 8, windowEnd).indexOf(TRAILER);
  if (trailer >= 0) {
    return offset + 8 + trailer + 2;
  }
  if (buffer.length >= windowEnd) {
    throw new ProtocolError('gt06: no 0D0A trailer where the frame length field points or shortly after');
  }
  return null;
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
    const short = first === 0x78;
    const declared = short ? 5 + buffer[offset + 2]! : 6 + buffer.readUInt16BE(offset + 2);
    let end: number | null;
    try {
      end = frameEnd(buffer, offset, declared, short);
    } catch (error) {
      if (frames.length > 0) {
        break;
      }
      throw error;
    }
    if (end === null) {
      break;
    }
    frames.push(buffer.subarray(offset, end));
    offset = end;
  }
  return { frames, consumed: offset };
}

function readDate(reader: ByteReader, offsetMinutes: number): Date | null {
  return utcDate(reader.u8(), reader.u8(), reader.u8(), reader.u8(), reader.u8(), reader.u8(), offsetMinutes);
}

function readGpsFix(reader: ByteReader, offsetMinutes: number, attributes: Record<string, unknown>): GpsFix {
  const time = readDate(reader, offsetMinutes);
  attributes['sat'] = reader.u8() & 0x0f;
  return readCoordinates(reader, time, attributes);
}

// Latitude, longitude, speed (km/h) and the course word; shared by the classic GPS block and the 0x70 location module.
function readCoordinates(reader: ByteReader, time: Date | null, attributes: Record<string, unknown>): GpsFix {
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

// Traccar's Network object, kept as the `network` attribute: serving cell and/or Wi-Fi access points.
interface CellTower {
  mobileCountryCode: number;
  mobileNetworkCode: number;
  locationAreaCode: number;
  cellId: number | string; // a 64-bit cell id beyond 2^53 stays a decimal string
  signalStrength?: number;
}

interface WifiAccessPoint {
  macAddress: string;
  signalStrength?: number;
}

// Field widths of a cell tower, which grew with 4G: the MNC is 2 bytes when the MCC's top bit says so.
interface CellLayout {
  wideMnc?: boolean;
  wideLac?: boolean; // 4-byte LAC
  cidBytes: 3 | 4 | 8;
}

const CELL_2G: CellLayout = { cidBytes: 3 };
const CELL_4G: CellLayout = { wideLac: true, cidBytes: 8 };

function readCellTower(reader: ByteReader, layout: CellLayout): CellTower {
  const mcc = reader.u16();
  const mobileNetworkCode = (mcc & 0x8000) !== 0 || layout.wideMnc ? reader.u16() : reader.u8();
  const locationAreaCode = layout.wideLac ? reader.i32() : reader.u16();
  const cellId = layout.cidBytes === 8 ? int64Value(reader.i64()) : layout.cidBytes === 4 ? reader.u32() : reader.u24();
  return { mobileCountryCode: mcc & 0x7fff, mobileNetworkCode, locationAreaCode, cellId };
}

function addNetwork(
  attributes: Record<string, unknown>, cellTowers: CellTower[], wifiAccessPoints: WifiAccessPoint[] = [],
): void {
  if (cellTowers.length > 0 || wifiAccessPoints.length > 0) {
    attributes['network'] = {
      ...(cellTowers.length > 0 ? { cellTowers } : {}),
      ...(wifiAccessPoints.length > 0 ? { wifiAccessPoints } : {}),
    };
  }
}

function readCell(reader: ByteReader, attributes: Record<string, unknown>, layout: CellLayout = CELL_2G): void {
  addNetwork(attributes, [readCellTower(reader, layout)]);
}

// A cell block led by its length, which counts itself; a zero length means no cell, and when the bytes where a cell
// would be are all zero, firmwares send a zeroed block of 45 bytes, skipped as Traccar does.
function readCellWithLength(reader: ByteReader, attributes: Record<string, unknown>): boolean {
  const length = reader.u8();
  if (length === 0) {
    const zeroed = reader.buffer.subarray(reader.offset + 9, reader.offset + 45);
    if (zeroed.every((byte) => byte === 0)) {
      reader.skip(Math.min(reader.remaining, 45));
    }
    return false;
  }
  const start = reader.offset - 1;
  readCell(reader, attributes);
  const used = reader.offset - start;
  if (length > used) {
    reader.skip(Math.min(length - used, reader.remaining));
  }
  return true;
}

function macAddress(bytes: Buffer): string {
  return [...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join(':');
}

function readWifiList(reader: ByteReader): WifiAccessPoint[] {
  const count = reader.u8();
  const accessPoints: WifiAccessPoint[] = [];
  for (let index = 0; index < count; index++) {
    accessPoints.push({ macAddress: macAddress(reader.bytes(6)), signalStrength: reader.u8() });
  }
  return accessPoints;
}

function readTerminalInfo(value: number, attributes: Record<string, unknown>): void {
  attributes['status'] = value;
  attributes['ignition'] = (value & 0x02) !== 0;
  attributes['charge'] = (value & 0x04) !== 0;
  attributes['blocked'] = (value & 0x80) !== 0;
  addAlarm(attributes, TERMINAL_ALARMS[(value >> 3) & 0x07]);
}

// 0..6 is a level scaled to a percentage, up to 100 a percentage.
function readVoltageLevel(value: number, attributes: Record<string, unknown>): void {
  if (value <= 6) {
    attributes['batteryLevel'] = Math.trunc((value * 100) / 6);
  } else if (value <= 100) {
    attributes['batteryLevel'] = value;
  }
}

// Terminal information, voltage level (0..6 or percent), GSM signal, alarm code; the language byte follows.
// VXT01 firmwares put something else in the alarm byte, so Traccar reads no alarm from it (`alarmByte` false).
function readStatusBlock(
  reader: ByteReader, attributes: Record<string, unknown>, alarmHighBits: boolean, alarmByte = true,
): void {
  readTerminalInfo(reader.u8(), attributes);
  readVoltageLevel(reader.u8(), attributes);
  attributes['rssi'] = reader.u8();
  let alarm = reader.u8();
  if (alarmHighBits && reader.remaining > 0) {
    alarm += (reader.buffer[reader.offset]! >> 4) << 8;
  }
  if (alarmByte) {
    addAlarm(attributes, ALARM_NAMES.get(alarm));
  }
}

// Bytes of the body left before the serial, as Traccar counts them to tell optional fields apart: for a frame sent
// without serial and CRC the reader runs on past this point.
function bodyLeft(reader: ByteReader): number {
  return reader.buffer.length - 6 - reader.offset;
}

// Optional trailing fields some firmwares append, recognised by how many bytes remain (as Traccar does).
function readTrailingIgnitionAndOdometer(reader: ByteReader, attributes: Record<string, unknown>): void {
  if (bodyLeft(reader) === 3 || bodyLeft(reader) === 7) {
    attributes['ignition'] = reader.u8() > 0;
    reader.u8(); // upload mode
    if (reader.u8() > 0) {
      attributes['archive'] = true;
    }
  }
  if (bodyLeft(reader) === 4) {
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
      altitude: fix.altitude ?? 0,
      speed: fix.speed,
      course: fix.course,
      accuracy: fix.accuracy ?? 0,
      attributes,
    };
    return { positions: [position], statuses: [] };
  }
  return { positions: [], statuses: [{ deviceTime: fix?.time ?? null, attributes }] };
}

// Neighbour-cell (and Wi-Fi) reports without GPS, which Traccar merges into the last known position: how each type
// lays out its cells. `taFirst`: the timing advance byte leads instead of following the cells; `counted`: a count
// byte gives the number of cells, else there are `cells`.
interface LbsListLayout {
  taFirst?: boolean;
  counted?: boolean;
  cells?: number;
  cell: CellLayout;
  wifi?: boolean;
  wideMnc?: boolean;
  alarm?: boolean; // 0xA9: a byte says whether the cells are 4G, and an alarm code and language follow the Wi-Fi
}

const LBS_LIST_CELL = { lac16cid24: { cidBytes: 3 }, lac16cid32: { cidBytes: 4 }, lac32cid64: CELL_4G } as const;

const LBS_LIST_LAYOUTS = new Map<number, LbsListLayout>([
  [0x28, { cell: LBS_LIST_CELL.lac16cid24 }],
  [0x2e, { cell: LBS_LIST_CELL.lac16cid24 }],
  [0x24, { cell: LBS_LIST_CELL.lac16cid24 }],
  [0x18, { cell: LBS_LIST_CELL.lac16cid24, wifi: true }],
  [0x2c, { cell: LBS_LIST_CELL.lac16cid24, wifi: true }],
  [0xa1, { cell: LBS_LIST_CELL.lac32cid64 }],
  [0xa2, { cell: LBS_LIST_CELL.lac32cid64, wifi: true }],
  [0x33, { cell: LBS_LIST_CELL.lac16cid32, cells: 6, wifi: true }],
  [0xa9, { cell: LBS_LIST_CELL.lac16cid24, counted: true, wifi: true, alarm: true }],
]);
// Wanway S20 (0x24 with length 0x31) counts its cells; SL4X (0x34 with length 0x37) sends 2-byte MNCs.
const WANWAY_S20_LAYOUT: LbsListLayout = { cell: LBS_LIST_CELL.lac16cid24, taFirst: true, counted: true };
const SL4X_LBS_LAYOUT: LbsListLayout = { cell: LBS_LIST_CELL.lac16cid32, taFirst: true, wideMnc: true };

function decodeLbsList(
  reader: ByteReader, layout: LbsListLayout, offsetMinutes: number, attributes: Record<string, unknown>,
): Omit<DecodedMessage, 'ack'> {
  const deviceTime = readDate(reader, offsetMinutes);
  if (layout.taFirst) {
    reader.u8(); // timing advance
  }
  const mcc = reader.u16();
  const mnc = (mcc & 0x8000) !== 0 || layout.wideMnc ? reader.u16() : reader.u8();
  const cell = layout.alarm && reader.u8() > 0 ? CELL_4G : layout.cell;
  const count = layout.counted ? reader.u8() : layout.cells ?? 7;
  const cellTowers: CellTower[] = [];
  for (let index = 0; index < count; index++) {
    const lac = cell.wideLac ? reader.i32() : reader.u16();
    const cid = cell.cidBytes === 8 ? int64Value(reader.i64()) : cell.cidBytes === 4 ? reader.u32() : reader.u24();
    const signalStrength = -reader.u8();
    if (lac > 0) {
      cellTowers.push({
        mobileCountryCode: mcc & 0x7fff, mobileNetworkCode: mnc, locationAreaCode: lac, cellId: cid, signalStrength,
      });
    }
  }
  if (!layout.taFirst) {
    reader.u8(); // timing advance
  }
  addNetwork(attributes, cellTowers, layout.wifi ? readWifiList(reader) : []);
  if (layout.alarm) {
    const alarm = reader.u8();
    const language = reader.u8();
    addAlarm(attributes, ALARM_NAMES.get(((language >> 4) << 8) | alarm));
  }
  return { positions: [], statuses: [{ deviceTime, attributes }] };
}

// 0x7979 0x32/0x33 (AZ735): the GPS block says by a length byte whether it holds a fix; cells and Wi-Fi follow as
// length-led blocks, then a status byte that 0x33 turns into an alarm.
const AZ735_ALARMS = new Map<number, (attributes: Record<string, unknown>) => void>([
  [0xa0, (attributes) => { attributes['armed'] = true; }],
  [0xa1, (attributes) => { attributes['armed'] = false; }],
  [0xa2, (attributes) => addAlarm(attributes, 'lowBattery')],
  [0xa3, (attributes) => addAlarm(attributes, 'lowBattery')],
  [0xa4, (attributes) => addAlarm(attributes, 'general')],
  [0xa5, (attributes) => addAlarm(attributes, 'door')],
]);

function decodeAz735(
  type: number, reader: ByteReader, offsetMinutes: number, attributes: Record<string, unknown>,
): Omit<DecodedMessage, 'ack'> {
  const time = readDate(reader, offsetMinutes);
  let fix: GpsFix | null = null;
  if (reader.u8() !== 0) {
    attributes['sat'] = reader.u8() & 0x0f;
    fix = readCoordinates(reader, time, attributes);
  }
  if (readCellWithLength(reader, attributes)) {
    attributes['rssi'] = reader.u8();
  }
  reader.skip(reader.u8()); // further cells
  reader.skip(reader.u8()); // Wi-Fi access points
  const status = reader.u8();
  attributes['status'] = status;
  if (type === 0x33) {
    AZ735_ALARMS.get(status)?.(attributes);
  }
  return fix ? report(fix, attributes) : { positions: [], statuses: [{ deviceTime: time, attributes }] };
}

// 0x34 (X1 and other 4G vehicle trackers): GPS with odometer, cell, driver id, voltages, inputs and ADCs.
function decodeX1Gps(reader: ByteReader, offsetMinutes: number, attributes: Record<string, unknown>): GpsFix {
  reader.u32(); // data and alarm flags
  const fix = readGpsFix(reader, offsetMinutes, attributes);
  reader.u16(); // terminal information
  attributes['odometer'] = reader.u32();
  readCell(reader, attributes, { cidBytes: 4 });
  const driverId = reader.u32();
  if (driverId > 0) {
    attributes['driverUniqueId'] = String(driverId);
  }
  attributes['battery'] = reader.u16() / 100;
  attributes['power'] = reader.u16() / 100;
  const portInfo = reader.u32();
  attributes['input'] = reader.u8();
  attributes['output'] = reader.u8();
  const adcCount = (portInfo >>> 20) & 0x0f;
  for (let index = 1; index <= adcCount; index++) {
    attributes[`adc${index}`] = reader.u16() / 100;
  }
  return fix;
}

// 0x36 with length 0x35 (TRX16i): GPS, cell, ACC, odometer, voltages, engine hours and the RFID card.
function decodeRfidLocation(reader: ByteReader, offsetMinutes: number, attributes: Record<string, unknown>): GpsFix {
  const fix = readGpsFix(reader, offsetMinutes, attributes);
  readCell(reader, attributes, { cidBytes: 4 });
  attributes['ignition'] = reader.u8() > 0;
  attributes['uploadMode'] = reader.u8();
  attributes['archive'] = reader.u8() > 0;
  attributes['odometer'] = reader.u32();
  attributes['power'] = reader.u16() / 100;
  attributes['battery'] = reader.u8() / 10;
  attributes['hours'] = reader.u24() * 60_000;
  readDriverCard(reader.bytes(8), attributes);
  return fix;
}

function readDriverCard(card: Buffer, attributes: Record<string, unknown>): void {
  if (card.some((byte) => byte !== 0)) {
    attributes['driverUniqueId'] = card.toString('hex');
  }
}

// 0xA2 with length 0x40 (LW4G): GPS, 4G cell, network indicator, status with external power, then odometer, engine
// hours and inputs.
function decodeGpsLbsStatus4g(reader: ByteReader, offsetMinutes: number, attributes: Record<string, unknown>): GpsFix {
  const fix = readGpsFix(reader, offsetMinutes, attributes);
  readCell(reader, attributes, CELL_4G);
  reader.u8(); // network indicator
  readTerminalInfo(reader.u8(), attributes);
  attributes['power'] = reader.u16() / 100;
  readVoltageLevel(reader.u8(), attributes);
  attributes['rssi'] = reader.u8();
  addAlarm(attributes, ALARM_NAMES.get(reader.u8()));
  reader.u8(); // language
  attributes['odometer'] = reader.u32();
  attributes['hours'] = reader.u32() * 1000;
  reader.skip(8); // terminal id
  attributes['input'] = reader.u16();
  return fix;
}

// The next `length` bytes as a reader of their own (cut at the end of the body), so a module whose fields are shorter or
// longer than its length cannot shift the modules after it.
function takeModule(reader: ByteReader, length: number): ByteReader {
  const module = new ByteReader(reader.buffer, reader.offset, reader.offset + Math.min(length, reader.remaining));
  reader.offset = module.end;
  return module;
}

// Tagged modules of type:2 and length:1, each read from its own bytes by the handler for its type; others skipped.
function readModules(reader: ByteReader, handlers: Record<number, (module: ByteReader) => void>): void {
  while (reader.remaining >= 3) {
    const type = reader.u16();
    const module = takeModule(reader, reader.u8());
    handlers[type]?.(module);
  }
}

// The modules after the status block of 0x36 and 0x39 (Jimi IoT 4G).
function readStatusModules(reader: ByteReader, attributes: Record<string, unknown>): void {
  readModules(reader, {
    0x0018: (module) => { attributes['battery'] = module.u16() / 100; },
    0x0032: (module) => { attributes['startupStatus'] = module.u8(); },
    0x006a: (module) => { attributes['batteryLevel'] = module.u8(); },
  });
}

// The modules after the cell of 0x37: power, odometer, accuracy.
function readLocationModules(reader: ByteReader, attributes: Record<string, unknown>, fix: GpsFix): void {
  readModules(reader, {
    0x0027: (module) => { attributes['power'] = module.u16() / 100; },
    0x002e: (module) => { attributes['odometer'] = module.u32(); },
    0x003b: (module) => { fix.accuracy = module.u16() / 100; },
  });
}

const MODULAR_EVENT_ALARMS = new Map<number, string>([
  [0x10, 'door'], [0x12, 'removing'], [0x14, 'geofenceEnter'], [0x15, 'geofenceExit'], [0x16, 'temperature'],
  [0x1a, 'lowBattery'], [0x1b, 'overspeed'], [0x1c, 'powerOn'], [0x1d, 'powerOff'], [0x20, 'vibration'],
  [0x21, 'powerCut'], [0x23, 'tampering'],
]);

// 0x70 (Jimi IoT 4G modular): modules of type:2 and length:2; module 0x33 carries the fix, with a Unix time.
function decodeModular(reader: ByteReader, attributes: Record<string, unknown>): Omit<DecodedMessage, 'ack'> {
  let fix: GpsFix | null = null;
  while (reader.remaining >= 4) {
    const type = reader.u16();
    const module = takeModule(reader, reader.u16());
    switch (type) {
      case 0x03: attributes['iccid'] = module.bytes(10).toString('hex'); break;
      case 0x09: attributes['sat'] = module.u8(); break;
      case 0x0a: attributes['satVisible'] = module.u8(); break;
      case 0x11: {
        const cell: CellTower = {
          mobileCountryCode: module.u16(), mobileNetworkCode: module.u16(), locationAreaCode: module.u16(),
          cellId: module.u24(), signalStrength: module.u8(),
        };
        if (Number(cell.cellId) > 0) addNetwork(attributes, [cell]);
        break;
      }
      case 0x18: attributes['battery'] = module.u16() / 100; break;
      case 0x28: attributes['hdop'] = module.u8() / 10; break;
      case 0x29: attributes['index'] = module.u32(); break;
      case 0x2a: {
        const input = module.u8();
        attributes['door'] = (input & 0x0f) > 0;
        attributes['tamper'] = input >> 4 > 0;
        break;
      }
      case 0x2b: attributes['bootReason'] = module.u8(); break;
      case 0x2e: attributes['odometer'] = module.bytes(4).readUInt32LE(0); break;
      case 0x33: {
        const time = new Date(module.u32() * 1000);
        attributes['sat'] = module.u8();
        const altitude = module.i16();
        fix = { ...readCoordinates(module, time, attributes), altitude };
        break;
      }
      case 0x34: {
        const event = module.u8();
        addAlarm(attributes, MODULAR_EVENT_ALARMS.get(event));
        attributes['event'] = event;
        break;
      }
      case 0x7f:
        attributes['tag1Id'] = module.bytes(6).toString('hex');
        attributes['tag1Battery'] = module.u16() / 1000;
        attributes['tag1BatteryLevel'] = module.u8();
        attributes['tag1Temp'] = module.i16() / 10;
        attributes['tag1Humidity'] = module.i16();
        attributes['tag1Status'] = module.u8();
        break;
      default:
        break;
    }
  }
  return report(fix, attributes);
}

// 0x95 alarm (JC100; JC400 when the two bytes after the type are FFFF): a GPS block or a date, then the event code, and
// the names of the video files the camera recorded for it.
const EVENT_ALARMS = new Map<number, string>([
  [0x0e, 'lowPower'], [0x76, 'temperature'], [0x80, 'vibration'], [0x87, 'overspeed'], [0x88, 'powerCut'],
  [0x90, 'hardAcceleration'], [0x91, 'hardBraking'], [0x92, 'hardCornering'], [0x93, 'accident'],
]);

function decodeAlarm(
  reader: ByteReader, lengthField: number, extended: boolean, offsetMinutes: number, attributes: Record<string, unknown>,
): Omit<DecodedMessage, 'ack'> {
  const jc400 = !extended && reader.remaining >= 2 && reader.buffer.readUInt16BE(reader.offset) === 0xffff;
  const withGps = lengthField - 5 > 7;
  let fix: GpsFix | null = null;
  let deviceTime: Date | null = null;
  if (withGps) {
    if (jc400) {
      reader.skip(3); // marker and version
    }
    const time = readDate(reader, offsetMinutes);
    if (jc400) {
      attributes['sat'] = reader.u8() & 0x0f;
    }
    let latitude = reader.u32() / 1_800_000;
    let longitude = reader.u32() / 1_800_000;
    const flags = jc400 ? reader.u16() : 0;
    const speed = jc400 ? knotsFromKmh(reader.u16()) : 0;
    const course = jc400 ? flags : reader.u16();
    if ((course & 0x0400) === 0) latitude = -latitude;
    if ((course & 0x0800) !== 0) longitude = -longitude;
    fix = { time, valid: (course & 0x1000) !== 0, latitude, longitude, speed, course: course & 0x03ff };
  } else {
    deviceTime = readDate(reader, offsetMinutes);
  }
  if (jc400) {
    attributes['power'] = reader.u16() / 10;
  }
  const event = reader.u8();
  attributes['event'] = event;
  if (bodyLeft(reader) >= 2) {
    attributes['eventData'] = reader.u16();
  }
  addAlarm(attributes, event === 0x01 ? (withGps ? 'sos' : 'general') : EVENT_ALARMS.get(event));
  const files = bodyLeft(reader);
  if (files > 0) {
    attributes['eventFiles'] = reader.bytes(files).toString('latin1');
  }
  return fix ? report(fix, attributes) : { positions: [], statuses: [{ deviceTime, attributes }] };
}

function isPrintable(bytes: Buffer): boolean {
  return bytes.every((byte) => (byte >= 0x20 && byte < 0x7f) || byte === 0x0a || byte === 0x0d || byte === 0x09);
}

const INFO_FLAG_KEYS: Record<string, string> = {
  ALM1: 'alarm1Status', ALM2: 'alarm2Status', ALM3: 'alarm3Status', ALM4: 'alarm4Status', STA1: 'otherStatus',
  DYD: 'engineStatus',
};

// 0x7979 0x94 information reports, by subtype: each an attribute-only report; unknown subtypes give nothing.
function decodeInfo(
  reader: ByteReader, lengthField: number, offsetMinutes: number, attributes: Record<string, unknown>,
): DecodedMessage {
  let deviceTime: Date | null = null;
  switch (reader.u8()) {
    case 0x00:
      attributes['adc1'] = reader.u16() / 100;
      break;
    case 0x04:
      for (const pair of reader.bytes(reader.remaining).toString('latin1').split(';')) {
        const [key = '', value = ''] = pair.split('=');
        const name = INFO_FLAG_KEYS[key];
        if (name && /^[0-9A-Fa-f]{1,8}$/.test(value)) attributes[name] = Number.parseInt(value, 16);
      }
      break;
    case 0x05:
      if (reader.remaining >= 7) deviceTime = readDate(reader, offsetMinutes);
      {
        const flags = reader.u8();
        attributes['door'] = (flags & 0x01) !== 0;
        attributes['io1'] = (flags & 0x04) !== 0;
      }
      break;
    case 0x0a: {
      reader.skip(16); // IMEI and IMSI
      const iccid = reader.bytes(10).toString('hex');
      let end = iccid.length;
      while (end > 0 && iccid[end - 1] === 'f') end -= 1;
      attributes['iccid'] = iccid.slice(0, end);
      break;
    }
    case 0x0b:
      if (lengthField - 6 === 1) attributes['networkTechnology'] = reader.u8() > 0 ? '4G' : '2G';
      else if (lengthField - 6 === 2) attributes['power'] = reader.u16() / 100;
      break;
    case 0x1b: {
      const first = reader.buffer[reader.offset] ?? 0;
      if ((first >= 0x41 && first <= 0x5a) || (first >= 0x61 && first <= 0x7a)) {
        attributes['serial'] = reader.bytes(reader.remaining).toString('latin1').trim();
      } else {
        reader.skip(2); // header and type
        attributes['driverUniqueId'] = reader.bytes(4).toString('hex');
      }
      break;
    }
    case 0x1e:
      attributes['temp1'] = reader.i32() / 10;
      attributes['humidity'] = reader.i32() / 10;
      break;
    default:
      return { positions: [], statuses: [] };
  }
  return { positions: [], statuses: [{ deviceTime, attributes }] };
}

// 0xF1 (Jimi IoT 4G device status): a Unix time, then status items of id:2, length:1.
function decodeDeviceStatus(reader: ByteReader, attributes: Record<string, unknown>): Omit<DecodedMessage, 'ack'> {
  const deviceTime = new Date(reader.u32() * 1000);
  readModules(reader, {
    0x0001: (item) => {
      const motion = item.u8();
      attributes['motion'] = motion === 0x02 || motion === 0x04;
    },
    0x0002: (item) => { attributes['armed'] = item.u8() > 0; },
    0x0004: (item) => { attributes['ignition'] = item.u8() > 0; },
    0x0005: (item) => { attributes['power'] = item.u16() / 100; },
    0x0007: (item) => { attributes['charge'] = item.u8() > 0; },
    0x000a: (item) => { attributes['chargeVoltage'] = item.u16(); },
    0x000b: (item) => { attributes['batteryTemp'] = item.u16() / 10; },
  });
  return { positions: [], statuses: [{ deviceTime, attributes }] };
}

// 0x12, 0x22, 0x2D, 0x31: GPS and cell, then what each firmware appends, told apart by the length field as Traccar does.
function decodeGpsLbs(
  type: number, reader: ByteReader, lengthField: number, offsetMinutes: number, attributes: Record<string, unknown>,
): GpsFix {
  const gpsLbs1 = type === GT06_MESSAGE.gpsLbs;
  if (gpsLbs1 && startsWithImei(reader)) {
    reader.skip(8);
  }
  const fix = readGpsFix(reader, offsetMinutes, attributes);
  const seeworld = type === GT06_MESSAGE.gpsLbsUtc && lengthField === 0x2f;
  const sl4x = type === GT06_MESSAGE.gpsLbs5 && lengthField === 0x2a;
  if (bodyLeft(reader) > 0) {
    readCell(reader, attributes, sl4x ? { wideMnc: true, cidBytes: 8 } : seeworld ? { cidBytes: 4 } : CELL_2G);
  }
  if (gpsLbs1) {
    GPS_LBS_VARIANTS.get(lengthField >= 0x71 ? 0x71 : lengthField)?.(reader, attributes);
    readTrailingIgnitionAndOdometer(reader, attributes);
  } else if (seeworld) {
    attributes['ignition'] = reader.u8() > 0;
    reader.skip(2); // reporting mode, supplementary transmission
    attributes['odometer'] = reader.u32();
    reader.u32(); // travel time
    const temperature = reader.u16();
    attributes['temp1'] = ((temperature & 0x8000) !== 0 ? -(temperature & 0x7fff) : temperature) / 100;
    attributes['humidity'] = reader.u16() / 100;
  } else if (bodyLeft(reader) >= 3) {
    attributes['ignition'] = reader.u8() > 0;
    attributes['event'] = reader.u8(); // upload mode: why the device sent this report
    if (reader.u8() > 0) {
      attributes['archive'] = true;
    }
    if (sl4x) {
      if (bodyLeft(reader) > 2) {
        attributes['odometer'] = reader.u32();
      }
      fix.altitude = reader.i16();
    } else if (bodyLeft(reader) === 4) {
      attributes['odometer'] = reader.u32();
    }
  }
  return fix;
}

// What 0x12 firmwares append after the cell, keyed by the frame's length field (0x71: 0x71 and longer).
const GPS_LBS_VARIANTS = new Map<number, (reader: ByteReader, attributes: Record<string, unknown>) => void>([
  [0x71, (reader, attributes) => { // GT06E with a card reader
    attributes['odometer'] = reader.u32();
    attributes['card'] = reader.bytes(reader.u8()).toString('latin1').trim();
    reader.skip(2); // alarm, swiped
  }],
  [0x21, (reader, attributes) => { // Benway
    const mask = reader.u16();
    attributes['ignition'] = (mask & 0x8000) !== 0;
    attributes['in2'] = (mask & 0x4000) !== 0;
    if ((mask & 0x1000) !== 0) {
      const value = mask & 0x01ff;
      attributes['temp1'] = (mask & 0x0200) !== 0 ? -value : value;
    } else {
      const value = mask & 0x03ff;
      attributes['adc1'] = (mask & 0x2000) !== 0 ? value : value / 10;
    }
  }],
  [0x24, (reader, attributes) => { // VXT01
    readTerminalInfo(reader.u8(), attributes);
    attributes['power'] = reader.u16() / 100;
    attributes['rssi'] = reader.u8();
    reader.u8(); // alarm extension
  }],
  [0x2b, (reader, attributes) => { // S5
    readTerminalInfo(reader.u8(), attributes);
    attributes['power'] = reader.u16() / 100;
    attributes['rssi'] = reader.u8();
    addAlarm(attributes, ALARM_NAMES.get(reader.u8()));
    attributes['oil'] = reader.u16();
    const temperature = reader.u8();
    attributes['temp1'] = (temperature & 0x80) !== 0 ? -(temperature & 0x7f) : temperature;
    attributes['odometer'] = reader.u32() * 10;
  }],
  [0x29, (reader, attributes) => { // Wetrust
    attributes['odometer'] = reader.u32();
    attributes['card'] = reader.bytes(reader.u8()).toString('latin1');
    addAlarm(attributes, reader.u8() > 0 ? 'general' : null);
    attributes['cardStatus'] = reader.u8();
    attributes['drivingTime'] = reader.u16();
  }],
]);

// 0x13 status: OBD6 (length 0x13) adds satellites, power and a temperature; a 16-byte body is a status with
// temperature; the others carry the plain status block.
function decodeStatus(reader: ByteReader, lengthField: number, extended: boolean, attributes: Record<string, unknown>) {
  if (!extended && reader.remaining === 16) {
    reader.skip(1 + 2 + 1 + 1); // information content, satellites, alarm, language
    attributes['batteryLevel'] = reader.u8();
    reader.skip(1 + 2 + 1 + 2 + 2); // working mode, voltage, reserved, working times, working time
    const value = reader.u16();
    attributes['temp1'] = ((value & 0x8000) !== 0 ? 1 : -1) * (value & 0x7fff) / 10;
    return;
  }
  if (extended || lengthField !== 0x13) {
    readStatusBlock(reader, attributes, false);
    return;
  }
  readTerminalInfo(reader.u8(), attributes);
  const signal = reader.u16();
  attributes['sat'] = ((signal >> 10) & 0x1f) + ((signal >> 5) & 0x1f);
  attributes['rssi'] = signal & 0x1f;
  addAlarm(attributes, ALARM_NAMES.get(reader.u8()));
  reader.u8(); // language
  attributes['batteryLevel'] = reader.u8();
  const mode = reader.u8();
  attributes['power'] = reader.u16() / 100;
  reader.skip(1 + 2); // reserved, working time
  if (mode === 4) {
    attributes['temp1'] = reader.i16() / 10;
  }
}

// 0xA3 from SEEWORLD devices (length 0x0C or 0x18): a status without GPS; the long form adds steps and switches.
function decodeSeeworldStatus(reader: ByteReader, lengthField: number, attributes: Record<string, unknown>): void {
  readTerminalInfo(reader.u8(), attributes);
  if (lengthField !== 0x18) {
    readVoltageLevel(reader.u8(), attributes);
    attributes['rssi'] = reader.u8();
    addAlarm(attributes, ALARM_NAMES.get(reader.u8()));
    return;
  }
  reader.skip(2 + 1); // extension bits, voltage level
  attributes['rssi'] = reader.u8();
  attributes['power'] = reader.u8();
  reader.skip(3); // language, sound and light switches
  attributes['steps'] = reader.u32();
  attributes['batteryLevel'] = reader.u8();
  attributes['charge'] = reader.u8() === 1;
  attributes['motion'] = reader.u8() === 1;
}

// Wi-Fi reports (0x17 unless its length byte is 0x28, 0x69): no length, serial or CRC; the byte where the length would
// be counts the access points. Answered with the type and the report's time, as the devices expect.
const WIFI_MESSAGE = { wifi: 0x17, wifi2: 0x69 } as const;

// A date as six BCD bytes (yy mm dd hh mi ss, UTC), or null when the digits are not a date.
function readBcdDate(reader: ByteReader): Date | null {
  const bcd = reader.bytes(6).toString('hex');
  const field = (index: number) => Number(bcd.slice(index * 2, index * 2 + 2));
  return /^\d{12}$/.test(bcd) ? utcDate(field(0), field(1), field(2), field(3), field(4), field(5)) : null;
}

function decodeWifi(type: number, accessPointCount: number, reader: ByteReader): DecodedMessage {
  const time = reader.buffer.subarray(reader.offset, reader.offset + 6);
  const deviceTime = readBcdDate(reader);
  const wifiAccessPoints: WifiAccessPoint[] = [];
  for (let index = 0; index < accessPointCount; index++) {
    wifiAccessPoints.push({ macAddress: macAddress(reader.bytes(6)), signalStrength: reader.u8() });
  }
  const cellCount = reader.u8();
  const mcc = reader.u16();
  const mnc = reader.u8();
  const cellTowers: CellTower[] = [];
  for (let index = 0; index < cellCount; index++) {
    cellTowers.push({
      mobileCountryCode: mcc, mobileNetworkCode: mnc, locationAreaCode: reader.u16(), cellId: reader.u16(),
      signalStrength: reader.u8(),
    });
  }
  const attributes: Record<string, unknown> = {};
  addNetwork(attributes, cellTowers, wifiAccessPoints);
  const ack = Buffer.concat([Buffer.from([0x78, 0x78, 0x00, type]), time, TRAILER]);
  return { positions: [], statuses: [{ deviceTime, attributes }], ack };
}

// 0x8C (FM08ABC OBD adapter): a date, ACC, then "<id>=<hex value>" pairs; the 18 bytes before the end are not data.
const OBD_VALUES: Record<number, (attributes: Record<string, unknown>, value: string) => void> = {
  0x28: (attributes, value) => { attributes['odometer'] = Number.parseInt(value, 16) / 100; },
  0x2b: (attributes, value) => { attributes['fuel'] = Number.parseInt(value, 16) / 100; },
  0x2d: (attributes, value) => { attributes['coolantTemp'] = Number.parseInt(value, 16) / 100; },
  0x35: (attributes, value) => { attributes['obdSpeed'] = Number.parseInt(value, 16) / 100; },
  0x36: (attributes, value) => { attributes['rpm'] = Number.parseInt(value, 16) / 100; },
  0x47: (attributes, value) => { attributes['fuelUsed'] = Number.parseInt(value, 16) / 100; },
  0x49: (attributes, value) => { attributes['hours'] = Number.parseInt(value, 16) / 100; },
  0x4a: (attributes, value) => { attributes['vin'] = value; },
};

function decodeObd(reader: ByteReader, offsetMinutes: number, attributes: Record<string, unknown>): Omit<DecodedMessage, 'ack'> {
  const deviceTime = readDate(reader, offsetMinutes);
  attributes['ignition'] = reader.u8() > 0;
  const text = reader.bytes(Math.max(0, bodyLeft(reader) - 12)).toString('latin1');
  for (const pair of text.split(',')) {
    const [key = '', value] = pair.split('=');
    const id = Number.parseInt(key.slice(0, 2), 16);
    if (value && (id === 0x4a || /^[0-9A-Fa-f]{1,12}$/.test(value))) {
      OBD_VALUES[id]?.(attributes, value);
    }
  }
  return { positions: [], statuses: [{ deviceTime, attributes }] };
}

// Without trailing NULs. Found by one scan from the end: the regex /\0+$/ would retry from every NUL (quadratic).
function withoutTrailingNuls(text: string): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 0) {
    end -= 1;
  }
  return text.slice(0, end);
}

function textBeforeNul(bytes: Buffer): string {
  const end = bytes.indexOf(0);
  return bytes.subarray(0, end < 0 ? bytes.length : end).toString('latin1');
}

// "Current position!Lat:N54.739332,Lon:E25.273270,Course:126.53,Speed:0.0000,DateTime:2017-05-26  10:27:47" (UTC);
// anchored, and no two repetitions can match the same characters.
const CURRENT_POSITION = /^Current position!Lat:([NS])(\d+\.\d+),Lon:([EW])(\d+\.\d+),Course:(\d+\.\d+),Speed:(\d+\.\d+),DateTime:(\d{4})-(\d\d)-(\d\d) +(\d\d):(\d\d):(\d\d)/;

function currentPositionFix(text: string): GpsFix | null {
  const match = CURRENT_POSITION.exec(text);
  if (!match) {
    return null;
  }
  const [, latitudeHemisphere, latitude, longitudeHemisphere, longitude, course, speed, ...time] = match;
  const [year, month, day, hour, minute, second] = time.map(Number) as [number, number, number, number, number, number];
  return {
    time: utcDate(year, month, day, hour, minute, second),
    valid: true,
    latitude: (latitudeHemisphere === 'S' ? -1 : 1) * Number(latitude),
    longitude: (longitudeHemisphere === 'W' ? -1 : 1) * Number(longitude),
    speed: Number(speed),
    course: Number(course),
  };
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

// What Traccar calls the variant: firmwares that reuse a type with another layout, told apart by the length field.
function isVariant(type: number, extended: boolean, lengthField: number, variantType: number, variantLength: number) {
  return !extended && type === variantType && lengthField === variantLength;
}

// QH302R sends its IMEI before the GPS block of 0x12: eight BCD bytes with a leading zero nibble (a real date there
// would be before 2016), followed by a valid date.
function startsWithImei(reader: ByteReader): boolean {
  if (reader.remaining < 14 || reader.buffer[reader.offset]! >> 4 !== 0) {
    return false;
  }
  const imei = reader.buffer.subarray(reader.offset, reader.offset + 8).toString('hex');
  const date = reader.buffer.subarray(reader.offset + 8, reader.offset + 14);
  return /^\d{16}$/.test(imei) && utcDate(date[0]!, date[1]!, date[2]!, date[3]!, date[4]!, date[5]!) !== null;
}

function decodeBody(
  type: number, reader: ByteReader, extended: boolean, lengthField: number, serial: number, state: ConnectionState,
  now: Date,
): DecodedMessage {
  const offsetMinutes = state.gt06TimeZoneOffsetMinutes ?? 0;
  const attributes: Record<string, unknown> = {};
  const ack = gt06Response(type, serial);
  switch (type) {
    case GT06_MESSAGE.login:
      return decodeLogin(reader, state, serial);

    case GT06_MESSAGE.gps:
    case GT06_MESSAGE.gpsPhone: {
      const fix = readGpsFix(reader, offsetMinutes, attributes);
      readTrailingIgnitionAndOdometer(reader, attributes);
      return { ...report(fix, attributes), ack };
    }

    case GT06_MESSAGE.gpsLbsRfid: {
      if (extended) {
        return { positions: [], statuses: [], ack };
      }
      const fix = readGpsFix(reader, offsetMinutes, attributes);
      readCell(reader, attributes);
      attributes['driverUniqueId'] = reader.bytes(8).toString('hex');
      reader.u8(); // validity of the card
      return { ...report(fix, attributes), ack };
    }

    case GT06_MESSAGE.iButton: {
      reader.skip(8); // IMEI
      const fix = readGpsFix(reader, offsetMinutes, attributes);
      readCell(reader, attributes, { cidBytes: 4 });
      attributes['driverUniqueId'] = String(reader.u32() * 0x10000 + reader.u16());
      return { ...report(fix, attributes), ack };
    }

    case GT06_MESSAGE.alarmModule: {
      const fix = readGpsFix(reader, offsetMinutes, attributes);
      const cellType = reader.u8();
      readCell(reader, attributes, cellType >= 3 ? CELL_4G : CELL_2G);
      reader.skip(cellType >= 3 ? 2 : 1); // signal strength
      readStatusBlock(reader, attributes, true);
      reader.u8(); // language
      readStatusModules(reader, attributes);
      return { ...report(fix, attributes), ack };
    }

    case GT06_MESSAGE.lbsAlarm:
    case GT06_MESSAGE.lbsAddress:
      readCell(reader, attributes, type === GT06_MESSAGE.lbsAlarm ? CELL_4G : CELL_2G);
      if (type === GT06_MESSAGE.lbsAlarm) {
        readStatusBlock(reader, attributes, false);
      }
      return { ...report(null, attributes), ack };

    case GT06_MESSAGE.fenceSingle:
      if (!extended && (lengthField === 0x0c || lengthField === 0x18)) {
        decodeSeeworldStatus(reader, lengthField, attributes);
        return { ...report(null, attributes), ack };
      }
      {
        const fix = readGpsFix(reader, offsetMinutes, attributes);
        if (bodyLeft(reader) > 0) {
          readCell(reader, attributes);
        }
        readTrailingIgnitionAndOdometer(reader, attributes);
        return { ...report(fix, attributes), ack };
      }

    case GT06_MESSAGE.alarm:
      return { ...decodeAlarm(reader, lengthField, extended, offsetMinutes, attributes), ack };

    case GT06_MESSAGE.info:
      // Traccar answers none of the information reports.
      return extended ? decodeInfo(reader, lengthField, offsetMinutes, attributes)
        : { ...report(null, { power: reader.i16() / 100 }) };

    case GT06_MESSAGE.serial: {
      reader.u8(); // external device type
      const data = reader.bytes(bodyLeft(reader));
      attributes['result'] = isPrintable(data) ? data.toString('latin1').trim() : data.toString('hex');
      return report(null, attributes);
    }

    case GT06_MESSAGE.deviceStatus:
      return { ...decodeDeviceStatus(reader, attributes), ack };

    case GT06_MESSAGE.gpsLbs:
    case GT06_MESSAGE.gpsLbsUtc:
    case GT06_MESSAGE.gpsLbs4:
    case GT06_MESSAGE.gpsLbs5: {
      const fix = decodeGpsLbs(type, reader, extended ? 0 : lengthField, offsetMinutes, attributes);
      return { ...report(fix, attributes), ack };
    }

    case GT06_MESSAGE.gpsLbsStatus:
    case GT06_MESSAGE.gpsLbsStatusAlarm:
    case GT06_MESSAGE.gpsLbsStatusFence:
    case GT06_MESSAGE.fenceMulti: {
      const fix = readGpsFix(reader, offsetMinutes, attributes);
      // VXT01 (0x16 with length 0x24) sends its cell without the length byte; SEEWORLD (length 0x26) a 4-byte cell id.
      const vxt01 = isVariant(type, extended, lengthField, GT06_MESSAGE.gpsLbsStatus, 0x24);
      if (vxt01) {
        readCell(reader, attributes);
      } else if (isVariant(type, extended, lengthField, GT06_MESSAGE.gpsLbsStatus, 0x26)) {
        reader.u8(); // cell block length
        readCell(reader, attributes, { cidBytes: 4 });
      } else {
        readCellWithLength(reader, attributes);
      }
      const isFence = type === GT06_MESSAGE.gpsLbsStatusFence || type === GT06_MESSAGE.fenceMulti;
      const alarmCode = reader.buffer[reader.offset + 3];
      readStatusBlock(reader, attributes, isFence, !vxt01);
      if (isVariant(type, extended, lengthField, GT06_MESSAGE.gpsLbsStatus, 0x2d)) {
        // TRX16i: the alarm code is also the event, and the RFID card follows the language byte.
        attributes['event'] = alarmCode;
        reader.u8(); // language
        readDriverCard(reader.bytes(8), attributes);
      }
      if (isFence && reader.remaining > 0) {
        reader.u8(); // language
      }
      readTrailingIgnitionAndOdometer(reader, attributes);
      if (isFence && reader.remaining > 0) {
        attributes['geofence'] = reader.u8();
      }
      return { ...report(fix, attributes), ack };
    }

    case GT06_MESSAGE.gpsLbs6:
    case GT06_MESSAGE.gpsLbsExtend:
    case GT06_MESSAGE.gpsLbs7:
    case GT06_MESSAGE.gpsLbsDriver: {
      const fix = readGpsFix(reader, offsetMinutes, attributes);
      if (bodyLeft(reader) > 0) {
        const layouts: Record<number, CellLayout> = {
          [GT06_MESSAGE.gpsLbs6]: { wideMnc: true, cidBytes: 4 }, [GT06_MESSAGE.gpsLbs7]: CELL_4G,
          [GT06_MESSAGE.gpsLbsDriver]: { cidBytes: 4 },
        };
        readCell(reader, attributes, layouts[type] ?? CELL_2G);
      }
      readTrailingIgnitionAndOdometer(reader, attributes);
      return { ...report(fix, attributes), ack };
    }

    case GT06_MESSAGE.gpsLbs8: {
      const fix = readGpsFix(reader, offsetMinutes, attributes);
      reader.u8(); // upload mode
      reader.u8(); // re-upload
      const cellType = reader.u8();
      readCell(reader, attributes, cellType >= 3 ? CELL_4G : CELL_2G);
      reader.skip(cellType >= 3 ? 2 : 1); // signal strength
      return report(fix, attributes); // Traccar sends no acknowledgement for this report
    }

    case GT06_MESSAGE.gpsLbs3: {
      const fix = readGpsFix(reader, offsetMinutes, attributes);
      readCell(reader, attributes);
      if (reader.remaining >= 3) {
        attributes['ignition'] = reader.u8() > 0;
        attributes['event'] = reader.u8();
        attributes['archive'] = reader.u8() > 0;
      }
      readLocationModules(reader, attributes, fix);
      return { ...report(fix, attributes), ack };
    }

    case GT06_MESSAGE.lbsMultiple3:
      if (isVariant(type, extended, lengthField, GT06_MESSAGE.lbsMultiple3, 0x2e)) {
        const fix = readGpsFix(reader, offsetMinutes, attributes);
        readCell(reader, attributes);
        attributes['ignition'] = reader.u8() > 0;
        attributes['power'] = reader.u16() / 100;
        attributes['battery'] = reader.u16() / 100;
        return report(fix, attributes); // Traccar sends no acknowledgement for this report
      }
      return {
        ...decodeLbsList(reader, lengthField === 0x31 && !extended ? WANWAY_S20_LAYOUT : LBS_LIST_LAYOUTS.get(type)!,
          offsetMinutes, attributes),
        ack,
      };

    case GT06_MESSAGE.gpsLbsStatus4:
    case GT06_MESSAGE.wifi5:
      if (extended) {
        return { ...decodeAz735(type, reader, offsetMinutes, attributes), ack: gt06ExtendedResponse(type, serial) };
      }
      if (type === GT06_MESSAGE.wifi5) {
        return { ...decodeLbsList(reader, LBS_LIST_LAYOUTS.get(type)!, offsetMinutes, attributes), ack };
      }
      {
        // SL4X (length 0x27 or 0x29): 2-byte MNC and 8-byte cell id, and the altitude after the status block.
        const sl4x = lengthField === 0x27 || lengthField === 0x29;
        const fix = readGpsFix(reader, offsetMinutes, attributes);
        if (sl4x) {
          reader.u8(); // cell block length
          readCell(reader, attributes, { wideMnc: true, cidBytes: 8 });
        } else {
          readCellWithLength(reader, attributes);
        }
        readStatusBlock(reader, attributes, false);
        if (sl4x) {
          fix.altitude = reader.i16();
        }
        readTrailingIgnitionAndOdometer(reader, attributes);
        return { ...report(fix, attributes), ack };
      }

    case GT06_MESSAGE.x1Gps:
      if (isVariant(type, extended, lengthField, GT06_MESSAGE.x1Gps, 0x37)) {
        return { ...decodeLbsList(reader, SL4X_LBS_LAYOUT, offsetMinutes, attributes), ack };
      }
      // Traccar sends no acknowledgement for this report.
      return report(decodeX1Gps(reader, offsetMinutes, attributes), attributes);

    case GT06_MESSAGE.rfidLocation:
      if (extended) {
        return { positions: [], statuses: [] }; // photo data, not kept
      }
      if (lengthField === 0x35) {
        return { ...report(decodeRfidLocation(reader, offsetMinutes, attributes), attributes), ack };
      }
      readStatusBlock(reader, attributes, false);
      reader.u8(); // language
      readStatusModules(reader, attributes);
      return { ...report(null, attributes), ack };

    case GT06_MESSAGE.gpsLbsStatus5:
      if (isVariant(type, extended, lengthField, GT06_MESSAGE.gpsLbsStatus5, 0x40)) {
        return { ...report(decodeGpsLbsStatus4g(reader, offsetMinutes, attributes), attributes), ack };
      }
      return { ...decodeLbsList(reader, LBS_LIST_LAYOUTS.get(type)!, offsetMinutes, attributes), ack };

    case 0x28:
    case 0x2e:
    case 0x18:
    case 0x2c:
    case 0xa1:
    case 0xa9:
      return { ...decodeLbsList(reader, LBS_LIST_LAYOUTS.get(type)!, offsetMinutes, attributes), ack };

    case GT06_MESSAGE.gpsModular:
      return { ...decodeModular(reader, attributes), ack };

    case GT06_MESSAGE.status:
      decodeStatus(reader, lengthField, extended, attributes);
      return { ...report(null, attributes), ack };

    case GT06_MESSAGE.lbsStatus:
      readCell(reader, attributes);
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
      if (length < 4 && reader.remaining <= 4) {
        return { ...report(null, attributes), ack };
      }
      const serverFlag = reader.u32();
      // Some firmwares leave the length at 0 and pad the text with NULs up to the language: the text ends at the first NUL.
      const text = length >= 4 ? readText(reader.bytes(length - 4), 'latin1') : textBeforeNul(reader.bytes(reader.remaining));
      if (text === '') {
        return { ...report(null, attributes), ack };
      }
      // The ICCID is kept as Traccar keeps it, and the whole text answers the command that asked for it.
      if (text.startsWith('<ICCID:')) {
        attributes['iccid'] = text.substring(7, 27);
      }
      attributes['result'] = text;
      return { ...report(null, attributes), ack, answerTo: serverFlag };
    }

    case GT06_MESSAGE.stringInfo: {
      // Traccar does not acknowledge this extended command result.
      const serverFlag = reader.u32();
      const encoding = reader.u8() === 1 ? 'latin1' : 'utf16be';
      const text = readText(reader.bytes(reader.remaining), encoding);
      attributes['result'] = text;
      // The answer to a "where" instruction carries a fix: a position, which still answers the command.
      return { ...report(currentPositionFix(text), attributes), answerTo: serverFlag };
    }

    case GT06_MESSAGE.wifi4: {
      // Traccar answers none of these.
      const time = readBcdDate(reader);
      const wifiAccessPoints: WifiAccessPoint[] = [];
      for (let count = reader.u8(), index = 0; index < count; index++) {
        reader.skip(2);
        wifiAccessPoints.push({ macAddress: macAddress(reader.bytes(6)) });
      }
      addNetwork(attributes, [], wifiAccessPoints);
      return { positions: [], statuses: [{ deviceTime: time, attributes }] };
    }

    case GT06_MESSAGE.obd:
      return { ...decodeObd(reader, offsetMinutes, attributes), ack };

    case GT06_MESSAGE.addressRequest:
      return {
        positions: [], statuses: [],
        ack: gt06ExtendedResponse(ADDRESS_RESPONSE, 0, Buffer.concat([Buffer.from([NO_ADDRESS.length, 0, 0, 0, 0]), NO_ADDRESS])),
      };

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
  if (frame.length < 6) {
    throw new ProtocolError('gt06: frame too short');
  }
  const header = frame.readUInt16BE(0);
  if (header !== SHORT_HEADER && header !== LONG_HEADER) {
    throw new ProtocolError('gt06: bad frame header');
  }
  const extended = header === LONG_HEADER;
  if (frame.length < (extended ? 11 : 10)) {
    // A stub too short for a type, serial and CRC (seen as keep-alives): nothing to keep or answer.
    return { positions: [], statuses: [], checksumMismatch: true };
  }
  // Like Traccar, the body is read between the header and the serial whatever the length field, the CRC and the
  // trailer say (splitFrames only passes frames that end in 0D0A); a frame where one disagrees is flagged, and
  // dropped only if its body does not decode.
  const lengthField = extended ? frame.readUInt16BE(2) : frame[2]!;
  const bodyStart = extended ? 5 : 4;
  const type = frame[bodyStart - 1]!;
  if (!extended && (type === WIFI_MESSAGE.wifi2 || (type === WIFI_MESSAGE.wifi && lengthField !== 0x28))) {
    return decodeWifi(type, lengthField, new ByteReader(frame, bodyStart, frame.length - 2));
  }
  const crc = frame.readUInt16BE(frame.length - 4);
  const wellFramed = lengthField + (extended ? 6 : 5) === frame.length
    && crc16X25(frame.subarray(2, frame.length - 4)) === crc && frame.subarray(frame.length - 2).equals(TRAILER);
  const serial = frame.readUInt16BE(frame.length - 6);
  if (bodyStart === frame.length - 6 && LOCATION_TYPES.has(type)) {
    // A location type without a body is the shape of our own acknowledgement, echoed back: nothing to keep or answer.
    return { positions: [], statuses: [] };
  }
  const body = (end: number) => decodeBody(type, new ByteReader(frame, bodyStart, end), extended, lengthField, serial,
    state, now);
  let message: DecodedMessage;
  try {
    message = body(frame.length - 6);
  } catch (error) {
    // Some firmwares send no serial and CRC at all, or a body shorter than its fields; Traccar then reads the body on
    // into those bytes, and so does this retry, flagging the frame.
    if (!(error instanceof ProtocolError)) {
      throw error;
    }
    message = body(frame.length - 2);
    message.checksumMismatch = true;
  }
  if (!wellFramed) {
    message.checksumMismatch = true;
  }
  return message;
}

export const gt06Protocol: TcpProtocol = {
  name: 'gt06',
  commands: gt06Commands,
  splitFrames: (buffer) => splitFrames(buffer),
  decode,
};
