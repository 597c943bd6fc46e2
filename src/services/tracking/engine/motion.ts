// deviceMoving / deviceStopped, after Traccar's classic trip logic: a change of motion is only
// reported once it has held long or far enough, so a short crawl in a car park or a stop at a red
// light does not split trips. The trips and stops of reports (reports/segmentation) follow the same rules.
import type { NewEvent } from '../api.ts';
import type { EngineSettings, LastPosition, MotionState, StoredPosition } from './types.ts';
import { positionEvent, readBoolean } from './values.ts';

const MS_PER_SECOND = 1000;

/** The device's own motion flag wins; otherwise the speed decides. */
export function isInMotion(position: StoredPosition, settings: EngineSettings): boolean {
  return readBoolean(position.attributes?.['motion']) ?? (position.speed ?? 0) > settings.motionSpeedThreshold;
}

export interface MotionInput {
  position: StoredPosition;
  previous: LastPosition | null;
  /** The engine's measured distance including the leg to this position. */
  totalDistance: number;
  settings: EngineSettings;
}

export function updateMotion(state: MotionState, input: MotionInput): { motion: MotionState; events: NewEvent[] } {
  const { position, previous, totalDistance, settings } = input;

  // A long silence while moving ends the trip at the last position heard; this position only closes it.
  const noDataMs = settings.minimalNoDataDuration * MS_PER_SECOND;
  if (state.moving && previous !== null && noDataMs > 0 && position.fixTime - previous.fixTime >= noDataMs) {
    return {
      motion: { moving: false, lastMotion: false, pending: null },
      events: [
        positionEvent(position, 'deviceStopped', {
          attributes: { startTime: previous.fixTime, startPositionId: previous.id },
        }),
      ],
    };
  }

  const motion = isInMotion(position, settings);
  if (motion !== state.lastMotion) {
    // Back to the confirmed state cancels the pending change; otherwise a new change starts here.
    const pending =
      motion === state.moving ? null : { since: position.fixTime, positionId: position.id, distance: totalDistance };
    return { motion: { moving: state.moving, lastMotion: motion, pending }, events: [] };
  }

  const pending = state.pending;
  if (pending === null) return { motion: state, events: [] };

  const heldMs = position.fixTime - pending.since;
  const confirmed = motion
    ? heldMs >= settings.minimalTripDuration * MS_PER_SECOND ||
      totalDistance - pending.distance >= settings.minimalTripDistance
    : heldMs >= settings.minimalParkingDuration * MS_PER_SECOND ||
      (settings.useIgnition && readBoolean(position.attributes?.['ignition']) === false);
  if (!confirmed) return { motion: state, events: [] };

  return {
    motion: { moving: motion, lastMotion: motion, pending: null },
    events: [
      positionEvent(position, motion ? 'deviceMoving' : 'deviceStopped', {
        attributes: { startTime: pending.since, startPositionId: pending.positionId },
      }),
    ],
  };
}
