import type { NewEvent, NewPosition } from '../api.ts';
import type { LiveEvent } from '../domain-events.ts';
import type { StoredPosition } from '../engine/index.ts';
import { toEventRow, toEventView } from '../events/service.ts';
import type { PositionRow } from '../positions/repository.ts';
import type { DecodedPosition, DecodedStatus } from '../protocols/types.ts';

/** What ingestion stores and publishes, made from what the decoders and the database give it. */

export function fromDecoded(deviceId: number, protocol: string, decoded: DecodedPosition, serverTime: number): NewPosition {
  return {
    deviceId,
    protocol,
    serverTime,
    deviceTime: decoded.deviceTime?.getTime() ?? null,
    fixTime: decoded.fixTime.getTime(),
    valid: decoded.valid,
    latitude: decoded.latitude,
    longitude: decoded.longitude,
    altitude: decoded.altitude,
    speed: decoded.speed,
    course: decoded.course,
    accuracy: decoded.accuracy,
    attributes: decoded.attributes,
  };
}

/**
 * A report without a location, stored as Traccar does: the last known fix (its time, place and
 * motion) with the report's attributes. Before any fix it has no place (0,0, fix time 0, invalid):
 * the pipeline does not store such a report, only the event engine reads it.
 */
export function mergedStatus(deviceId: number, protocol: string, last: NewPosition | null, status: DecodedStatus, serverTime: number): NewPosition {
  return {
    deviceId,
    protocol,
    serverTime,
    deviceTime: status.deviceTime?.getTime() ?? serverTime,
    fixTime: last?.fixTime ?? 0,
    valid: last?.valid ?? false,
    latitude: last?.latitude ?? 0,
    longitude: last?.longitude ?? 0,
    altitude: last?.altitude ?? 0,
    speed: last?.speed ?? 0,
    course: last?.course ?? 0,
    accuracy: last?.accuracy ?? 0,
    address: last?.address ?? null,
    attributes: status.attributes,
  };
}

export function storedFromRow(row: PositionRow): StoredPosition {
  return {
    id: row.id,
    deviceId: row.device_id,
    protocol: row.protocol,
    serverTime: row.server_time,
    deviceTime: row.device_time,
    fixTime: row.fix_time,
    valid: row.valid === 1,
    latitude: row.latitude,
    longitude: row.longitude,
    altitude: row.altitude,
    speed: row.speed,
    course: row.course,
    accuracy: row.accuracy,
    address: row.address,
    attributes: JSON.parse(row.attributes) as Record<string, unknown>,
  };
}

/** The live form of an event stored with this id: the spec's Event, as `GET /api/events` answers it. */
export function liveEvent(event: NewEvent, id: number): LiveEvent {
  return { deviceId: event.deviceId, json: JSON.stringify(toEventView({ id, ...toEventRow(event) })) };
}
