// The "watch" protocol of kids' and elderly watches (3G Elektronik, Wonlex, SeTracker; Traccar's `watch`, port 5093):
// `[<maker>*<id>*[<index>*]<length hex 4>*<type>[,<content>]]`, with `}` escapes (`}\x01` = `}`, 2 `[`, 3 `]`,
// 4 `,`, 5 `*`) inside. Locations (UD, UD2, UD_LTE, AL alarms, WT) carry `ddmmyy,hhmmss,A,lat,N,lon,E,km/h,course,
// altitude,satellites,rssi,battery,steps,tumbles,status hex,...`. INIT, LK (link), AL and TKQ are answered in the
// same envelope. Voice (TK, TK2, JXTK in parts) and picture (img) messages are answered where the watch waits for it and
// recorded as an attribute-only report (`media`, `mediaSize`); the media itself is not kept (docs/protocols.md).

import { commandEncoder } from '../command-types.ts';
import type { DeviceCommand } from '../command-types.ts';
import { addAlarm, isValidCoordinate, knotsFromKmh, utcDate } from '../decode-helpers.ts';
import type { ConnectionState, DecodedMessage, DecodedPosition, TcpProtocol } from '../types.ts';
import { ProtocolError } from '../types.ts';

const OPEN = 0x5b; // '['
const CLOSE = 0x5d; // ']'
const ESCAPE = 0x7d; // '}'
/** Voice and picture messages are long; the connection's buffer limit applies before this. */
const MAX_FRAME_LENGTH = 64 * 1024;
const UNESCAPED: Record<number, number> = { 1: 0x7d, 2: 0x5b, 3: 0x5d, 4: 0x2c, 5: 0x2a };

/**
 * Frames end where the brackets balance. How far the partial frame at the buffer's start was scanned is kept in the
 * connection state, so a long frame arriving in pieces is scanned once, not once per piece.
 */
function splitFrames(buffer: Buffer, state: ConnectionState): { frames: Buffer[]; consumed: number } {
  const frames: Buffer[] = [];
  let offset = 0;
  while (offset < buffer.length) {
    if (buffer[offset] !== OPEN) {
      if (buffer[offset] === 0x0d || buffer[offset] === 0x0a) {
        offset += 1;
        continue;
      }
      if (frames.length > 0) break;
      throw new ProtocolError(`watch: garbage byte 0x${buffer[offset]!.toString(16)} where a frame was expected`);
    }
    const resume = offset === 0 ? state.watchScan : undefined;
    let depth = resume?.depth ?? 0;
    let index = offset + (resume?.scanned ?? 0);
    let end = -1;
    for (; index < buffer.length; index++) {
      const byte = buffer[index]!;
      if (byte === OPEN) depth += 1;
      else if (byte === CLOSE) depth -= 1;
      if (depth === 0 && index > offset) {
        end = index + 1;
        break;
      }
    }
    if (end < 0) {
      if (index - offset >= MAX_FRAME_LENGTH) throw new ProtocolError(`watch: no frame end within ${MAX_FRAME_LENGTH} bytes`);
      state.watchScan = { scanned: index - offset, depth };
      break;
    }
    state.watchScan = undefined;
    frames.push(buffer.subarray(offset, end));
    offset = end;
  }
  return { frames, consumed: offset };
}

function unescape(frame: Buffer): Buffer {
  if (!frame.includes(ESCAPE)) return frame;
  const out = Buffer.allocUnsafe(frame.length);
  let length = 0;
  for (let index = 0; index < frame.length; index++) {
    const byte = frame[index]!;
    if (byte === ESCAPE) {
      const replacement = UNESCAPED[frame[index + 1] ?? -1];
      if (replacement === undefined) throw new ProtocolError('watch: bad escape');
      out[length++] = replacement;
      index += 1;
    } else {
      out[length++] = byte;
    }
  }
  return out.subarray(0, length);
}

// Numbers are written `\d+(?:\.\d*)?`, never `\d+\.?\d*`: the optional dot must not let two digit runs overlap.
const LOCATION = /^(\d\d)(\d\d)(\d\d),(\d\d)(\d\d)(\d\d),([AV]), *(-?\d+(?:\.\d*)?),([NS])?, *(-?\d+(?:\.\d*)?),([EW])?,(\d+(?:\.\d*)?),(\d+(?:\.\d*)?),(-?\d+(?:\.\d*)?),(\d+),(\d+),(\d+),(\d+),\d+,([0-9a-fA-F]+),/;

// Status word bits, the first that is set wins, as in Traccar.
const STATUS_ALARMS: [number, string][] = [
  [0, 'lowBattery'], [1, 'geofenceExit'], [2, 'geofenceEnter'], [14, 'powerCut'], [16, 'sos'], [17, 'lowBattery'],
  [18, 'geofenceExit'], [19, 'geofenceEnter'], [20, 'removing'], [21, 'fallDown'], [22, 'fallDown'],
];

function decodeLocation(content: string): DecodedPosition | null {
  const match = LOCATION.exec(`${content},`);
  if (!match) return null;
  const number = (index: number) => Number(match[index]);
  const time = utcDate(number(3), number(2), number(1), number(4), number(5), number(6));
  const latitude = number(8) * (match[9] === 'S' ? -1 : 1);
  const longitude = number(10) * (match[11] === 'W' ? -1 : 1);
  if (time === null || !isValidCoordinate(latitude, longitude)) return null;
  const status = Number.parseInt(match[19]!, 16);
  const attributes: Record<string, unknown> = { sat: number(15), rssi: number(16), batteryLevel: number(17), steps: number(18) };
  if (Number.isFinite(status)) {
    addAlarm(attributes, STATUS_ALARMS.find(([bit]) => Math.floor(status / 2 ** bit) % 2 === 1)?.[1]);
    if (Math.floor(status / 16) % 2 === 1) attributes['motion'] = true;
  }
  return {
    fixTime: time, deviceTime: time, valid: match[7] === 'A', latitude, longitude, altitude: number(14),
    speed: knotsFromKmh(number(12)), course: number(13), accuracy: 0, attributes,
  };
}

interface Envelope {
  maker: string;
  id: string;
  index: string | undefined;
  type: string;
  content: string | undefined;
}

function readEnvelope(frame: Buffer): Envelope {
  const text = unescape(frame).toString('latin1');
  if (text.length < 3 || text[3] !== '*') throw new ProtocolError('watch: malformed envelope');
  const maker = text.slice(1, 3);
  const idEnd = text.indexOf('*', 4);
  if (idEnd < 0) throw new ProtocolError('watch: malformed envelope');
  const id = text.slice(4, idEnd);
  let cursor = idEnd + 1;
  let index: string | undefined;
  // An index field precedes the length when the next field is followed by four hex digits and a '*'.
  const next = text.indexOf('*', cursor);
  if (next >= 0 && text[next + 5] === '*' && /^[0-9a-fA-F]{4}$/.test(text.slice(next + 1, next + 5))) {
    index = text.slice(cursor, next);
    cursor = next + 1;
  }
  cursor += 5; // length and '*'
  const body = text.slice(cursor, -1);
  const comma = body.indexOf(',');
  return { maker, id, index, type: comma < 0 ? body : body.slice(0, comma), content: comma < 0 ? undefined : body.slice(comma + 1) };
}

export function watchFrame(maker: string, id: string, index: string | undefined, content: string): Buffer {
  const length = Buffer.byteLength(content, 'latin1').toString(16).padStart(4, '0');
  return Buffer.from(`[${maker}*${id}*${index === undefined ? '' : `${index}*`}${length}*${content}]`, 'latin1');
}

const HEALTH_TYPES = new Set(['pulse', 'heart', 'blood', 'bphrt', 'temp', 'btemp2', 'oxygen']);

function decodeHealth(type: string, content: string): Record<string, unknown> | null {
  const values = content.split(',');
  const number = (text: string | undefined) => (text !== undefined && /^-?\d+(\.\d+)?$/.test(text.trim()) ? Number(text) : undefined);
  const attributes: Record<string, unknown> = {};
  if (type === 'temp') attributes['temp1'] = number(values[0]);
  else if (type === 'btemp2') {
    if ((number(values[0]) ?? 0) > 0) attributes['temp1'] = number(values[1]);
  } else if (type === 'oxygen') attributes['bloodOxygen'] = number(values[1]);
  else {
    let next = 0;
    if (type === 'bphrt' || type === 'blood') {
      if (values[0]) attributes['pressureHigh'] = values[0];
      if (values[1]) attributes['pressureLow'] = values[1];
      next = 2;
    }
    if (next < values.length) attributes['heartRate'] = number(values[next]);
  }
  for (const key of Object.keys(attributes)) if (attributes[key] === undefined) delete attributes[key];
  return attributes;
}

function decode(frame: Buffer, now: Date): DecodedMessage {
  const { maker, id, index, type, content } = readEnvelope(frame);
  const message: DecodedMessage = { uniqueId: id, positions: [], statuses: [] };
  const reply = (text: string) => {
    message.ack = watchFrame(maker, id, index, text);
  };
  if (type === 'INIT') {
    reply('INIT,1');
  } else if (type === 'LK') {
    reply('LK');
    const values = content?.split(',') ?? [];
    if (values.length >= 3 && /^\d+$/.test(values[0]!) && /^\d+$/.test(values[2]!)) {
      message.statuses.push({ deviceTime: null, attributes: { batteryLevel: Number(values[2]), steps: Number(values[0]) } });
    }
  } else if (type.startsWith('UD') || type.startsWith('AL') || type.startsWith('WT')) {
    const position = content === undefined ? null : decodeLocation(content);
    if (type.startsWith('AL')) {
      if (position && position.attributes['alarm'] === undefined) addAlarm(position.attributes, 'general');
      reply('AL');
    }
    if (position) message.positions.push(position);
  } else if (type === 'TKQ' || type === 'TKQ2') {
    reply(type);
  } else if (type === 'TK' || type === 'TK2') {
    // A one-character TK is the watch confirming a voice message sent to it (1 received, 0 failed): nothing to do.
    if (content !== undefined && content.length > 1) {
      reply(`${type},1`);
      message.statuses.push({ deviceTime: null, attributes: { media: 'audio', mediaSize: content.length } });
    }
  } else if (type === 'JXTK') {
    // A voice message in parts: <…>,<…>,<part>,<parts>,<AMR data>; each part is confirmed, the last one recorded.
    const [, , part, parts] = content?.split(',', 4) ?? [];
    reply('JXTKR,1');
    if (part !== undefined && parts !== undefined && Number(part) >= Number(parts)) {
      message.statuses.push({ deviceTime: null, attributes: { media: 'audio' } });
    }
  } else if (type === 'img') {
    // <…>,<yymmddhhmmss>,<JPEG data>; Traccar answers none.
    const dataStart = content === undefined ? -1 : content.indexOf(',') + 1 + 12 + 1;
    const attributes: Record<string, unknown> = { media: 'image' };
    if (content !== undefined && dataStart > 13 && dataStart <= content.length) attributes['mediaSize'] = content.length - dataStart;
    message.statuses.push({ deviceTime: null, attributes });
  } else if (HEALTH_TYPES.has(type.toLowerCase()) && content) {
    const attributes = decodeHealth(type.toLowerCase(), content);
    if (attributes) message.statuses.push({ deviceTime: now, attributes });
  }
  return message;
}

/**
 * Traccar's watch instructions. The envelope names maker CS without an index: Traccar copies both from the watch's
 * own messages on the live connection, which an encoder does not see.
 */
export const watchCommands = commandEncoder(
  ['custom', 'positionSingle', 'positionPeriodic', 'sosNumber', 'rebootDevice'],
  (command: DeviceCommand): string => {
    const text = (name: string) => String(command.attributes[name] ?? '');
    let content: string;
    switch (command.type) {
      case 'custom':
        content = text('data');
        break;
      case 'positionSingle':
        content = 'CR';
        break;
      case 'positionPeriodic': {
        const frequency = Number(command.attributes['frequency']);
        if (!Number.isInteger(frequency) || frequency <= 0) throw new ProtocolError('watch: frequency must be a positive whole number of seconds');
        content = `UPLOAD,${frequency}`;
        break;
      }
      case 'sosNumber': {
        const [index, phone] = [text('index'), text('phone')];
        if (!/^[1-3]$/.test(index) || !/^\+?\d{3,20}$/.test(phone)) throw new ProtocolError('watch: SOS index 1-3 and a phone number');
        content = `SOS${index},${phone}`;
        break;
      }
      case 'rebootDevice':
        content = 'RESET';
        break;
      default:
        throw new ProtocolError(`watch: ${command.type} is not supported`);
    }
    if (content === '' || /[[\]]/.test(content)) throw new ProtocolError('watch: the content must be non-empty, without brackets');
    return content;
  },
  (content, { uniqueId }) => watchFrame('CS', uniqueId, undefined, content),
);

export const watchProtocol: TcpProtocol = {
  name: 'watch',
  splitFrames,
  decode: (frame: Buffer, _state: ConnectionState, now: Date) => decode(frame, now),
  commands: watchCommands,
};
