// The GT06 tracker as the simulator, the tests and the benchmarks drive it: the frames it writes (each the
// inverse of the decoder for the fields it writes) and how it reads the server. Loaded on demand by the registry's
// `simulator`: the server never loads it.

import { crc16X25 } from '../checksum.ts';
import { gt06Response } from './decoder.ts';
import { kmh, numberedIds } from '../simulated-tracker.ts';
import type { DeviceFix, SimulatedTracker } from '../simulated-tracker.ts';

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

const REPLIES: Record<string, string> = {
  'Relay,1#': 'Cut off the fuel supply: Success!',
  'Relay,0#': 'Restore fuel supply: Success!',
};

function commandText(frame: Buffer): string {
  return frame.subarray(9, 9 + frame[4]! - 4).toString('latin1');
}

export const gt06Tracker: SimulatedTracker = {
  uniqueId: numberedIds('35971004909', 15),
  login: (uniqueId, serial) => [gt06Login(uniqueId, serial)],
  report: (_uniqueId, fix, serial) => gt06Location(fix, serial),
  serverFrameLength: (buffer) => (buffer.length < 4 ? undefined : buffer[0] === 0x79 ? 6 + buffer.readUInt16BE(2) : 5 + buffer[2]!),
  commands: {
    isCommand: (frame) => frame[3] === 0x80,
    acknowledgesAnswer: (frame) => frame[3] === 0x15,
    // A 0x15 message carrying the command's server flag, as written, and the reply text.
    answer(_uniqueId, frame, _fix, serial) {
      const text = commandText(frame);
      const reply = Buffer.from(REPLIES[text] ?? `${text} OK`, 'latin1');
      const content = Buffer.alloc(1 + 4 + reply.length + 2);
      content.writeUInt8(4 + reply.length, 0);
      frame.copy(content, 1, 5, 9);
      reply.copy(content, 5);
      content.writeUInt16BE(2, 5 + reply.length); // language: English
      return gt06Response(0x15, serial, content);
    },
  },
};
