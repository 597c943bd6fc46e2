// Teltonika Codec 12 commands (type 0x05) and the device's answers: Codec 12 responses (type 0x06) and Codec 13.
// Frame: 00000000 <data length:4> <codec> 01 <type> <size:4> <payload> 01 <CRC-16/IBM of codec..quantity as 4 bytes>.

import { crc16Ibm } from '../checksum.ts';
import type { ByteReader } from '../byte-reader.ts';
import { commandEncoder } from '../command-types.ts';
import type { DeviceCommand } from '../command-types.ts';
import { commandText, isHexData } from '../command-text.ts';
import { isPlausibleDeviceTime } from '../plausibility.ts';
import type { DecodedStatus } from '../types.ts';
import { ProtocolError } from '../types.ts';

export const TELTONIKA_COMMAND_CODECS = { codec12: 0x0c, codec13: 0x0d } as const;
const COMMAND_TYPE = 0x05;
export const TELTONIKA_RESPONSE_TYPE = 0x06;
/** Codec 12 packets of this type carry camera data, not an answer. */
const CAMERA_TYPE = 0x0d;
/** Commands stay far below what a device buffers; Traccar's own are a few bytes. */
const MAX_PAYLOAD = 1024;

/** One Codec 12 message (a command of type 0x05, or, on the simulator's side, a response of type 0x06). */
export function teltonikaCodec12Frame(type: number, payload: Buffer): Buffer {
  fitting(payload);
  const frame = Buffer.alloc(8 + 8 + payload.length + 4);
  let offset = frame.writeUInt32BE(0, 0);
  offset = frame.writeUInt32BE(payload.length + 8, offset);
  offset = frame.writeUInt8(TELTONIKA_COMMAND_CODECS.codec12, offset);
  offset = frame.writeUInt8(1, offset);
  offset = frame.writeUInt8(type, offset);
  offset = frame.writeUInt32BE(payload.length, offset);
  offset += payload.copy(frame, offset);
  offset = frame.writeUInt8(1, offset);
  frame.writeUInt32BE(crc16Ibm(frame.subarray(8, offset)), offset);
  return frame;
}

function fitting(payload: Buffer): Buffer {
  if (payload.length > MAX_PAYLOAD) throw new ProtocolError(`teltonika: a command holds at most ${MAX_PAYLOAD} bytes`);
  return payload;
}

function payload(command: DeviceCommand): Buffer {
  switch (command.type) {
    case 'engineStop':
      return Buffer.from('setdigout 1', 'latin1');
    case 'engineResume':
      return Buffer.from('setdigout 0', 'latin1');
    default: {
      const data = commandText(command);
      return fitting(isHexData(data) ? Buffer.from(data, 'hex') : Buffer.from(data, 'latin1'));
    }
  }
}

export const teltonikaCommands = commandEncoder(['custom', 'engineStop', 'engineResume'], payload, (bytes) => teltonikaCodec12Frame(COMMAND_TYPE, bytes));

const PRINTABLE = /^[\x20-\x7e\r\n\t]*$/;

function resultText(bytes: Buffer): string {
  const text = bytes.toString('latin1');
  return PRINTABLE.test(text) ? text.trim() : bytes.toString('hex');
}

/** An axle-load scale's report on the serial port (`UUUUww<axle1>;…;<totalTrailer>;SSS`), which answers no command. */
const AXLE_LOAD_KEYS = ['axle1', 'axle2', 'axle3', 'axle4', 'axle5', 'axle6', 'axle7', 'axle8', 'loadTruck', 'loadTrailer', 'totalTruck', 'totalTrailer'];

function serialAttributes(text: string): Record<string, unknown> {
  if (text.startsWith('UUUUww') && text.endsWith('SSS')) {
    const values = text.slice(6, -3).split(';').map(Number);
    if (values.length >= AXLE_LOAD_KEYS.length && values.slice(0, AXLE_LOAD_KEYS.length).every(Number.isFinite)) {
      return Object.fromEntries(AXLE_LOAD_KEYS.map((key, index) => [key, values[index]]));
    }
  }
  return { result: text };
}

/** A Codec 13 timestamp from a clock that was never set (or runs far ahead) is dropped: the answer still counts. */
function codec13Time(seconds: number, now: Date): Date | null {
  const time = new Date(seconds * 1000);
  return isPlausibleDeviceTime(time, now) ? time : null;
}

/**
 * The answer of a Codec 12 or 13 packet (the reader stands after the codec byte, before the quantity): the device's
 * reply text as `result` (hex when not printable), with the device's time for Codec 13. The device expects no
 * acknowledgement of it.
 */
export function readTeltonikaAnswer(reader: ByteReader, codec: number, now: Date): DecodedStatus[] {
  const count = reader.u8();
  const statuses: DecodedStatus[] = [];
  for (let index = 0; index < count; index++) {
    const type = reader.u8();
    const size = reader.u32();
    if (codec === TELTONIKA_COMMAND_CODECS.codec13) {
      if (size < 4) throw new ProtocolError('teltonika: codec 13 packet shorter than its timestamp');
      const deviceTime = codec13Time(reader.u32(), now);
      // Some firmwares count the text alone, without the timestamp: then the last text runs up to the trailing count.
      const textLength = index === count - 1 && reader.remaining === size + 1 ? size : size - 4;
      const text = resultText(reader.bytes(textLength));
      // A tachograph's driver card report (GTSL|…|card|…) rides on Codec 13 too; it answers no command.
      const attributes = text.startsWith('GTSL') ? { driverUniqueId: text.split('|')[4] ?? '' } : { result: text };
      statuses.push({ deviceTime, attributes });
    } else if (type !== CAMERA_TYPE) {
      statuses.push({ deviceTime: null, attributes: serialAttributes(resultText(reader.bytes(size))) });
    } else {
      reader.skip(size);
    }
  }
  if (reader.u8() !== count || reader.remaining !== 0) throw new ProtocolError('teltonika: record count mismatch');
  return statuses;
}
