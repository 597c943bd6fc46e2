// deviceOverspeed: one event per episode above the limit, after Traccar.
import type { NewEvent } from '../api.ts';
import type { EngineSettings, GeofenceHit, OverspeedEpisode, StoredPosition } from './types.ts';
import { positionEvent, positiveOrNull, readNumber } from './values.ts';

export interface SpeedLimit {
  knots: number;
  geofenceId: number | null;
}

/**
 * The limit that applies at this position: a geofence's limit wins, then a limit the device reports
 * with the position (`attributes.speedLimit`, e.g. the road's), then the device/server setting.
 */
export function applicableSpeedLimit(
  position: StoredPosition,
  geofences: readonly GeofenceHit[],
  settings: EngineSettings,
): SpeedLimit | null {
  let fromGeofence: SpeedLimit | null = null;
  for (const geofence of geofences) {
    const knots = positiveOrNull(geofence.speedLimit);
    if (knots === null) continue;
    const better =
      fromGeofence === null || (settings.overspeedPreferLowest ? knots < fromGeofence.knots : knots > fromGeofence.knots);
    if (better) fromGeofence = { knots, geofenceId: geofence.id };
  }
  if (fromGeofence !== null) return fromGeofence;

  const reported = positiveOrNull(readNumber(position.attributes?.['speedLimit']));
  if (reported !== null) return { knots: reported, geofenceId: null };

  const configured = positiveOrNull(settings.speedLimit);
  return configured === null ? null : { knots: configured, geofenceId: null };
}

export function updateOverspeed(
  episode: OverspeedEpisode | null,
  position: StoredPosition,
  geofences: readonly GeofenceHit[],
  settings: EngineSettings,
): { overspeed: OverspeedEpisode | null; events: NewEvent[] } {
  const limit = applicableSpeedLimit(position, geofences, settings);
  const speed = position.speed ?? 0;
  // Speed equal to the limit is not overspeed; dropping to it ends the episode.
  if (limit === null || !(speed > limit.knots)) return { overspeed: null, events: [] };

  const current = episode ?? { since: position.fixTime, geofenceId: limit.geofenceId, notified: false };
  if (current.notified || position.fixTime - current.since < settings.overspeedMinimalDuration * 1000) {
    return { overspeed: current, events: [] };
  }
  return {
    overspeed: { ...current, notified: true },
    events: [
      positionEvent(position, 'deviceOverspeed', {
        geofenceId: current.geofenceId,
        attributes: { speed, speedLimit: limit.knots },
      }),
    ],
  };
}
