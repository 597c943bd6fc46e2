// Builders for engine tests: positions on a clock the test controls, contexts, and sequences.
import type { NewEvent } from '../../../../src/services/tracking/api.ts';
import { DEFAULT_ENGINE_SETTINGS, initialDeviceState, processPosition } from '../../../../src/services/tracking/engine/index.ts';
import type {
  DeviceEngineState,
  EngineSettings,
  GeofenceHit,
  PositionContext,
  StoredPosition,
} from '../../../../src/services/tracking/engine/index.ts';

export const DEVICE_ID = 7;
export const T0 = Date.UTC(2025, 0, 1, 8, 0, 0);
export const SECOND = 1000;

/** Metres per degree of latitude on the engine's sphere, to place points a known distance apart. */
export const METRES_PER_DEGREE_LAT = (6_371_008.8 * Math.PI) / 180;

export function position(id: number, overrides: Partial<StoredPosition> = {}): StoredPosition {
  const fixTime = overrides.fixTime ?? T0 + id * SECOND;
  return {
    id,
    deviceId: DEVICE_ID,
    protocol: 'osmand',
    serverTime: fixTime,
    deviceTime: fixTime,
    fixTime,
    valid: true,
    latitude: 0,
    longitude: 0,
    speed: 0,
    attributes: {},
    ...overrides,
  };
}

export function context(
  options: {
    settings?: Partial<EngineSettings>;
    deviceAttributes?: Record<string, unknown>;
    geofences?: GeofenceHit[];
  } = {},
): PositionContext {
  return {
    settings: { ...DEFAULT_ENGINE_SETTINGS, ...options.settings },
    deviceAttributes: options.deviceAttributes ?? {},
    geofences: options.geofences ?? [],
  };
}

export interface Step {
  position: StoredPosition;
  context?: PositionContext;
}

/** Feeds positions in order; returns the final state and the events of each step. */
export function run(
  steps: readonly (Step | StoredPosition)[],
  defaultContext: PositionContext = context(),
  start: DeviceEngineState = initialDeviceState(DEVICE_ID, 'online'),
): { state: DeviceEngineState; eventsPerStep: NewEvent[][]; events: NewEvent[] } {
  let state = start;
  const eventsPerStep: NewEvent[][] = [];
  for (const step of steps) {
    const { position: stepPosition, context: stepContext } = 'position' in step ? step : { position: step, context: undefined };
    const result = processPosition(state, stepPosition, stepContext ?? defaultContext);
    state = result.state;
    eventsPerStep.push(result.events);
  }
  return { state, eventsPerStep, events: eventsPerStep.flat() };
}

export function types(events: readonly NewEvent[]): string[] {
  return events.map((event) => event.type);
}

export function ofType(events: readonly NewEvent[], type: NewEvent['type']): NewEvent[] {
  return events.filter((event) => event.type === type);
}
