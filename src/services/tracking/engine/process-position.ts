// Runs every position rule over one position, in Traccar's handler order.
import { distanceMeters } from '../geo/index.ts';
import type { LatLon } from '../geo/index.ts';
import {
  alarmEvents,
  commandResultEvents,
  driverEvents,
  fuelEvents,
  ignitionEvents,
  splitAlarms,
  textMessageEvents,
} from './attribute-rules.ts';
import { updateGeofences } from './geofences.ts';
import { maintenanceEvents } from './maintenance.ts';
import type { DistanceReading } from './maintenance.ts';
import { updateMotion } from './motion.ts';
import { updateOverspeed } from './overspeed.ts';
import { heardAt } from './status.ts';
import type { DeviceEngineState, EngineResult, KnownValues, PositionContext, StoredPosition } from './types.ts';
import { effectiveSettings, jsonSafe, positiveOrNull, readBoolean, readNumber, readText } from './values.ts';

/**
 * The events one stored position raises and the device's next state. The input state is not modified.
 *
 * A position whose fixTime is older than the last processed one (out of order, e.g. from a device's
 * buffer) is ignored: the same state comes back and no event fires, because every rule compares a
 * position with its predecessor in time. A position with the same fixTime is processed (Traccar does
 * so too; status reports reuse the last fix). The caller should not pass those out-of-order positions,
 * but passing one is harmless. A position of another device is a programming error and throws.
 */
export function processPosition(state: DeviceEngineState, position: StoredPosition, context: PositionContext): EngineResult {
  if (position.deviceId !== state.deviceId) {
    throw new Error(`position ${position.id} belongs to device ${position.deviceId}, not ${state.deviceId}`);
  }
  if (state.last !== null && position.fixTime < state.last.fixTime) return { state, events: [] };

  const settings = effectiveSettings(context);
  const attributes = position.attributes ?? {};

  const { fix, leg } = measureLeg(state.lastFix, position);
  const totalDistance = state.totalDistance + leg;

  const reportedOdometer = positiveOrNull(readNumber(attributes['odometer']));
  const known: KnownValues = {
    ignition: readBoolean(attributes['ignition']) ?? state.known.ignition,
    driverUniqueId: readText(attributes['driverUniqueId']) ?? state.known.driverUniqueId,
    fuel: readNumber(attributes['fuel']) ?? state.known.fuel,
    odometer: reportedOdometer ?? state.known.odometer,
  };

  const overspeed = updateOverspeed(state.overspeed, position, context.geofences, settings);
  const motion = updateMotion(state.motion, { position, previous: state.last, totalDistance, settings });
  const geofences = updateGeofences(state.geofenceIds, context.geofences, position);
  const alarms = splitAlarms(attributes['alarm']);

  const events = [
    ...textMessageEvents(position),
    ...commandResultEvents(position),
    ...overspeed.events,
    ...fuelEvents(state.known.fuel, position, settings),
    ...motion.events,
    ...geofences.events,
    ...alarmEvents(state.last?.alarms ?? [], alarms, position, settings),
    ...ignitionEvents(state.known.ignition, position),
    ...maintenanceEvents(distanceReading(state, known, totalDistance), position, settings),
    ...driverEvents(state.known.driverUniqueId, position),
  ];

  return {
    state: {
      ...state,
      last: { id: position.id, fixTime: position.fixTime, alarms },
      lastFix: fix ?? state.lastFix,
      known,
      totalDistance,
      motion: motion.motion,
      overspeed: overspeed.overspeed,
      geofenceIds: geofences.geofenceIds,
      ...heardAt(state, position.serverTime),
    },
    events,
  };
}

/**
 * The position's fix, and the great-circle step to it from the last valid fix: distance is measured between valid fixes
 * only (the reports' segmentation measures it the same way).
 */
export function measureLeg(lastFix: LatLon | null, position: StoredPosition): { fix: LatLon | null; leg: number } {
  const hasFix = position.valid && Number.isFinite(position.latitude) && Number.isFinite(position.longitude);
  const fix = hasFix ? { lat: jsonSafe(position.latitude), lon: jsonSafe(position.longitude) } : null;
  return { fix, leg: fix !== null && lastFix !== null ? distanceMeters(lastFix, fix) : 0 };
}

/**
 * The device's odometer once it has reported one (the step where it first appears has no "before"),
 * otherwise the distance the engine measured; the two are never mixed within one step.
 */
function distanceReading(state: DeviceEngineState, known: KnownValues, totalDistance: number): DistanceReading | null {
  if (known.odometer !== null) {
    return state.known.odometer === null
      ? null
      : { source: 'odometer', before: state.known.odometer, after: known.odometer };
  }
  return { source: 'totalDistance', before: state.totalDistance, after: totalDistance };
}
