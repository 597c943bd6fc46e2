import type { MessageTemplates } from './index.ts';

/** English, the language every other falls back to: one title and one line per event type. */
export const en: MessageTemplates = {
  repeated: (count) => `${count} times in the last minute`,
  fallback: { title: (m) => `${m.device}: ${m.type}`, body: (m) => `${m.device} reported ${m.type} at ${m.time}.` },
  types: {
    test: { title: () => 'Test notification', body: (m) => `This is a test notification sent at ${m.time}. Your notifications reach you here.` },
    deviceOnline: { title: (m) => `${m.device} is online`, body: (m) => `${m.device} came online at ${m.time}.` },
    deviceOffline: { title: (m) => `${m.device} is offline`, body: (m) => `${m.device} went offline at ${m.time}.` },
    deviceUnknown: { title: (m) => `${m.device}: status unknown`, body: (m) => `${m.device} has not reported since ${m.time}.` },
    deviceInactive: { title: (m) => `${m.device} is inactive`, body: (m) => `${m.device} has been inactive since ${m.time}.` },
    deviceMoving: { title: (m) => `${m.device} is moving`, body: (m) => `${m.device} started moving at ${m.time}.` },
    deviceStopped: { title: (m) => `${m.device} stopped`, body: (m) => `${m.device} stopped at ${m.time}.` },
    deviceOverspeed: { title: (m) => `${m.device} is speeding`, body: (m) => `${m.device} exceeded the speed limit at ${m.time}${m.speed ? ` (${m.speed})` : ''}.` },
    deviceFuelDrop: { title: (m) => `${m.device}: fuel drop`, body: (m) => `The fuel level of ${m.device} dropped at ${m.time}.` },
    deviceFuelIncrease: { title: (m) => `${m.device}: fuel increase`, body: (m) => `The fuel level of ${m.device} rose at ${m.time}.` },
    geofenceEnter: { title: (m) => `${m.device} entered ${m.geofence ?? 'a geofence'}`, body: (m) => `${m.device} entered ${m.geofence ?? 'a geofence'} at ${m.time}.` },
    geofenceExit: { title: (m) => `${m.device} left ${m.geofence ?? 'a geofence'}`, body: (m) => `${m.device} left ${m.geofence ?? 'a geofence'} at ${m.time}.` },
    alarm: { title: (m) => `${m.device}: ${m.alarm ? `${m.alarm} alarm` : 'alarm'}`, body: (m) => `${m.device} raised ${m.alarm ? `the ${m.alarm}` : 'an'} alarm at ${m.time}.` },
    ignitionOn: { title: (m) => `${m.device}: ignition on`, body: (m) => `The ignition of ${m.device} was turned on at ${m.time}.` },
    ignitionOff: { title: (m) => `${m.device}: ignition off`, body: (m) => `The ignition of ${m.device} was turned off at ${m.time}.` },
    maintenance: { title: (m) => `${m.device}: maintenance due`, body: (m) => `${m.device} is due for maintenance (${m.time}).` },
    textMessage: { title: (m) => `${m.device} sent a message`, body: (m) => `${m.device} sent a text message at ${m.time}${m.message ? `: ${m.message}` : '.'}` },
    driverChanged: { title: (m) => `${m.device}: driver changed`, body: (m) => `The driver of ${m.device} changed at ${m.time}${m.driver ? ` to ${m.driver}` : ''}.` },
    commandResult: { title: (m) => `${m.device}: command result`, body: (m) => `${m.device} answered a command at ${m.time}${m.result ? `: ${m.result}` : '.'}` },
  },
};
