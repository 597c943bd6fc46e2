import type { DeviceCommand } from './command-types.ts';
import { ProtocolError } from './types.ts';

/** The `data` of a custom command: the encoders' one way to read it. */
export function commandText(command: DeviceCommand): string {
  const data = command.attributes['data'];
  if (command.type !== 'custom' || typeof data !== 'string') throw new ProtocolError(`no encoding for a ${command.type} command`);
  return data;
}

/** Whether custom data is written as bytes: an even number of hex digits, as Traccar reads it. */
export function isHexData(data: string): boolean {
  return /^(?:[0-9a-fA-F]{2})+$/.test(data);
}
