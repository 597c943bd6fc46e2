// Ruptela FM-Eco, FM-Pro, FM-Tco, Trace (Traccar's `ruptela`, port 5046, TCP). Frames: data length (2), data, CRC-16/KERMIT
// of the data (2). Data: IMEI as a 64-bit number, command, body. Records (1) and extended records (68) carry
// timestamped fixes with 1-, 2-, 4- and 8-byte IO elements, answered `0002 64 01 13bc`; DTC reports (9) answered
// `0002 6d 01 c4a4`; identification (15) and heartbeat (16) answered `<100 + command> 01`; command answers kept as results.

import { ByteReader } from '../byte-reader.ts';
import { crc16Kermit } from '../checksum.ts';
import { commandEncoder } from '../command-types.ts';
import type { DeviceCommand } from '../command-types.ts';
import { addAlarm, int64Value, isValidCoordinate, knotsFromKmh } from '../decode-helpers.ts';
import type { ConnectionState, DecodedMessage, DecodedPosition, DecodedStatus, TcpProtocol } from '../types.ts';
import { ProtocolError } from '../types.ts';

/** A file chunk is the longest message; Traccar's frame limit is about the same. */
const MAX_DATA_LENGTH = 2048;

export const RUPTELA_MESSAGES = {
  records: 1,
  configuration: 2,
  version: 3,
  firmwareUpdate: 4,
  smsViaGprsResponse: 7,
  smsViaGprs: 8,
  dtcs: 9,
  identification: 15,
  heartbeat: 16,
  setIo: 17,
  files: 37,
  extendedRecords: 68,
} as const;

function splitFrames(buffer: Buffer): { frames: Buffer[]; consumed: number } {
  const frames: Buffer[] = [];
  let offset = 0;
  while (buffer.length - offset >= 2) {
    const length = buffer.readUInt16BE(offset);
    if (length < 9 || length > MAX_DATA_LENGTH) {
      if (frames.length > 0) break;
      throw new ProtocolError(`ruptela: data length ${length} out of range`);
    }
    if (buffer.length - offset < 2 + length + 2) break;
    frames.push(buffer.subarray(offset, offset + 2 + length + 2));
    offset += 2 + length + 2;
  }
  return { frames, consumed: offset };
}

/** A server message: length, `100 + command`, content, CRC. */
export function ruptelaMessage(command: number, content: Buffer): Buffer {
  const frame = Buffer.alloc(2 + 1 + content.length + 2);
  frame.writeUInt16BE(1 + content.length, 0);
  frame.writeUInt8(100 + command, 2);
  content.copy(frame, 3);
  frame.writeUInt16BE(crc16Kermit(frame.subarray(2, 3 + content.length)), 3 + content.length);
  return frame;
}

const RECORDS_ACK = Buffer.from('0002640113bc', 'hex');
const DTCS_ACK = Buffer.from('00026d01c4a4', 'hex');

type Attributes = Record<string, unknown>;

function readValue(reader: ByteReader, length: number, signed: boolean): number | string {
  switch (length) {
    case 1:
      return signed ? reader.i8() : reader.u8();
    case 2:
      return signed ? reader.i16() : reader.u16();
    case 4:
      return signed ? reader.i32() : reader.u32();
    default:
      return int64Value(reader.i64());
  }
}

// IO element ids Traccar names; any other id is kept as io<id>.
function readParameter(id: number, reader: ByteReader, length: number, attributes: Attributes): void {
  const unsigned = () => Number(readValue(reader, length, false));
  const signed = () => Number(readValue(reader, length, true));
  const alarmIf = (condition: boolean, alarm: string) => {
    if (condition) addAlarm(attributes, alarm);
  };
  switch (id) {
    case 2: case 3: case 4: case 5: attributes[`in${id - 1}`] = unsigned(); break;
    case 13: case 173: attributes['motion'] = unsigned() > 0; break;
    case 20: attributes['adc3'] = unsigned(); break;
    case 21: attributes['adc4'] = unsigned(); break;
    case 22: attributes['adc1'] = unsigned(); break;
    case 23: attributes['adc2'] = unsigned(); break;
    case 29: attributes['power'] = unsigned() / 1000; break;
    case 30: attributes['battery'] = unsigned() / 1000; break;
    case 32: attributes['deviceTemp'] = signed(); break;
    case 34: attributes['driverUniqueId'] = reader.bytes(length).toString('hex'); break;
    case 39: attributes['engineLoad'] = unsigned(); break;
    case 65: attributes['odometer'] = unsigned(); break;
    case 74: attributes['temp3'] = signed() / 10; break;
    case 78: case 79: case 80: attributes[`temp${id - 78}`] = signed() / 10; break;
    case 88: alarmIf(unsigned() > 0, 'jamming'); break;
    case 94: attributes['rpm'] = unsigned() * 0.25; break;
    case 95: attributes['obdSpeed'] = unsigned(); break;
    case 98: attributes['fuel'] = (unsigned() * 100) / 255; break;
    case 100: attributes['fuelConsumption'] = unsigned() / 20; break;
    case 134: alarmIf(unsigned() > 0, 'hardBraking'); break;
    case 136: alarmIf(unsigned() > 0, 'hardAcceleration'); break;
    case 150: attributes['operator'] = unsigned(); break;
    case 163: attributes['odometer'] = unsigned() * 5; break;
    case 164: attributes['tripOdometer'] = unsigned() * 5; break;
    case 165: attributes['obdSpeed'] = unsigned() / 256; break;
    case 166: case 197: attributes['rpm'] = unsigned() * 0.125; break;
    case 170: attributes['charge'] = unsigned() > 0; break;
    case 205: attributes['fuel'] = unsigned(); break;
    case 207: attributes['fuelLevel'] = unsigned() * 0.4; break;
    case 208: attributes['fuelUsed'] = unsigned() * 0.5; break;
    case 251: case 409: attributes['ignition'] = unsigned() > 0; break;
    case 410: alarmIf(unsigned() > 0, 'tow'); break;
    case 411: alarmIf(unsigned() > 0, 'accident'); break;
    case 415: alarmIf(unsigned() === 0, 'gpsAntennaCut'); break;
    case 645: attributes['obdOdometer'] = unsigned() * 1000; break;
    case 758: alarmIf(unsigned() === 1, 'tampering'); break;
    default: attributes[`io${id}`] = readValue(reader, length, false);
  }
}

/** Two 8-byte IO values holding a 16-character id (CAN or tachograph driver). */
function joinDriver(attributes: Attributes, first: string, second: string): void {
  const [high, low] = [attributes[first], attributes[second]];
  if (high === undefined || low === undefined) return;
  delete attributes[first];
  delete attributes[second];
  const bytes = Buffer.alloc(16);
  bytes.writeBigInt64BE(BigInt(high as number | string), 0);
  bytes.writeBigInt64BE(BigInt(low as number | string), 8);
  attributes['driverUniqueId'] = bytes.toString('latin1');
}

interface RecordReport {
  time: Date;
  location: { latitude: number; longitude: number; altitude: number; course: number; speed: number } | null;
  attributes: Attributes;
}

function toReport(record: RecordReport): DecodedPosition | DecodedStatus {
  const { time, location, attributes } = record;
  if (!location || !isValidCoordinate(location.latitude, location.longitude)) return { deviceTime: time, attributes };
  return { fixTime: time, deviceTime: time, valid: true, ...location, accuracy: 0, attributes };
}

const NO_COORDINATE = -0x80000000;

function decodeRecords(reader: ByteReader, extended: boolean): RecordReport[] {
  reader.skip(1); // records left
  const records: RecordReport[] = [];
  for (let count = reader.u8(); count > 0; count--) {
    let record: RecordReport = { time: new Date(reader.u32() * 1000), location: null, attributes: {} };
    reader.skip(1); // timestamp extension
    if (extended) {
      // Parts of one record split over several: the later parts add to the first.
      const extension = reader.u8();
      const [merged, current] = [extension >> 4, extension & 0x0f];
      const previous = records.at(-1);
      if (current > 0 && current <= merged && previous) record = records.pop()!;
    }
    reader.skip(1); // priority
    const longitude = reader.i32();
    const latitude = reader.i32();
    if (longitude > NO_COORDINATE && latitude > NO_COORDINATE) {
      const altitude = reader.u16() / 10;
      const course = reader.u16() / 100;
      record.attributes['sat'] = reader.u8();
      const speed = knotsFromKmh(reader.u16());
      record.attributes['hdop'] = reader.u8() / 10;
      record.location = { latitude: latitude / 1e7, longitude: longitude / 1e7, altitude, course, speed };
    } else {
      reader.skip(8);
    }
    record.attributes['event'] = extended ? reader.u16() : reader.u8();
    for (const size of [1, 2, 4, 8]) {
      for (let values = reader.u8(); values > 0; values--) {
        readParameter(extended ? reader.u16() : reader.u8(), reader, size, record.attributes);
      }
    }
    joinDriver(record.attributes, 'io126', 'io127');
    joinDriver(record.attributes, 'io155', 'io156');
    const [tagHigh, tagLow] = [record.attributes['io760'], record.attributes['io761']];
    if (tagHigh !== undefined && tagLow !== undefined) {
      delete record.attributes['io760'];
      delete record.attributes['io761'];
      record.attributes['tagId'] = BigInt(tagHigh as number | string).toString(16) + BigInt(tagLow as number | string).toString(16);
    }
    records.push(record);
  }
  return records;
}

function decodeDtcs(reader: ByteReader): DecodedPosition[] {
  const positions: DecodedPosition[] = [];
  for (let count = reader.u8(); count > 0; count--) {
    reader.skip(1);
    const time = new Date(reader.u32() * 1000);
    const longitude = reader.i32() / 1e7;
    const latitude = reader.i32() / 1e7;
    const attributes: Attributes = {};
    if (reader.u8() === 2) attributes['archive'] = true;
    attributes['dtcs'] = reader.bytes(5).toString('latin1');
    if (isValidCoordinate(latitude, longitude)) {
      positions.push({ fixTime: time, deviceTime: time, valid: true, latitude, longitude, altitude: 0, speed: 0, course: 0, accuracy: 0, attributes });
    }
  }
  return positions;
}

function decode(frame: Buffer): DecodedMessage {
  const end = frame.length - 2;
  const checksumMismatch = crc16Kermit(frame.subarray(2, end)) !== frame.readUInt16BE(end);
  const reader = new ByteReader(frame, 2, end);
  const uniqueId = reader.u64().toString().padStart(15, '0');
  const type = reader.u8();
  // Traccar never checks the CRC: a mismatch is accepted and counted.
  const message: DecodedMessage = { uniqueId, positions: [], statuses: [], ...(checksumMismatch ? { checksumMismatch } : {}) };
  const add = (report: DecodedPosition | DecodedStatus) => {
    if ('latitude' in report) message.positions.push(report);
    else message.statuses.push(report);
  };
  switch (type) {
    case RUPTELA_MESSAGES.records:
    case RUPTELA_MESSAGES.extendedRecords:
      decodeRecords(reader, type === RUPTELA_MESSAGES.extendedRecords).forEach((record) => add(toReport(record)));
      message.ack = RECORDS_ACK;
      break;
    case RUPTELA_MESSAGES.dtcs:
      message.positions.push(...decodeDtcs(reader));
      message.ack = DTCS_ACK;
      break;
    case RUPTELA_MESSAGES.identification:
    case RUPTELA_MESSAGES.heartbeat:
      message.ack = ruptelaMessage(type, Buffer.from([1]));
      break;
    case RUPTELA_MESSAGES.configuration:
    case RUPTELA_MESSAGES.version:
    case RUPTELA_MESSAGES.firmwareUpdate:
    case RUPTELA_MESSAGES.smsViaGprsResponse:
      message.statuses.push({ deviceTime: null, attributes: { type, result: frame.toString('latin1', reader.offset, end).trim() } });
      break;
    case RUPTELA_MESSAGES.setIo:
      message.statuses.push({ deviceTime: null, attributes: { type, result: String(reader.u8()) } });
      break;
    default:
      break; // file transfers and others: nothing kept
  }
  return message;
}

const smsViaGprs = (text: string) => ruptelaMessage(RUPTELA_MESSAGES.smsViaGprs, Buffer.from(text, 'latin1'));

/** Traccar's Ruptela commands: SMS-style text over GPRS, IO setting, or a raw hex message. */
export const ruptelaCommands = commandEncoder(
  ['custom', 'engineStop', 'engineResume', 'outputControl'],
  (command: DeviceCommand): Buffer => {
    switch (command.type) {
      case 'custom': {
        const data = String(command.attributes['data'] ?? '');
        if (data === '') throw new ProtocolError('ruptela: custom data is empty');
        return /^([0-9a-fA-F]{2})+$/.test(data) ? Buffer.from(data, 'hex') : smsViaGprs(data);
      }
      case 'engineStop':
        return smsViaGprs('pass immobilizer 10');
      case 'engineResume':
        return smsViaGprs('pass resetimmob');
      case 'outputControl': {
        const [index, data] = [Number(command.attributes['index']), Number(command.attributes['data'])];
        if (!Number.isInteger(index) || !Number.isInteger(data) || index < 0 || data < 0 || index > 0x7fffffff || data > 0x7fffffff) {
          throw new ProtocolError('ruptela: output index and data must be whole numbers');
        }
        const content = Buffer.alloc(8);
        content.writeInt32BE(index, 0);
        content.writeInt32BE(data, 4);
        return ruptelaMessage(RUPTELA_MESSAGES.setIo, content);
      }
      default:
        throw new ProtocolError(`ruptela: ${command.type} is not supported`);
    }
  },
  // The frame depends on no device: it is the instruction itself.
  (frame) => frame,
);

export const ruptelaProtocol: TcpProtocol = {
  name: 'ruptela',
  splitFrames,
  decode: (frame: Buffer, _state: ConnectionState) => decode(frame),
  commands: ruptelaCommands,
};
