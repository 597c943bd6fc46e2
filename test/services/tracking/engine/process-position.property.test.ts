import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { EVENT_TYPES } from '../../../../src/services/tracking/events/types.ts';
import {
  DEFAULT_ENGINE_SETTINGS,
  checkInactivity,
  checkStatusTimeout,
  initialDeviceState,
  processPosition,
  processStatus,
} from '../../../../src/services/tracking/engine/index.ts';
import type { DeviceEngineState, PositionContext, StoredPosition } from '../../../../src/services/tracking/engine/index.ts';
import { DEVICE_ID, T0 } from './engine-helpers.ts';

const anyAttributeValue = fc.oneof(
  fc.constant(undefined),
  fc.boolean(),
  fc.double({ noNaN: false }),
  fc.integer({ min: -1000, max: 100_000 }),
  fc.string({ maxLength: 12 }),
  fc.constantFrom('sos', 'sos,powerCut', ',', 'true', '10'),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 2 }),
);

const anyAttributes = fc.record(
  {
    ignition: anyAttributeValue,
    motion: anyAttributeValue,
    fuel: anyAttributeValue,
    odometer: anyAttributeValue,
    alarm: anyAttributeValue,
    driverUniqueId: anyAttributeValue,
    result: anyAttributeValue,
    message: anyAttributeValue,
    speedLimit: anyAttributeValue,
  },
  { requiredKeys: [] },
);

const anyStep = fc.record({
  // Mostly forward in time, sometimes backwards (out of order) or equal.
  timeStep: fc.integer({ min: -600_000, max: 4_000_000 }),
  valid: fc.boolean(),
  latitude: fc.oneof({ weight: 9, arbitrary: fc.double({ min: -90, max: 90, noNaN: true }) }, fc.constant(NaN)),
  longitude: fc.double({ min: -180, max: 180, noNaN: true }),
  speed: fc.oneof(fc.constant(undefined), fc.double({ min: 0, max: 300, noNaN: true })),
  deviceTime: fc.option(fc.integer({ min: 0, max: 2e12 })),
  attributes: anyAttributes,
  geofences: fc.array(
    fc.record({ id: fc.integer({ min: 1, max: 6 }), speedLimit: fc.option(fc.double({ min: -10, max: 150 }), { nil: undefined }) }),
    { maxLength: 4 },
  ),
});

const anyContext = fc.record({
  settings: fc.record({
    speedLimit: fc.option(fc.double({ min: 0, max: 150, noNaN: true }), { nil: undefined }),
    overspeedMinimalDuration: fc.integer({ min: 0, max: 120 }),
    overspeedPreferLowest: fc.boolean(),
    motionSpeedThreshold: fc.constantFrom(0.01, 2),
    minimalTripDistance: fc.integer({ min: 0, max: 1000 }),
    minimalTripDuration: fc.integer({ min: 0, max: 600 }),
    minimalParkingDuration: fc.integer({ min: 0, max: 600 }),
    minimalNoDataDuration: fc.integer({ min: 0, max: 7200 }),
    fuelDropThreshold: fc.option(fc.double({ min: 0, max: 50, noNaN: true }), { nil: undefined }),
    fuelIncreaseThreshold: fc.option(fc.double({ min: 0, max: 50, noNaN: true }), { nil: undefined }),
    ignoreDuplicateAlarms: fc.boolean(),
    deviceInactivityStart: fc.option(fc.integer({ min: 0, max: 7200 }), { nil: undefined }),
    deviceInactivityPeriod: fc.option(fc.integer({ min: 0, max: 3600 }), { nil: undefined }),
    maintenanceOdometerStart: fc.option(fc.integer({ min: 0, max: 20_000 }), { nil: undefined }),
    maintenanceOdometerPeriod: fc.option(fc.integer({ min: 0, max: 20_000 }), { nil: undefined }),
  }),
  deviceAttributes: fc.dictionary(
    fc.constantFrom('speedLimit', 'fuelDropThreshold', 'minimalTripDuration', 'deviceInactivityStart', 'maintenanceOdometerPeriod'),
    anyAttributeValue,
  ),
});

const KNOWN_TYPES = new Set<string>(EVENT_TYPES);

describe('processPosition (properties)', () => {
  it('never throws, emits only known types with the triggering position, and keeps the state plain JSON', () => {
    fc.assert(
      fc.property(anyContext, fc.array(anyStep, { maxLength: 40 }), (baseContext, steps) => {
        let state: DeviceEngineState = initialDeviceState(DEVICE_ID, 'online', T0);
        let time = T0;
        steps.forEach((step, index) => {
          time += step.timeStep;
          const position: StoredPosition = {
            id: index + 1,
            deviceId: DEVICE_ID,
            protocol: 'osmand',
            serverTime: time,
            deviceTime: step.deviceTime,
            fixTime: time,
            valid: step.valid,
            latitude: step.latitude,
            longitude: step.longitude,
            speed: step.speed,
            attributes: step.attributes,
          };
          const context: PositionContext = {
            ...baseContext,
            settings: { ...DEFAULT_ENGINE_SETTINGS, ...baseContext.settings },
            geofences: step.geofences,
          };
          const outOfOrder = state.last !== null && position.fixTime < state.last.fixTime;
          const result = processPosition(state, position, context);
          if (outOfOrder) {
            assert.equal(result.state, state);
            assert.deepEqual(result.events, []);
          }
          for (const event of result.events) {
            assert.ok(KNOWN_TYPES.has(event.type), event.type);
            assert.equal(event.positionId, position.id);
            assert.equal(event.deviceId, DEVICE_ID);
            assert.ok(Number.isFinite(event.eventTime));
          }
          assert.deepEqual(JSON.parse(JSON.stringify(result.state)), result.state);
          state = result.state;

          for (const sweep of [
            checkInactivity(state, time + step.timeStep, context),
            checkStatusTimeout(state, time + step.timeStep, 600),
            processStatus(state, index % 3 === 0 ? 'online' : 'offline', time),
          ]) {
            for (const event of sweep.events) assert.ok(KNOWN_TYPES.has(event.type), event.type);
            assert.deepEqual(JSON.parse(JSON.stringify(sweep.state)), sweep.state);
          }
        });
      }),
      { numRuns: 300 },
    );
  });

  it('gives the same result from a state that went through JSON (persisted, then reloaded)', () => {
    fc.assert(
      fc.property(fc.array(anyStep, { minLength: 2, maxLength: 20 }), (steps) => {
        const settings = { ...DEFAULT_ENGINE_SETTINGS, speedLimit: 60, fuelDropThreshold: 5, maintenanceOdometerPeriod: 5000 };
        let direct = initialDeviceState(DEVICE_ID);
        let reloaded = initialDeviceState(DEVICE_ID);
        let time = T0;
        steps.forEach((step, index) => {
          time += Math.abs(step.timeStep);
          const position: StoredPosition = {
            id: index + 1,
            deviceId: DEVICE_ID,
            protocol: null,
            serverTime: time,
            deviceTime: null,
            fixTime: time,
            valid: step.valid,
            latitude: step.latitude,
            longitude: step.longitude,
            speed: step.speed,
            attributes: step.attributes,
          };
          const context = { settings, deviceAttributes: {}, geofences: step.geofences };
          const a = processPosition(direct, position, context);
          const b = processPosition(JSON.parse(JSON.stringify(reloaded)) as DeviceEngineState, position, context);
          assert.deepEqual(b.events, a.events);
          direct = a.state;
          reloaded = b.state;
        });
      }),
      { numRuns: 200 },
    );
  });
});
