// Status and silence: deviceOnline / deviceOffline / deviceUnknown on a change of status, and
// deviceInactive when a device has not been heard from for a while.
import type { NewEvent } from '../api.ts';
import type { DeviceContext, DeviceEngineState, DeviceStatus, EngineResult } from './types.ts';
import { effectiveSettings, positiveOrNull } from './values.ts';

const STATUS_EVENT = {
  online: 'deviceOnline',
  offline: 'deviceOffline',
  unknown: 'deviceUnknown',
} as const satisfies Record<DeviceStatus, NewEvent['type']>;

/** A message at `time`: the latest one heard moves forward, and a new silence starts for inactivity. */
export function heardAt(
  state: DeviceEngineState,
  time: number,
): Pick<DeviceEngineState, 'lastMessageTime' | 'inactivityNotifiedAt'> {
  if (state.lastMessageTime !== null && time <= state.lastMessageTime) {
    return { lastMessageTime: state.lastMessageTime, inactivityNotifiedAt: state.inactivityNotifiedAt };
  }
  return { lastMessageTime: time, inactivityNotifiedAt: null };
}

/**
 * The device's status becomes `status` at `time`. An event fires only when the status changes.
 * 'online' means a message arrived at `time`, so it also records the time last heard (call it for
 * every message, including those without a position).
 */
export function processStatus(state: DeviceEngineState, status: DeviceStatus, time: number): EngineResult {
  const heard = status === 'online' ? heardAt(state, time) : {};
  const events: NewEvent[] =
    status === state.status
      ? []
      : [{ type: STATUS_EVENT[status], eventTime: time, deviceId: state.deviceId, positionId: null, attributes: {} }];
  return { state: { ...state, ...heard, status }, events };
}

/** An online device silent for more than `statusTimeoutSeconds` becomes unknown (exactly the timeout is not yet). */
export function checkStatusTimeout(state: DeviceEngineState, now: number, statusTimeoutSeconds: number): EngineResult {
  if (state.status !== 'online' || state.lastMessageTime === null) return { state, events: [] };
  if (now - state.lastMessageTime <= statusTimeoutSeconds * 1000) return { state, events: [] };
  return processStatus(state, 'unknown', now);
}

/**
 * deviceInactive once the device has been silent for deviceInactivityStart seconds, then again every
 * deviceInactivityPeriod seconds of continued silence when a period is set. A sweep that runs late
 * reports the latest threshold passed once, not every one it missed. Any message starts over.
 */
export function checkInactivity(state: DeviceEngineState, now: number, context: DeviceContext): EngineResult {
  const settings = effectiveSettings(context);
  const startSeconds = positiveOrNull(settings.deviceInactivityStart);
  if (startSeconds === null || state.lastMessageTime === null) return { state, events: [] };

  let threshold = state.lastMessageTime + startSeconds * 1000;
  if (now < threshold) return { state, events: [] };
  const periodSeconds = positiveOrNull(settings.deviceInactivityPeriod);
  if (periodSeconds !== null) {
    const periodMs = periodSeconds * 1000;
    threshold += Math.floor((now - threshold) / periodMs) * periodMs;
  }
  if (state.inactivityNotifiedAt !== null && state.inactivityNotifiedAt >= threshold) return { state, events: [] };

  return {
    state: { ...state, inactivityNotifiedAt: threshold },
    events: [
      {
        type: 'deviceInactive',
        eventTime: now,
        deviceId: state.deviceId,
        positionId: null,
        attributes: { lastUpdate: state.lastMessageTime },
      },
    ],
  };
}
