// Lenient readers for attribute values: attributes arrive as JSON from devices and from users.
import type { NewEvent } from '../api.ts';
import type { DeviceContext, EngineSettings, StoredPosition } from './types.ts';
import { DEVICE_BOOLEAN_SETTING_KEYS, DEVICE_SETTING_KEYS } from './types.ts';

/** A finite number, or a string holding one; anything else is null. */
export function readNumber(value: unknown): number | null {
  const parsed = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof parsed === 'number' && Number.isFinite(parsed) ? jsonSafe(parsed) : null;
}

/** JSON has no -0: the state must read back exactly as it was written. */
export function jsonSafe(value: number): number {
  return value === 0 ? 0 : value;
}

/** A non-empty string, or a finite number as text (some protocols report identifiers as numbers). */
export function readText(value: unknown): string | null {
  if (typeof value === 'string') return value === '' ? null : value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

export function readBoolean(value: unknown): boolean | null {
  return typeof value === 'boolean' ? value : null;
}

/** A positive number or null: the engine's "set and not turned off". */
export function positiveOrNull(value: number | undefined | null): number | null {
  return value !== undefined && value !== null && value > 0 ? value : null;
}

/** Server settings with the device's overrides applied. */
export function effectiveSettings(context: DeviceContext): EngineSettings {
  const settings = { ...context.settings };
  for (const key of DEVICE_SETTING_KEYS) {
    const override = readNumber(context.deviceAttributes[key]);
    if (override !== null && override >= 0) settings[key] = override;
  }
  for (const key of DEVICE_BOOLEAN_SETTING_KEYS) {
    const override = readBoolean(context.deviceAttributes[key]);
    if (override !== null) settings[key] = override;
  }
  return settings;
}

/** An event raised by a position: it carries the position's id and, as in Traccar, its device time. */
export function positionEvent(
  position: StoredPosition,
  type: NewEvent['type'],
  extra: { geofenceId?: number | null; attributes?: Record<string, unknown> } = {},
): NewEvent {
  return {
    type,
    eventTime: position.deviceTime ?? position.fixTime,
    deviceId: position.deviceId,
    positionId: position.id,
    ...(extra.geofenceId !== undefined && extra.geofenceId !== null ? { geofenceId: extra.geofenceId } : {}),
    attributes: extra.attributes ?? {},
  };
}
