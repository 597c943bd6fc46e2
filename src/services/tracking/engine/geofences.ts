// geofenceEnter / geofenceExit: the difference between the geofences of two consecutive positions.
import type { NewEvent } from '../api.ts';
import type { GeofenceHit, StoredPosition } from './types.ts';
import { positionEvent } from './values.ts';

export function updateGeofences(
  previousIds: readonly number[],
  hits: readonly GeofenceHit[],
  position: StoredPosition,
): { geofenceIds: number[]; events: NewEvent[] } {
  const geofenceIds = [...new Set(hits.map((hit) => hit.id))].sort((a, b) => a - b);
  const exits = previousIds.filter((id) => !geofenceIds.includes(id));
  const enters = geofenceIds.filter((id) => !previousIds.includes(id));
  return {
    geofenceIds,
    // Exits first, as in Traccar: leaving one zone for an adjacent one reads in order.
    events: [
      ...exits.map((geofenceId) => positionEvent(position, 'geofenceExit', { geofenceId })),
      ...enters.map((geofenceId) => positionEvent(position, 'geofenceEnter', { geofenceId })),
    ],
  };
}
