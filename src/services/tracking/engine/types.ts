// Contract of the event engine: pure functions from (state, input) to (state, events). No I/O, no clock.
import type { NewEvent, NewPosition } from '../api.ts';

/**
 * A position after storage gave it its id: what the engine processes. The id is null for a status
 * report sent before the device's first fix, which is not stored (it has no fix to be placed at) but
 * whose attributes the rules still read: its events carry no position.
 */
export interface StoredPosition extends NewPosition {
  id: number | null;
}

export type DeviceStatus = 'online' | 'offline' | 'unknown';

/**
 * Server-wide defaults (from config). Durations are seconds, distances metres, speeds knots, fuel in
 * the units of `attributes.fuel`. An absent or 0 threshold turns its rule off. The keys listed in
 * DEVICE_SETTING_KEYS can be overridden per device by a device attribute of the same name.
 */
export interface EngineSettings {
  speedLimit?: number;
  /** How long the speed must stay above the limit before deviceOverspeed fires. */
  overspeedMinimalDuration: number;
  /** Inside several geofences with a speed limit: use the lowest (true) or the highest (false, Traccar's default). */
  overspeedPreferLowest: boolean;
  /** Above this speed a position counts as moving when it carries no `motion` attribute. */
  motionSpeedThreshold: number;
  minimalTripDistance: number;
  minimalTripDuration: number;
  minimalParkingDuration: number;
  /** A gap between fixes at least this long ends a trip (deviceStopped). */
  minimalNoDataDuration: number;
  /** A position reporting the ignition off ends a trip at once, without waiting minimalParkingDuration (Traccar's useIgnition). */
  useIgnition: boolean;
  fuelDropThreshold?: number;
  fuelIncreaseThreshold?: number;
  /** Only report an alarm that the previous position did not already carry. */
  ignoreDuplicateAlarms: boolean;
  deviceInactivityStart?: number;
  deviceInactivityPeriod?: number;
  maintenanceOdometerStart?: number;
  maintenanceOdometerPeriod?: number;
}

/** Traccar's defaults. */
export const DEFAULT_ENGINE_SETTINGS: EngineSettings = {
  overspeedMinimalDuration: 0,
  overspeedPreferLowest: false,
  motionSpeedThreshold: 0.01,
  minimalTripDistance: 500,
  minimalTripDuration: 300,
  minimalParkingDuration: 300,
  minimalNoDataDuration: 3600,
  useIgnition: false,
  ignoreDuplicateAlarms: true,
};

/** Settings a device attribute of the same name overrides (a finite number >= 0; anything else is ignored). */
export const DEVICE_SETTING_KEYS = [
  'speedLimit',
  'motionSpeedThreshold',
  'minimalTripDistance',
  'minimalTripDuration',
  'minimalParkingDuration',
  'minimalNoDataDuration',
  'fuelDropThreshold',
  'fuelIncreaseThreshold',
  'deviceInactivityStart',
  'deviceInactivityPeriod',
  'maintenanceOdometerStart',
  'maintenanceOdometerPeriod',
] as const satisfies readonly (keyof EngineSettings)[];

/** Boolean settings a device attribute of the same name overrides (true or false; anything else is ignored). */
export const DEVICE_BOOLEAN_SETTING_KEYS = ['useIgnition'] as const satisfies readonly (keyof EngineSettings)[];

/** A geofence that contains the position; the caller computes containment. */
export interface GeofenceHit {
  id: number;
  /** Knots; a positive value replaces the device's limit while inside. */
  speedLimit?: number;
}

export interface DeviceContext {
  deviceAttributes: Readonly<Record<string, unknown>>;
  settings: EngineSettings;
}

export interface PositionContext extends DeviceContext {
  geofences: readonly GeofenceHit[];
}

export interface EngineResult {
  state: DeviceEngineState;
  events: NewEvent[];
}

/** The last processed position, as far as the rules need it. */
export interface LastPosition {
  /** Null for a status report sent before any fix (see StoredPosition). */
  id: number | null;
  fixTime: number;
  /** The distinct alarm values it carried, for duplicate suppression. */
  alarms: string[];
}

/** Attribute values carried forward from the last position that reported them (null: never reported). */
export interface KnownValues {
  ignition: boolean | null;
  driverUniqueId: string | null;
  fuel: number | null;
  /** Metres, as the device reports it; only positive values count. */
  odometer: number | null;
}

/** A change of motion seen but not yet held long or far enough to count (Traccar's motion streak). */
export interface PendingMotion {
  since: number;
  positionId: number | null;
  /** `totalDistance` when the change was seen. */
  distance: number;
}

export interface MotionState {
  /** The confirmed state: true after deviceMoving, false after deviceStopped (and initially). */
  moving: boolean;
  /** Motion of the last processed position. */
  lastMotion: boolean;
  pending: PendingMotion | null;
}

export interface OverspeedEpisode {
  since: number;
  /** The geofence whose limit applied when the episode began. */
  geofenceId: number | null;
  notified: boolean;
}

/** Everything the engine remembers about one device. Plain JSON: it is persisted and cached. */
export interface DeviceEngineState {
  deviceId: number;
  last: LastPosition | null;
  /** Coordinates of the last valid fix; distance is measured only between valid fixes. */
  lastFix: { lat: number; lon: number } | null;
  known: KnownValues;
  /** Metres the engine has measured between consecutive valid fixes. */
  totalDistance: number;
  motion: MotionState;
  overspeed: OverspeedEpisode | null;
  /** Ascending ids of the geofences the last position was in. */
  geofenceIds: number[];
  status: DeviceStatus;
  /** Server time of the last message from the device. */
  lastMessageTime: number | null;
  /** The inactivity threshold (epoch ms) last reported by deviceInactive since the last message. */
  inactivityNotifiedAt: number | null;
}

/** The state of a device the engine has not seen yet. */
export function initialDeviceState(
  deviceId: number,
  status: DeviceStatus = 'offline',
  lastMessageTime: number | null = null,
): DeviceEngineState {
  return {
    deviceId,
    last: null,
    lastFix: null,
    known: { ignition: null, driverUniqueId: null, fuel: null, odometer: null },
    totalDistance: 0,
    motion: { moving: false, lastMotion: false, pending: null },
    overspeed: null,
    geofenceIds: [],
    status,
    lastMessageTime,
    inactivityNotifiedAt: null,
  };
}
