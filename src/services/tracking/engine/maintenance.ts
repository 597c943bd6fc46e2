// maintenance: the distance driven crosses a service boundary (start, start + period, start + 2 period, ...).
import type { NewEvent } from '../api.ts';
import type { EngineSettings, StoredPosition } from './types.ts';
import { positionEvent, positiveOrNull } from './values.ts';

/** Metres before and after this position, from the device's odometer or, lacking one, the engine's measure. */
export interface DistanceReading {
  source: 'odometer' | 'totalDistance';
  before: number;
  after: number;
}

/** One event per position, even when a jump in the reading crosses several boundaries at once. */
export function maintenanceEvents(
  reading: DistanceReading | null,
  position: StoredPosition,
  settings: EngineSettings,
): NewEvent[] {
  const period = positiveOrNull(settings.maintenanceOdometerPeriod);
  if (reading === null || period === null) return [];
  const start = settings.maintenanceOdometerStart ?? 0;
  const { before, after } = reading;
  if (after < start) return [];
  const crossed = before < start || Math.floor((before - start) / period) < Math.floor((after - start) / period);
  return crossed ? [positionEvent(position, 'maintenance', { attributes: { [reading.source]: after } })] : [];
}
