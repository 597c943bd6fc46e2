// The device side of commands, for the simulator, tests and the bench: telling a server's command from its
// acknowledgements, and answering it as the trackers do (GT06 0x15, Teltonika Codec 12 type 0x06, H02 V4, JT808
// terminal general response 0x0001, GPS103 report keyed by the instruction's letter).

import { gps103Location, h02Location } from './encoders.ts';
import type { DeviceFix } from './encoders.ts';
import { gt06Response } from '../../services/tracking/protocols/gt06/decoder.ts';
import { JT808_MESSAGES, jt808MessageType, jt808TerminalResponse } from '../../services/tracking/protocols/jt808/decoder.ts';
import { TELTONIKA_RESPONSE_TYPE, teltonikaCodec12Frame } from '../../services/tracking/protocols/teltonika/commands.ts';

export const COMMAND_PROTOCOLS = ['gt06', 'teltonika', 'h02', 'jt808', 'gps103'] as const;
export type CommandProtocol = (typeof COMMAND_PROTOCOLS)[number];

/** What the JT808 server writes that is not a command: its acknowledgements and answers. */
const JT808_SERVER_ANSWERS: ReadonlySet<number> = new Set([
  JT808_MESSAGES.generalResponse, JT808_MESSAGES.generalResponse2, JT808_MESSAGES.registerResponse, JT808_MESSAGES.timeSyncResponse,
]);

/** GPS103 answers of the server, each a frame of its own; its commands (`**,imei:…`) have no terminator. */
const GPS103_ANSWERS = ['ON', 'LOAD'];

/** Where the GPS103 frame starting the buffer ends: a command runs up to the next frame, or to what has arrived. */
function gps103FrameLength(buffer: Buffer): number | undefined {
  const text = buffer.toString('latin1');
  const answer = GPS103_ANSWERS.find((candidate) => text.startsWith(candidate));
  if (answer) return answer.length;
  // Not yet known: a frame's first bytes.
  if ([...GPS103_ANSWERS, '**,'].some((start) => start.startsWith(text))) return undefined;
  // Bytes of no frame the server writes are passed on one at a time, as not commands.
  if (!text.startsWith('**,')) return 1;
  const ends = ['**,', ...GPS103_ANSWERS].map((next) => text.indexOf(next, 3)).filter((index) => index > 0);
  return ends.length > 0 ? Math.min(...ends) : text.length;
}

/**
 * Length of the next whole frame the server wrote to a logged-in device (acknowledgement or command), or undefined
 * while it is incomplete. Teltonika's acknowledgement is a non-zero record count; its commands start with 4 zero bytes.
 * A GPS103 command is taken whole from what has arrived (the server writes each at once), so a custom instruction
 * holding `ON` or `LOAD` is cut there: the simulated trackers answer the commands the server encodes.
 */
export function serverFrameLength(protocol: CommandProtocol, buffer: Buffer): number | undefined {
  switch (protocol) {
    case 'gt06':
      if (buffer.length < 4) return undefined;
      return buffer[0] === 0x79 ? 6 + buffer.readUInt16BE(2) : 5 + buffer[2]!;
    case 'teltonika':
      if (buffer.length < 4) return undefined;
      if (buffer.readUInt32BE(0) !== 0) return 4;
      return buffer.length < 8 ? undefined : 12 + buffer.readUInt32BE(4);
    case 'h02': {
      const end = buffer.indexOf('#');
      return end < 0 ? undefined : end + 1;
    }
    case 'jt808': {
      if (buffer.length === 0) return undefined;
      const end = buffer.indexOf(buffer[0]!, 1);
      return end < 0 ? undefined : end + 1;
    }
    case 'gps103':
      return gps103FrameLength(buffer);
  }
}

/** Whether a server frame is a command rather than an acknowledgement. */
export function isServerCommand(protocol: CommandProtocol, frame: Buffer): boolean {
  switch (protocol) {
    case 'gt06':
      return frame[3] === 0x80;
    case 'teltonika':
      return frame.length > 4;
    case 'h02':
      // The server acknowledges with V4 messages; instructions name anything else.
      return !/^\*HQ,[^,]*,V4,/.test(frame.toString('latin1'));
    case 'jt808':
      return !JT808_SERVER_ANSWERS.has(jt808MessageType(frame));
    case 'gps103':
      // `**,imei:<id>,E;` answers an SOS report; commands have no terminator.
      return frame.toString('latin1').startsWith('**,') && !frame.toString('latin1').endsWith(';');
  }
}

/** The instruction text a command frame carries. */
export function commandTextOf(protocol: CommandProtocol, frame: Buffer): string {
  switch (protocol) {
    case 'gt06':
      return frame.subarray(9, 9 + frame[4]! - 4).toString('latin1');
    case 'teltonika':
      return frame.subarray(15, 15 + frame.readUInt32BE(11)).toString('latin1');
    case 'h02':
    case 'jt808':
      return frame.toString('latin1');
    case 'gps103':
      // **,imei:<id>,<instruction>
      return frame.toString('latin1').split(',').slice(2).join(',');
  }
}

const GT06_REPLIES: Record<string, string> = {
  'Relay,1#': 'Cut off the fuel supply: Success!',
  'Relay,0#': 'Restore fuel supply: Success!',
};

const TELTONIKA_REPLIES: Record<string, string> = {
  'setdigout 1': 'DOUT1:1 DOUT2:IGNORED',
  'setdigout 0': 'DOUT1:0 DOUT2:IGNORED',
};

/**
 * What a tracker answers to a command frame: GT06 copies the server flag into a 0x15 message, Teltonika answers with
 * a Codec 12 response, H02 with a V4 message naming the instruction and its time, followed by its location (`fix`),
 * JT808 with a general response (success) naming the command's serial and id, GPS103 with a report at `fix`.
 */
export function deviceAnswer(protocol: CommandProtocol, uniqueId: string, frame: Buffer, fix: DeviceFix, serial = 1): Buffer {
  const text = commandTextOf(protocol, frame);
  switch (protocol) {
    case 'gt06': {
      const reply = Buffer.from(GT06_REPLIES[text] ?? `${text} OK`, 'latin1');
      const content = Buffer.alloc(1 + 4 + reply.length + 2);
      content.writeUInt8(4 + reply.length, 0);
      frame.copy(content, 1, 5, 9); // the server flag, as written
      reply.copy(content, 5);
      content.writeUInt16BE(2, 5 + reply.length); // language: English
      return gt06Response(0x15, serial, content);
    }
    case 'teltonika':
      return teltonikaCodec12Frame(TELTONIKA_RESPONSE_TYPE, Buffer.from(TELTONIKA_REPLIES[text] ?? `${text} OK`, 'latin1'));
    case 'h02': {
      const [, , instruction = '', time = ''] = text.slice(1, -1).split(',');
      const location = h02Location(uniqueId, fix).toString('latin1');
      const prefix = `*HQ,${uniqueId},V1,`;
      return Buffer.from(`*HQ,${uniqueId},V4,${instruction},DONE,${time},${location.slice(prefix.length)}`, 'latin1');
    }
    case 'jt808':
      return jt808TerminalResponse(frame, serial);
    case 'gps103':
      // J (engine stop) is answered `jt`, K `kt`: the instruction's letter, then t.
      return gps103Location(uniqueId, fix, `${text.charAt(0).toLowerCase()}t`);
  }
}
