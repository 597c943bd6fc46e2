// The event engine: pure rules that turn positions, status changes and silence into events.
export { measureLeg, processPosition } from './process-position.ts';
export { isInMotion, updateMotion } from './motion.ts';
export { checkInactivity, checkStatusTimeout, processStatus } from './status.ts';
export { DEFAULT_ENGINE_SETTINGS, DEVICE_BOOLEAN_SETTING_KEYS, DEVICE_SETTING_KEYS, initialDeviceState } from './types.ts';
export { effectiveSettings, jsonSafe, readBoolean, readNumber, readText } from './values.ts';
export type {
  DeviceContext,
  DeviceEngineState,
  DeviceStatus,
  EngineResult,
  EngineSettings,
  GeofenceHit,
  MotionState,
  PositionContext,
  StoredPosition,
} from './types.ts';
