import type { LatLon } from './geo/index.ts';
import type { EventType } from './events/types.ts';

/** A position as ingestion hands it to storage. Times are epoch milliseconds; speed is in knots. */
export interface NewPosition {
  deviceId: number;
  protocol: string | null;
  serverTime: number;
  deviceTime: number | null;
  fixTime: number;
  valid: boolean;
  latitude: number;
  longitude: number;
  /** Metres; 0 when absent. */
  altitude?: number;
  /** Knots; 0 when absent. */
  speed?: number;
  /** Degrees; 0 when absent. */
  course?: number;
  /** Metres; 0 when absent. */
  accuracy?: number;
  address?: string | null;
  attributes?: Record<string, unknown>;
}

/** An event as the event engine hands it to storage. */
export interface NewEvent {
  type: EventType;
  eventTime: number;
  deviceId: number;
  positionId?: number | null;
  geofenceId?: number | null;
  maintenanceId?: number | null;
  attributes?: Record<string, unknown>;
}

/** What the rest of the tracking module (ingestion, event engine, live updates) uses of storage and geofences. */
export interface TrackingApi {
  /**
   * Stores a batch in one transaction and returns the new ids in input order. Each device's latest
   * position moves to its newest fix of the batch unless a newer fix is already stored (an
   * out-of-order position is kept but never becomes the latest); the devices module then learns
   * the device's positionId and lastUpdate.
   */
  storePositions(batch: readonly NewPosition[]): Promise<number[]>;
  /** Stores a batch in one transaction and returns the new ids in input order. */
  storeEvents(batch: readonly NewEvent[]): Promise<number[]>;
  /** Ids (ascending) of the geofences of `ownerId` that contain the point: those that apply to that user's devices. */
  geofencesContaining(ownerId: number, point: LatLon): Promise<number[]>;
}
