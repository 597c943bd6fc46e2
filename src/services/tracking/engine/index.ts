// The event engine: pure rules that turn positions, status changes and silence into events.
export { processPosition } from './process-position.ts';
export { checkInactivity, checkStatusTimeout, processStatus } from './status.ts';
export { DEFAULT_ENGINE_SETTINGS, DEVICE_SETTING_KEYS, initialDeviceState } from './types.ts';
export type {
  DeviceContext,
  DeviceEngineState,
  DeviceStatus,
  EngineResult,
  EngineSettings,
  GeofenceHit,
  PositionContext,
  StoredPosition,
} from './types.ts';
