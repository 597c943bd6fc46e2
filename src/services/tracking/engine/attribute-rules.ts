// Rules that compare one attribute of a position with what the device reported before.
import type { NewEvent } from '../api.ts';
import type { EngineSettings, StoredPosition } from './types.ts';
import { positionEvent, positiveOrNull, readBoolean, readNumber, readText } from './values.ts';

// Fuel levels are decimals: a drop of "exactly" the threshold (0.3 -> 0.2 for 0.1) must not miss by a rounding error.
const FUEL_TOLERANCE = 1e-9;

export function fuelEvents(before: number | null, position: StoredPosition, settings: EngineSettings): NewEvent[] {
  const after = readNumber(position.attributes?.['fuel']);
  if (before === null || after === null || after === before) return [];
  const change = after - before;
  const threshold = positiveOrNull(change > 0 ? settings.fuelIncreaseThreshold : settings.fuelDropThreshold);
  if (threshold === null || Math.abs(change) < threshold - FUEL_TOLERANCE) return [];
  return [
    positionEvent(position, change > 0 ? 'deviceFuelIncrease' : 'deviceFuelDrop', {
      attributes: { before, after, change },
    }),
  ];
}

/** The first value ever reported is a baseline, not a change. */
export function ignitionEvents(before: boolean | null, position: StoredPosition): NewEvent[] {
  const after = readBoolean(position.attributes?.['ignition']);
  if (before === null || after === null || after === before) return [];
  return [positionEvent(position, after ? 'ignitionOn' : 'ignitionOff')];
}

/** As in Traccar the first driver ever identified is a change too (from nobody to someone). */
export function driverEvents(before: string | null, position: StoredPosition): NewEvent[] {
  const after = readText(position.attributes?.['driverUniqueId']);
  if (after === null || after === before) return [];
  return [positionEvent(position, 'driverChanged', { attributes: { driverUniqueId: after } })];
}

/** The distinct values of a comma-separated `alarm` attribute, in reported order. */
export function splitAlarms(value: unknown): string[] {
  const text = readText(value);
  if (text === null) return [];
  return [...new Set(text.split(',').map((alarm) => alarm.trim()).filter((alarm) => alarm !== ''))];
}

export function alarmEvents(
  previousAlarms: readonly string[],
  alarms: readonly string[],
  position: StoredPosition,
  settings: EngineSettings,
): NewEvent[] {
  return alarms
    .filter((alarm) => !(settings.ignoreDuplicateAlarms && previousAlarms.includes(alarm)))
    .map((alarm) => positionEvent(position, 'alarm', { attributes: { alarm } }));
}

/** Every position carrying a command result reports it, repeated or not: each is a new answer. */
export function commandResultEvents(position: StoredPosition): NewEvent[] {
  const result = readText(position.attributes?.['result']);
  if (result === null) return [];
  // Set at ingestion when the answer could be tied to its command (docs/commands.md).
  const commandId = position.attributes?.['commandId'];
  const attributes = typeof commandId === 'number' ? { result, commandId } : { result };
  return [positionEvent(position, 'commandResult', { attributes })];
}

export function textMessageEvents(position: StoredPosition): NewEvent[] {
  const message = readText(position.attributes?.['message']);
  return message === null ? [] : [positionEvent(position, 'textMessage', { attributes: { message } })];
}
