/** The event types of spec §2.5, in the spec's order. */
export const EVENT_TYPES = [
  'deviceOnline',
  'deviceOffline',
  'deviceUnknown',
  'deviceInactive',
  'deviceMoving',
  'deviceStopped',
  'deviceOverspeed',
  'deviceFuelDrop',
  'deviceFuelIncrease',
  'geofenceEnter',
  'geofenceExit',
  'alarm',
  'ignitionOn',
  'ignitionOff',
  'maintenance',
  'textMessage',
  'driverChanged',
  'commandResult',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];
