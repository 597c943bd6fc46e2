import type { Static } from 'typebox';
import type { NewPosition } from '../../src/services/tracking/api.ts';
import type { PositionRow } from '../../src/services/tracking/positions/repository.ts';
import type { PositionSchema } from '../../src/services/tracking/schemas.ts';

/**
 * Positions in the three shapes the tracking module has: decoded, as ingestion hands them to
 * storage (`NewPosition`); stored (`PositionRow`); and served by GET /api/positions. One set of
 * defaults for all three: a valid fix in Berlin at T0, id 1 of device 2 (different numbers, so that
 * a test mixing them up fails), each field its own recognisable value. The conversions are written
 * out here, not taken from src/: they are what the tests expect of that code.
 */
export const T0 = Date.parse('2025-03-01T00:00:00.000Z');
export const iso = (ms: number) => new Date(ms).toISOString();

export function newPosition(overrides: Partial<NewPosition> = {}): NewPosition {
  return {
    deviceId: 2,
    protocol: 'osmand',
    serverTime: T0 + 500,
    deviceTime: T0,
    fixTime: T0,
    valid: true,
    latitude: 52.5,
    longitude: 13.4,
    altitude: 34,
    speed: 10,
    course: 90,
    accuracy: 5,
    address: null,
    attributes: { sat: 7 },
    ...overrides,
  };
}

/** A decoded position of the device at T0 + `offsetMs`; its latitude moves with the time, so no two are equal. */
export function position(deviceId: number, offsetMs: number, overrides: Partial<NewPosition> = {}): NewPosition {
  return newPosition({ deviceId, serverTime: T0 + offsetMs + 500, deviceTime: T0 + offsetMs, fixTime: T0 + offsetMs, latitude: 52.5 + offsetMs / 1e9, ...overrides });
}

/** The row storage keeps for `stored` under `id`: absent numbers 0, attributes as JSON text. */
export function storedRow(stored: NewPosition, id = 1): PositionRow {
  return {
    id,
    device_id: stored.deviceId,
    protocol: stored.protocol,
    server_time: stored.serverTime,
    device_time: stored.deviceTime,
    fix_time: stored.fixTime,
    valid: stored.valid ? 1 : 0,
    latitude: stored.latitude,
    longitude: stored.longitude,
    altitude: stored.altitude ?? 0,
    speed: stored.speed ?? 0,
    course: stored.course ?? 0,
    accuracy: stored.accuracy ?? 0,
    address: stored.address ?? null,
    attributes: JSON.stringify(stored.attributes ?? {}),
  };
}

/** A stored row with the defaults, `overrides` in the row's own columns. */
export function positionRow(overrides: Partial<PositionRow> = {}): PositionRow {
  return { ...storedRow(newPosition()), ...overrides };
}

/** The Position (spec §2.4) GET /api/positions answers for `stored` under `id`. */
export function servedPosition(stored: NewPosition, id: number): Static<typeof PositionSchema> {
  const row = storedRow(stored, id);
  return {
    id,
    deviceId: row.device_id,
    protocol: row.protocol,
    serverTime: iso(row.server_time),
    deviceTime: row.device_time === null ? null : iso(row.device_time),
    fixTime: iso(row.fix_time),
    valid: stored.valid,
    latitude: row.latitude,
    longitude: row.longitude,
    altitude: row.altitude,
    speed: row.speed,
    course: row.course,
    accuracy: row.accuracy,
    address: row.address,
    attributes: stored.attributes ?? {},
  };
}
