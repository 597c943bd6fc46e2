// H02 instructions: `*HQ,<device id>,<instruction>,<hhmmss>,<parameters>#`. The device answers with a V4 message that
// names the instruction and its time, followed by a location; the decoder keeps that text as `result`.

import { commandEncoder } from '../command-types.ts';
import type { DeviceCommand } from '../command-types.ts';
import { commandText } from '../command-text.ts';

function hhmmss(time: Date): string {
  return [time.getUTCHours(), time.getUTCMinutes(), time.getUTCSeconds()].map((part) => String(part).padStart(2, '0')).join('');
}

/** The instruction's name and parameters, or the whole text of a custom command (as the device's manual writes it). */
function instruction(command: DeviceCommand): [string, ...string[]] | string {
  switch (command.type) {
    case 'alarmArm':
      return ['SCF', '0', '0'];
    case 'alarmDisarm':
      return ['SCF', '1', '1'];
    case 'engineStop':
      return ['S20', '1', '1'];
    case 'engineResume':
      return ['S20', '1', '0'];
    case 'positionPeriodic':
      return ['S71', '22', String(command.attributes['frequency'])];
    default:
      return commandText(command);
  }
}

export const h02Commands = commandEncoder(
  ['custom', 'alarmArm', 'alarmDisarm', 'engineStop', 'engineResume', 'positionPeriodic'],
  instruction,
  (parts, { uniqueId, now }) => {
    if (typeof parts === 'string') return Buffer.from(parts, 'latin1');
    const [name, ...parameters] = parts;
    return Buffer.from(`*HQ,${[uniqueId, name, hhmmss(now), ...parameters].join(',')}#`, 'latin1');
  },
);
