import { COMMAND_TYPES } from '../protocols/command-types.ts';
import type { CommandType } from '../protocols/command-types.ts';
import { AppError } from '../errors.ts';

type Rule = { kind: 'text'; max: number; pattern?: RegExp; hint?: string } | { kind: 'integer'; min: number; max: number };

/** The attributes each type takes (DESIGN §5.7, Traccar's keys), all required; no type takes any other. */
const ATTRIBUTES: Record<CommandType, Record<string, Rule>> = {
  custom: { data: { kind: 'text', max: 1024 } },
  positionSingle: {},
  positionPeriodic: { frequency: { kind: 'integer', min: 1, max: 86_400 } },
  positionStop: {},
  engineStop: {},
  engineResume: {},
  alarmArm: {},
  alarmDisarm: {},
  setTimezone: { timezone: { kind: 'text', max: 64 } },
  rebootDevice: {},
  outputControl: { index: { kind: 'integer', min: 0, max: 255 }, data: { kind: 'text', max: 64 } },
  sosNumber: {
    index: { kind: 'integer', min: 1, max: 9 },
    phone: { kind: 'text', max: 20, pattern: /^\+?[0-9]{3,19}$/, hint: 'digits, optionally after a +' },
  },
};

export function isCommandType(type: string): type is CommandType {
  return (COMMAND_TYPES as readonly string[]).includes(type);
}

function invalid(message: string): AppError {
  return new AppError('INVALID_COMMAND_ATTRIBUTES', message);
}

/** The attributes checked against the type: 400 UNSUPPORTED_COMMAND for an unknown type, INVALID_COMMAND_ATTRIBUTES naming the first fault. */
export function validateCommand(type: string, attributes: Record<string, unknown>): { type: CommandType; attributes: Record<string, unknown> } {
  if (!isCommandType(type)) throw new AppError('UNSUPPORTED_COMMAND', `Unknown command type ${JSON.stringify(type.slice(0, 64))}; known: ${COMMAND_TYPES.join(', ')}`);
  const rules = ATTRIBUTES[type];
  for (const key of Object.keys(attributes)) {
    if (!(key in rules)) throw invalid(`${type} takes no attribute ${JSON.stringify(key.slice(0, 64))}`);
  }
  for (const [key, rule] of Object.entries(rules)) {
    const value = attributes[key];
    if (value === undefined) throw invalid(`${type} needs attributes.${key}`);
    if (rule.kind === 'integer') {
      if (typeof value !== 'number' || !Number.isInteger(value) || value < rule.min || value > rule.max) {
        throw invalid(`attributes.${key} must be an integer from ${rule.min} to ${rule.max}`);
      }
    } else if (typeof value !== 'string' || value.length === 0 || value.length > rule.max) {
      throw invalid(`attributes.${key} must be text of 1 to ${rule.max} characters`);
    } else if (rule.pattern && !rule.pattern.test(value)) {
      throw invalid(`attributes.${key} must be ${rule.hint}`);
    } else if (!/^[\x20-\x7e]*$/.test(value)) {
      throw invalid(`attributes.${key} must be printable ASCII (send bytes as hex in custom data)`);
    }
  }
  return { type, attributes: Object.fromEntries(Object.keys(rules).map((key) => [key, attributes[key]])) };
}
