import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  checkInactivity,
  checkStatusTimeout,
  initialDeviceState,
  processStatus,
} from '../../../../src/services/tracking/engine/index.ts';
import type { DeviceEngineState, DeviceStatus } from '../../../../src/services/tracking/engine/index.ts';
import { DEVICE_ID, SECOND, T0, context, position, run, types } from './engine-helpers.ts';

describe('processStatus', () => {
  it('fires only on a change of status', () => {
    let state = initialDeviceState(DEVICE_ID);
    const fired: string[][] = [];
    const sequence: DeviceStatus[] = ['online', 'online', 'unknown', 'unknown', 'online', 'offline', 'offline', 'unknown'];
    sequence.forEach((status, index) => {
      const result = processStatus(state, status, T0 + index * SECOND);
      state = result.state;
      fired.push(types(result.events));
    });
    assert.deepEqual(fired, [
      ['deviceOnline'],
      [],
      ['deviceUnknown'],
      [],
      ['deviceOnline'],
      ['deviceOffline'],
      [],
      ['deviceUnknown'],
    ]);
    assert.equal(state.status, 'unknown');
  });

  it('carries no position and is stamped with the time given', () => {
    const { events } = processStatus(initialDeviceState(DEVICE_ID), 'online', T0);
    assert.deepEqual(events, [{ type: 'deviceOnline', eventTime: T0, deviceId: DEVICE_ID, positionId: null, attributes: {} }]);
  });

  it('records the time last heard on online only, never moving it backwards', () => {
    let { state } = processStatus(initialDeviceState(DEVICE_ID), 'online', T0 + 10 * SECOND);
    state = processStatus(state, 'online', T0).state;
    assert.equal(state.lastMessageTime, T0 + 10 * SECOND);
    state = processStatus(state, 'offline', T0 + 20 * SECOND).state;
    assert.equal(state.lastMessageTime, T0 + 10 * SECOND);
  });
});

describe('checkStatusTimeout', () => {
  const online = processStatus(initialDeviceState(DEVICE_ID), 'online', T0).state;

  it('turns an online device unknown after more than the timeout without a message', () => {
    assert.deepEqual(checkStatusTimeout(online, T0 + 600 * SECOND, 600), { state: online, events: [] });
    const { state, events } = checkStatusTimeout(online, T0 + 600 * SECOND + 1, 600);
    assert.equal(state.status, 'unknown');
    assert.deepEqual(types(events), ['deviceUnknown']);
    assert.deepEqual(checkStatusTimeout(state, T0 + 9999 * SECOND, 600).events, []);
  });

  it('leaves offline devices and devices never heard from alone', () => {
    const offline = processStatus(online, 'offline', T0).state;
    assert.deepEqual(checkStatusTimeout(offline, T0 + 1e9, 600).events, []);
    const neverHeard = initialDeviceState(DEVICE_ID, 'online');
    assert.deepEqual(checkStatusTimeout(neverHeard, T0 + 1e9, 600).events, []);
  });
});

describe('checkInactivity', () => {
  const heard = processStatus(initialDeviceState(DEVICE_ID), 'online', T0).state;
  const after = (seconds: number) => T0 + seconds * SECOND;
  /** Runs sweeps at the given seconds after the last message; returns the sweeps that fired. */
  function sweeps(seconds: number[], deviceAttributes: Record<string, unknown>, start: DeviceEngineState = heard): number[] {
    let state = start;
    const fired: number[] = [];
    for (const second of seconds) {
      const result = checkInactivity(state, after(second), context({ deviceAttributes }));
      state = result.state;
      if (result.events.length > 0) fired.push(second);
    }
    return fired;
  }

  it('fires once deviceInactivityStart seconds have passed (at the threshold, not just under), then never again without a period', () => {
    assert.deepEqual(sweeps([3599.999, 3600, 3700, 100_000], { deviceInactivityStart: 3600 }), [3600]);
    const { events } = checkInactivity(heard, after(3600), context({ deviceAttributes: { deviceInactivityStart: 3600 } }));
    assert.deepEqual(events, [
      { type: 'deviceInactive', eventTime: after(3600), deviceId: DEVICE_ID, positionId: null, attributes: { lastUpdate: T0 } },
    ]);
  });

  it('repeats every deviceInactivityPeriod seconds, once per period however often it is checked', () => {
    const attributes = { deviceInactivityStart: 3600, deviceInactivityPeriod: 600 };
    assert.deepEqual(sweeps([3600, 3900, 4199, 4200, 4500, 4800, 4801], attributes), [3600, 4200, 4800]);
  });

  it('reports a late sweep once, not once per period it missed', () => {
    const attributes = { deviceInactivityStart: 3600, deviceInactivityPeriod: 600 };
    assert.deepEqual(sweeps([10_000, 10_100, 10_200, 10_800], attributes), [10_000, 10_200, 10_800]);
  });

  it('starts over when the device is heard from again, by status or by position', () => {
    const attributes = { deviceInactivityStart: 3600 };
    let state = heard;
    state = checkInactivity(state, after(3600), context({ deviceAttributes: attributes })).state;
    state = processStatus(state, 'online', after(4000)).state;
    assert.deepEqual(sweeps([7599, 7600, 8000], attributes, state), [7600]);

    const fromPosition = run([position(1, { serverTime: after(5000) })], context(), state).state;
    assert.deepEqual(sweeps([8599, 8600], attributes, fromPosition), [8600]);
  });

  it('uses the server setting unless the device overrides it, and is off without a start', () => {
    const server = context({ settings: { deviceInactivityStart: 60 } });
    assert.equal(checkInactivity(heard, after(60), server).events.length, 1);
    const overridden = context({ settings: { deviceInactivityStart: 60 }, deviceAttributes: { deviceInactivityStart: '120' } });
    assert.equal(checkInactivity(heard, after(60), overridden).events.length, 0);
    assert.deepEqual(sweeps([1e6], {}), []);
    assert.deepEqual(checkInactivity(initialDeviceState(DEVICE_ID), after(1e6), server).events, []);
  });
});
