import { splitAlarms } from '../engine/attribute-rules.ts';
import { isInMotion } from '../engine/motion.ts';
import { effectiveSettings, positiveOrNull, readBoolean, readNumber, readText } from '../engine/values.ts';
import type { DeviceContext, DeviceEngineState, StoredPosition } from '../engine/index.ts';

/**
 * The engine state of a device whose latest stored position is `latest`, as if the engine had
 * processed it: after a restart, the next position is compared with that one, so a device already
 * inside a geofence does not "enter" it again, a known ignition state does not "change", and a
 * moving device is taken to be on a trip. Status, last message time and inactivity are kept.
 */
export function seedFromLatest(
  state: DeviceEngineState,
  latest: StoredPosition,
  geofenceIds: readonly number[],
  context: DeviceContext,
): DeviceEngineState {
  const attributes = latest.attributes ?? {};
  const motion = isInMotion(latest, effectiveSettings(context));
  return {
    ...state,
    last: { id: latest.id, fixTime: latest.fixTime, alarms: splitAlarms(attributes['alarm']) },
    lastFix: latest.valid ? { lat: latest.latitude, lon: latest.longitude } : null,
    known: {
      ignition: readBoolean(attributes['ignition']),
      driverUniqueId: readText(attributes['driverUniqueId']),
      fuel: readNumber(attributes['fuel']),
      odometer: positiveOrNull(readNumber(attributes['odometer'])),
    },
    motion: { moving: motion, lastMotion: motion, pending: null },
    geofenceIds: [...geofenceIds],
  };
}
