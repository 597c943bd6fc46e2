import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { initialDeviceState, processPosition } from '../../../../src/services/tracking/engine/index.ts';
import type { DeviceEngineState } from '../../../../src/services/tracking/engine/index.ts';
import { DEVICE_ID, METRES_PER_DEGREE_LAT, T0, context, ofType, position, run, types } from './engine-helpers.ts';

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    Object.values(value).forEach(deepFreeze);
    Object.freeze(value);
  }
  return value;
}

describe('processPosition', () => {
  it('stamps events with the position id and its device time (the fix time when the device sends none)', () => {
    const withDeviceTime = run([position(1, { deviceTime: T0 - 5000, attributes: { alarm: 'sos' } })]).events;
    assert.deepEqual(withDeviceTime, [
      { type: 'alarm', eventTime: T0 - 5000, deviceId: DEVICE_ID, positionId: 1, attributes: { alarm: 'sos' } },
    ]);
    const withoutDeviceTime = run([position(2, { deviceTime: null, attributes: { alarm: 'sos' } })]).events;
    assert.equal(withoutDeviceTime[0]!.eventTime, position(2).fixTime);
  });

  it('ignores a position older than the last one: same state back, no event', () => {
    const { state } = run([position(5, { fixTime: T0 + 5000 })]);
    const older = position(6, { fixTime: T0 + 4999, attributes: { alarm: 'sos', ignition: true } });
    const result = processPosition(state, older, context());
    assert.equal(result.state, state);
    assert.deepEqual(result.events, []);
  });

  it('processes a position with the same fix time (a status report on the last fix)', () => {
    const { events } = run([
      position(1, { fixTime: T0, attributes: { ignition: false } }),
      position(2, { fixTime: T0, attributes: { ignition: true, result: 'OK' } }),
    ]);
    assert.deepEqual(types(events), ['commandResult', 'ignitionOn']);
  });

  it("throws on another device's position", () => {
    assert.throws(() => processPosition(initialDeviceState(DEVICE_ID + 1), position(1), context()), /belongs to device/);
  });

  it('does not modify the state it is given', () => {
    const { state } = run([position(1, { speed: 60, attributes: { ignition: false, fuel: 50 } })], context({ settings: { speedLimit: 50 } }));
    const snapshot = structuredClone(state);
    deepFreeze(state);
    const next = processPosition(
      state,
      position(2, { speed: 70, attributes: { ignition: true, fuel: 10, alarm: 'sos', odometer: 5 } }),
      context({ settings: { speedLimit: 50, fuelDropThreshold: 1 }, geofences: [{ id: 1 }] }),
    );
    assert.deepEqual(state, snapshot);
    assert.notDeepEqual(next.state, state);
  });

  it('records the time last heard from the server time of the position', () => {
    const { state } = run([position(1, { serverTime: T0 + 99_000 }), position(2, { serverTime: T0 + 50_000 })]);
    assert.equal(state.lastMessageTime, T0 + 99_000);
  });

  it("reports a position's events in Traccar's handler order", () => {
    const start: DeviceEngineState = {
      ...initialDeviceState(DEVICE_ID),
      known: { ignition: false, driverUniqueId: 'a', fuel: 80, odometer: 9_999 },
    };
    const everything = position(1, {
      speed: 100,
      attributes: { message: 'hi', result: 'OK', fuel: 60, alarm: 'sos', ignition: true, odometer: 10_000, driverUniqueId: 'b' },
    });
    const ctx = context({
      settings: { speedLimit: 50, fuelDropThreshold: 5, maintenanceOdometerPeriod: 10_000 },
      geofences: [{ id: 4 }],
    });
    assert.deepEqual(types(processPosition(start, everything, ctx).events), [
      'textMessage',
      'commandResult',
      'deviceOverspeed',
      'deviceFuelDrop',
      'geofenceEnter',
      'alarm',
      'ignitionOn',
      'maintenance',
      'driverChanged',
    ]);
  });
});

describe('deviceFuelDrop / deviceFuelIncrease', () => {
  const thresholds = context({ settings: { fuelDropThreshold: 10, fuelIncreaseThreshold: 20 } });
  const fuel = (...levels: (number | undefined)[]) =>
    run(
      levels.map((level, index) => position(index + 1, { attributes: level === undefined ? {} : { fuel: level } })),
      thresholds,
    ).events;

  it('fires a drop at or beyond the threshold, not under it', () => {
    assert.deepEqual(fuel(50, 40.01), []);
    assert.deepEqual(types(fuel(50, 40)), ['deviceFuelDrop']);
    // 0.2 - 0.3 is -0.09999999999999998 in floating point: still "exactly" the threshold of 0.1.
    const tenth = context({ settings: { fuelDropThreshold: 0.1 } });
    const decimals = [position(1, { attributes: { fuel: 0.3 } }), position(2, { attributes: { fuel: 0.2 } })];
    assert.deepEqual(types(run(decimals, tenth).events), ['deviceFuelDrop']);
    const [event] = fuel(50, 30);
    assert.deepEqual(event!.attributes, { before: 50, after: 30, change: -20 });
  });

  it('fires an increase at or beyond its own threshold', () => {
    assert.deepEqual(fuel(10, 29.99), []);
    assert.deepEqual(types(fuel(10, 30)), ['deviceFuelIncrease']);
    assert.deepEqual(fuel(10, 30)[0]!.attributes, { before: 10, after: 30, change: 20 });
  });

  it('compares with the last reported level, across positions without one; the first level is a baseline', () => {
    assert.deepEqual(fuel(50), []);
    assert.deepEqual(types(fuel(50, undefined, undefined, 39)), ['deviceFuelDrop']);
    assert.deepEqual(fuel(50, 45, 40), []);
  });

  it('is off without a threshold, and per device through the device attributes', () => {
    const steps = [position(1, { attributes: { fuel: 100 } }), position(2, { attributes: { fuel: 0 } })];
    assert.deepEqual(run(steps).events, []);
    const perDevice = context({ deviceAttributes: { fuelDropThreshold: 50 } });
    assert.deepEqual(types(run(steps, perDevice).events), ['deviceFuelDrop']);
  });
});

describe('geofenceEnter / geofenceExit', () => {
  const inside = (...ids: number[]) => context({ geofences: ids.map((id) => ({ id })) });

  it('fires enter then exit with the geofence id', () => {
    const { eventsPerStep, state } = run([
      { position: position(1), context: inside() },
      { position: position(2), context: inside(5) },
      { position: position(3), context: inside(5) },
      { position: position(4), context: inside() },
    ]);
    assert.deepEqual(
      eventsPerStep.map((events) => events.map((event) => [event.type, event.geofenceId, event.positionId])),
      [[], [['geofenceEnter', 5, 2]], [], [['geofenceExit', 5, 4]]],
    );
    assert.deepEqual(state.geofenceIds, []);
  });

  it('fires enter for a first position already inside, and exits before enters when moving across', () => {
    const { eventsPerStep, state } = run([
      { position: position(1), context: inside(2, 1, 1) },
      { position: position(2), context: inside(2, 3) },
    ]);
    assert.deepEqual(
      eventsPerStep.map((events) => events.map((event) => `${event.type}:${event.geofenceId}`)),
      [['geofenceEnter:1', 'geofenceEnter:2'], ['geofenceExit:1', 'geofenceEnter:3']],
    );
    assert.deepEqual(state.geofenceIds, [2, 3]);
  });
});

describe('alarm', () => {
  const alarms = (...values: (string | undefined)[]) =>
    run(values.map((alarm, index) => position(index + 1, { attributes: alarm === undefined ? {} : { alarm } })));

  it('fires one event per distinct value of a comma-separated alarm', () => {
    const { events } = alarms('sos,powerCut, sos,');
    assert.deepEqual(
      events.map((event) => event.attributes),
      [{ alarm: 'sos' }, { alarm: 'powerCut' }],
    );
  });

  it('ignores an alarm the previous position already carried (Traccar default), and only that one', () => {
    const { eventsPerStep } = alarms('sos', 'sos', 'sos,powerCut', undefined, 'sos');
    assert.deepEqual(
      eventsPerStep.map((events) => events.map((event) => event.attributes?.['alarm'])),
      [['sos'], [], ['powerCut'], [], ['sos']],
    );
  });

  it('repeats a carried alarm on every position when ignoreDuplicateAlarms is off', () => {
    const steps = [position(1, { attributes: { alarm: 'sos' } }), position(2, { attributes: { alarm: 'sos' } })];
    const { events } = run(steps, context({ settings: { ignoreDuplicateAlarms: false } }));
    assert.deepEqual(types(events), ['alarm', 'alarm']);
  });
});

describe('ignitionOn / ignitionOff', () => {
  const ignition = (...values: (boolean | undefined)[]) =>
    run(values.map((value, index) => position(index + 1, { attributes: value === undefined ? {} : { ignition: value } })));

  it('treats the first known value as a baseline', () => {
    assert.deepEqual(ignition(true).events, []);
    assert.deepEqual(ignition(undefined, false).events, []);
  });

  it('fires on each change: off -> on -> off', () => {
    const { eventsPerStep } = ignition(false, true, true, false);
    assert.deepEqual(eventsPerStep.map(types), [[], ['ignitionOn'], [], ['ignitionOff']]);
  });

  it('compares with the last reported value across positions without one', () => {
    assert.deepEqual(types(ignition(false, undefined, true).events), ['ignitionOn']);
  });
});

describe('driverChanged', () => {
  const drivers = (...values: (string | number | undefined)[]) =>
    run(values.map((value, index) => position(index + 1, { attributes: value === undefined ? {} : { driverUniqueId: value } })));

  it('fires for the first driver identified (Traccar) and on each change, with the new id', () => {
    const { eventsPerStep } = drivers('A1', 'A1', 'B2', undefined, 'B2', 42);
    assert.deepEqual(
      eventsPerStep.map((events) => events.map((event) => event.attributes?.['driverUniqueId'])),
      [['A1'], [], ['B2'], [], [], ['42']],
    );
  });
});

describe('commandResult / textMessage', () => {
  it('fires for every position with a result, repeated or not', () => {
    const steps = [1, 2].map((id) => position(id, { attributes: { result: 'RELAY,1 OK' } }));
    const { events } = run([...steps, position(3, { attributes: { result: '' } })]);
    assert.deepEqual(
      events.map((event) => [event.type, event.positionId, event.attributes]),
      [
        ['commandResult', 1, { result: 'RELAY,1 OK' }],
        ['commandResult', 2, { result: 'RELAY,1 OK' }],
      ],
    );
  });

  it('fires textMessage for a position carrying a message', () => {
    const { events } = run([position(1, { attributes: { message: 'Help at gate 3' } }), position(2)]);
    assert.deepEqual(
      events.map((event) => [event.type, event.attributes]),
      [['textMessage', { message: 'Help at gate 3' }]],
    );
  });
});

describe('maintenance', () => {
  const service = context({ settings: { maintenanceOdometerPeriod: 10_000 } });
  const odometer = (values: (number | undefined)[], ctx = service) =>
    run(values.map((value, index) => position(index + 1, { attributes: value === undefined ? {} : { odometer: value } })), ctx)
      .eventsPerStep;

  it('fires when the odometer reaches a boundary (at it, not just under) and once per boundary', () => {
    const steps = odometer([9_000, 9_999, 10_000, 10_001, 19_999, 20_000]);
    assert.deepEqual(steps.map(types), [[], [], ['maintenance'], [], [], ['maintenance']]);
    assert.deepEqual(steps[2]![0]!.attributes, { odometer: 10_000 });
    assert.equal(steps[2]![0]!.maintenanceId, undefined);
  });

  it('fires once for a jump over several boundaries, and not for the first reading', () => {
    assert.deepEqual(odometer([25_000]).map(types), [[]]);
    assert.deepEqual(odometer([5_000, 45_000]).map(types), [[], ['maintenance']]);
  });

  it('ignores positions without an odometer and odometer values of 0', () => {
    assert.deepEqual(odometer([9_000, undefined, 0, 10_500]).map(types), [[], [], [], ['maintenance']]);
  });

  it('starts counting at maintenanceOdometerStart', () => {
    const fromStart = context({ deviceAttributes: { maintenanceOdometerStart: 5_000, maintenanceOdometerPeriod: 10_000 } });
    assert.deepEqual(odometer([4_000, 4_999, 5_000, 14_999, 15_000], fromStart).map(types), [
      [],
      [],
      ['maintenance'],
      [],
      ['maintenance'],
    ]);
  });

  it('uses the distance measured by the engine when the device reports no odometer', () => {
    const step = 600 / METRES_PER_DEGREE_LAT;
    const ctx = context({ settings: { maintenanceOdometerPeriod: 1_000 } });
    const { eventsPerStep } = run([0, 1, 2, 3].map((index) => position(index + 1, { latitude: index * step })), ctx);
    const maintenance = eventsPerStep.map((events) => ofType(events, 'maintenance').map((event) => event.attributes));
    assert.equal(maintenance[1]!.length, 0);
    assert.equal(maintenance[2]!.length, 1);
    assert.ok(Math.abs((maintenance[2]![0]!['totalDistance'] as number) - 1_200) < 1e-6);
    assert.equal(maintenance[3]!.length, 0);
  });

  it('is off without a period', () => {
    assert.deepEqual(odometer([9_000, 10_000], context()).flat(), []);
  });
});
