// GT06 online commands (type 0x80): the server writes a text instruction; the device answers with 0x15 (or 0x21 on
// 0x7979 frames) carrying the same 4-byte server flag and its reply text.

import { crc16X25 } from '../checksum.ts';
import { commandEncoder } from '../command-types.ts';
import type { DeviceCommand } from '../command-types.ts';
import { commandText } from '../command-text.ts';
import { ProtocolError } from '../types.ts';

const ONLINE_COMMAND = 0x80;
/** The frame's one-byte length counts type, command length, flag, text, serial and CRC. */
const MAX_TEXT_BYTES = 255 - (1 + 1 + 4 + 2 + 2);

/**
 * `78 78 <len> 80 <4 + text length> <server flag:4> <ASCII text> <serial:2> <CRC-16/X-25:2> 0D 0A`. The device echoes
 * the server flag in its answer, so it carries the command's sequence.
 */
export function gt06CommandFrame(text: string, serverFlag: number, serial: number): Buffer {
  const content = fitting(text);
  const frame = Buffer.alloc(15 + content.length);
  let offset = frame.writeUInt16BE(0x7878, 0);
  offset = frame.writeUInt8(1 + 1 + 4 + content.length + 2 + 2, offset);
  offset = frame.writeUInt8(ONLINE_COMMAND, offset);
  offset = frame.writeUInt8(4 + content.length, offset);
  offset = frame.writeUInt32BE(serverFlag >>> 0, offset);
  offset += content.copy(frame, offset);
  offset = frame.writeUInt16BE(serial & 0xffff, offset);
  offset = frame.writeUInt16BE(crc16X25(frame.subarray(2, offset)), offset);
  frame.writeUInt16BE(0x0d0a, offset);
  return frame;
}

/** The text as the frame carries it, when it fits. */
function fitting(text: string): Buffer {
  const content = Buffer.from(text, 'latin1');
  if (content.length > MAX_TEXT_BYTES) throw new ProtocolError(`gt06: a command holds at most ${MAX_TEXT_BYTES} bytes`);
  return content;
}

function instruction(command: DeviceCommand): string {
  const text = command.type === 'engineStop' ? 'Relay,1#' : command.type === 'engineResume' ? 'Relay,0#' : commandText(command);
  fitting(text);
  return text;
}

export const gt06Commands = commandEncoder(['custom', 'engineStop', 'engineResume'], instruction, (text, { sequence }) => gt06CommandFrame(text, sequence, sequence));
