// Wialon IPS 1.1 and 2.0 (Traccar's `wialon`, port 5039, TCP and UDP). Lines `#<type>#<fields>\r\n`:
// L login (`imei;password`, or `2.0;imei;password;crc`) answered `#AL#1`, P ping `#AP#`, SD short and D extended data
// (`ddmmyy;hhmmss;lat;N;lon;E;speed;course;altitude;sats[;hdop;inputs;outputs;adc;ibutton;params]`) answered `#AD#1`,
// B a batch of D bodies separated by `|` answered `#AB#<count>`, M a text message answered `#AM#1`. Over UDP each
// line is prefixed with the id: `[2.0;]<imei>#D#...`.

import { commandEncoder } from '../command-types.ts';
import type { DeviceCommand } from '../command-types.ts';
import { isValidCoordinate, knotsFromKmh, utcDate } from '../decode-helpers.ts';
import { splitTextFrames } from '../text-frames.ts';
import type { ConnectionState, DecodedMessage, DecodedPosition, DecodedStatus, TcpProtocol } from '../types.ts';
import { ProtocolError } from '../types.ts';

const MAX_LINE_LENGTH = 4096;
const LINE_END = new Set([0x0a]);
const HASH = 0x23;

function isLineStart(byte: number): boolean {
  return byte === HASH || (byte >= 0x30 && byte <= 0x39);
}

function splitFrames(buffer: Buffer): { frames: Buffer[]; consumed: number } {
  return splitTextFrames(buffer, isLineStart, LINE_END, MAX_LINE_LENGTH, 'wialon');
}

const ENVELOPE = /^(?:\d\.\d;)?([^#]+)?#([^#]+)#(.*)$/s;

const DATA = new RegExp(
  '^(?:NA|(\\d\\d)(\\d\\d)(\\d\\d));(?:NA|(\\d\\d)(\\d\\d)(\\d\\d));' +
  '(?:NA|(\\d+)(\\d\\d\\.\\d+));(?:NA|([NS]));(?:NA|(\\d+)(\\d\\d\\.\\d+));(?:NA|([EW]));' +
  '(?:NA|(\\d+(?:\\.\\d*)?))?;(?:NA|(\\d+(?:\\.\\d*)?))?;(?:NA|(-?\\d+(?:\\.\\d*)?));(?:NA|(\\d+))' +
  '(?:;(?:NA|(\\d+(?:\\.\\d*)?));(?:NA|(\\d+));(?:NA|(\\d+));(?:NA|([^;]*));(?:NA|([^;]*));(?:NA|([^;]*)))?',
  's',
);

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** `name:type:value` (type 1 integer, 2 real, 3 text), split at the last `:<1-3>:` as Traccar's pattern does. */
function splitParameter(parameter: string): [string, string] | null {
  for (let index = parameter.length - 3; index >= 1; index--) {
    if (parameter[index] === ':' && parameter[index + 2] === ':' && '123'.includes(parameter[index + 1]!)) {
      return [parameter.slice(0, index), parameter.slice(index + 3)];
    }
  }
  return null;
}

function parameterValue(text: string): unknown {
  const trimmed = text.trim();
  if (NUMBER.test(trimmed)) return Number(trimmed);
  if (/^true$/i.test(text)) return true;
  if (/^false$/i.test(text)) return false;
  return text;
}

// Cell towers are read out of the parameters as Traccar does (it keeps them as the network), and not stored.
function removeCellTowers(attributes: Record<string, unknown>): void {
  for (const suffix of ['', '1', '2', '3', '4', '5', '6', '7', '8', '9']) {
    const keys = ['mnc', 'mcc', 'lac', 'cell_id'].map((key) => key + suffix);
    if (!keys.every((key) => key in attributes)) {
      if (suffix !== '') break;
      continue;
    }
    for (const key of keys) delete attributes[key];
  }
}

function readParameters(text: string, attributes: Record<string, unknown>): number {
  for (const parameter of text.split(',')) {
    const pair = splitParameter(parameter);
    // Traccar keeps no empty text value.
    if (pair && pair[1] !== '') attributes[pair[0].toLowerCase()] = parameterValue(pair[1]);
  }
  let accuracy = 0;
  if ('accuracy' in attributes) {
    accuracy = Number(attributes['accuracy']) || 0;
    delete attributes['accuracy'];
  }
  for (const [from, to] of [['bat', 'batteryLevel'], ['temp', 'deviceTemp']] as const) {
    if (from in attributes) {
      const value = Math.trunc(Number(attributes[from]));
      delete attributes[from];
      if (Number.isFinite(value)) attributes[to] = value;
    }
  }
  removeCellTowers(attributes);
  return accuracy;
}

/** One D/SD/B body: a position, a status without coordinates, or null when it does not parse. */
function decodeData(body: string, now: Date): DecodedPosition | DecodedStatus | null {
  const match = DATA.exec(body);
  if (!match) return null;
  const group = (index: number) => match[index];
  let time: Date | null = now;
  if (group(1) !== undefined && group(4) !== undefined) {
    time = utcDate(Number(group(3)), Number(group(2)), Number(group(1)), Number(group(4)), Number(group(5)), Number(group(6)));
  }
  const attributes: Record<string, unknown> = {};
  let valid = false;
  if (group(16) !== undefined) {
    const satellites = Number(group(16));
    valid = satellites >= 3;
    attributes['sat'] = satellites;
  }
  if (group(17) !== undefined) attributes['hdop'] = Number(group(17));
  if (group(18) !== undefined) attributes['input'] = group(18);
  if (group(19) !== undefined) attributes['output'] = group(19);
  if (group(20)) group(20)!.split(',').forEach((value, index) => { attributes[`adc${index + 1}`] = value; });
  if (group(21)) attributes['driverUniqueId'] = group(21);
  const accuracy = group(22) ? readParameters(group(22)!, attributes) : 0;
  // Traccar cannot read a fix without both coordinates either; such a report keeps only its attributes.
  const hasLocation = group(7) !== undefined && group(10) !== undefined;
  const coordinate = (degrees: string | undefined, minutes: string | undefined, hemisphere: string | undefined) =>
    degrees === undefined ? 0 : (Number(degrees) + Number(minutes) / 60) * (hemisphere === 'S' || hemisphere === 'W' ? -1 : 1);
  const latitude = coordinate(group(7), group(8), group(9));
  const longitude = coordinate(group(10), group(11), group(12));
  if (!hasLocation || time === null || !isValidCoordinate(latitude, longitude)) {
    return { deviceTime: time, attributes };
  }
  return {
    fixTime: time, deviceTime: time, valid, latitude, longitude, altitude: Number(group(15) ?? 0),
    speed: knotsFromKmh(Number(group(13) ?? 0)), course: Number(group(14) ?? 0), accuracy, attributes,
  };
}

function answer(type: string, count?: number): Buffer {
  return Buffer.from(`#A${type}#${count ?? ''}\r\n`, 'latin1');
}

function add(message: DecodedMessage, report: DecodedPosition | DecodedStatus): void {
  if ('latitude' in report) message.positions.push(report);
  else message.statuses.push(report);
}

function decode(frame: Buffer, now: Date): DecodedMessage {
  const message: DecodedMessage = { positions: [], statuses: [] };
  // Traccar reads the lines as UTF-8 (parameter names and texts are often Cyrillic).
  const match = ENVELOPE.exec(frame.toString('utf8').replace(/\r?\n$/, ''));
  if (!match) return message;
  const [, id, type, data = ''] = match;
  if (id !== undefined) message.uniqueId = id;
  switch (type) {
    case 'L': {
      const values = data.split(';');
      const imei = values[0]!.includes('.') ? values[1] : values[0];
      if (imei) {
        message.uniqueId = imei;
        message.ack = answer('L', 1);
      }
      break;
    }
    case 'P':
      message.ack = answer('P');
      break;
    case 'D':
    case 'SD': {
      const report = decodeData(data, now);
      if (report) {
        add(message, report);
        message.ack = answer('D', 1);
      }
      break;
    }
    case 'B': {
      const bodies = data.split('|');
      for (const body of bodies) {
        const report = decodeData(body, now);
        if (report) {
          report.attributes['archive'] = true;
          add(message, report);
        }
      }
      message.ack = answer('B', bodies.length);
      break;
    }
    case 'M':
      message.statuses.push({ deviceTime: now, attributes: { result: data } });
      message.ack = answer('M', 1);
      break;
    default:
      break;
  }
  return message;
}

/** Traccar's Wialon instructions, one line each. */
export const wialonCommands = commandEncoder(
  ['rebootDevice', 'outputControl'],
  (command: DeviceCommand): string => {
    if (command.type === 'rebootDevice') return 'reboot';
    if (command.type === 'outputControl') {
      const index = String(command.attributes['index'] ?? '');
      const data = String(command.attributes['data'] ?? '');
      if (!/^\d{1,3}$/.test(index) || !/^[01]$/.test(data)) throw new ProtocolError('wialon: output index must be a number and data 0 or 1');
      return `L${index}=${data}`;
    }
    throw new ProtocolError(`wialon: ${command.type} is not supported`);
  },
  (line) => Buffer.from(`${line}\r\n`, 'latin1'),
);

export const wialonProtocol: TcpProtocol = {
  name: 'wialon',
  splitFrames,
  decode: (frame: Buffer, _state: ConnectionState, now: Date) => decode(frame, now),
  commands: wialonCommands,
};
