import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { distanceMeters } from '../../../../src/services/tracking/geo/index.ts';
import { isInMotion } from '../../../../src/services/tracking/engine/motion.ts';
import { DEFAULT_ENGINE_SETTINGS } from '../../../../src/services/tracking/engine/index.ts';
import { METRES_PER_DEGREE_LAT, SECOND, T0, context, ofType, position, run, types } from './engine-helpers.ts';

const at = (seconds: number) => T0 + seconds * SECOND;
// Settings that isolate one trigger: the others are out of reach.
const byDuration = context({ settings: { minimalTripDistance: 1e9 } });
const byDistance = context({ settings: { minimalTripDuration: 1e9 } });

describe('isInMotion', () => {
  it('follows the speed threshold, strictly above it (Traccar 0.01 kn)', () => {
    assert.equal(isInMotion(position(1, { speed: 0.01 }), DEFAULT_ENGINE_SETTINGS), false);
    assert.equal(isInMotion(position(1, { speed: 0.011 }), DEFAULT_ENGINE_SETTINGS), true);
  });

  it('prefers the motion attribute reported by the device', () => {
    assert.equal(isInMotion(position(1, { speed: 30, attributes: { motion: false } }), DEFAULT_ENGINE_SETTINGS), false);
    assert.equal(isInMotion(position(1, { speed: 0, attributes: { motion: true } }), DEFAULT_ENGINE_SETTINGS), true);
    assert.equal(isInMotion(position(1, { speed: 0, attributes: { motion: 'yes' } }), DEFAULT_ENGINE_SETTINGS), false);
  });
});

describe('deviceMoving', () => {
  it('fires once motion has held minimalTripDuration (at the threshold, not just under)', () => {
    const under = run([position(1, { fixTime: at(0), speed: 10 }), position(2, { fixTime: at(299.999), speed: 10 })], byDuration);
    assert.deepEqual(under.events, []);

    const { events, state } = run(
      [
        position(1, { fixTime: at(0), speed: 10 }),
        position(2, { fixTime: at(120), speed: 10 }),
        position(3, { fixTime: at(300), speed: 10 }),
        position(4, { fixTime: at(400), speed: 10 }),
      ],
      byDuration,
    );
    assert.deepEqual(types(events), ['deviceMoving']);
    assert.equal(events[0]!.positionId, 3);
    assert.equal(events[0]!.eventTime, at(300));
    assert.deepEqual(events[0]!.attributes, { startTime: at(0), startPositionId: 1 });
    assert.equal(state.motion.moving, true);
  });

  it('fires once the distance since motion began reaches minimalTripDistance', () => {
    const start = { latitude: 0, longitude: 0 };
    const end = { latitude: 500 / METRES_PER_DEGREE_LAT, longitude: 0 };
    const measured = distanceMeters({ lat: 0, lon: 0 }, { lat: end.latitude, lon: 0 });
    assert.ok(Math.abs(measured - 500) < 1e-6);
    const steps = [position(1, { speed: 10, ...start }), position(2, { speed: 10, ...end })];

    const atThreshold = run(steps, context({ settings: { minimalTripDuration: 1e9, minimalTripDistance: measured } }));
    assert.deepEqual(types(atThreshold.events), ['deviceMoving']);
    const justUnder = run(steps, context({ settings: { minimalTripDuration: 1e9, minimalTripDistance: measured + 0.001 } }));
    assert.deepEqual(justUnder.events, []);
  });

  it('measures the path, not the straight line, and only between valid fixes', () => {
    const north = 300 / METRES_PER_DEGREE_LAT;
    const path = run(
      [
        position(1, { speed: 10, latitude: 0 }),
        position(2, { speed: 10, latitude: north }),
        position(3, { speed: 10, latitude: 0 }),
      ],
      byDistance,
    );
    assert.deepEqual(types(path.events), ['deviceMoving']);
    assert.ok(Math.abs(path.state.totalDistance - 600) < 1e-6);

    const withInvalidFix = run(
      [
        position(1, { speed: 10, latitude: 0 }),
        position(2, { speed: 10, latitude: 45, valid: false }),
        position(3, { speed: 10, latitude: north }),
      ],
      byDistance,
    );
    assert.deepEqual(withInvalidFix.events, []);
    assert.ok(Math.abs(withInvalidFix.state.totalDistance - 300) < 1e-6);
  });

  it('needs a second position: the one where motion begins never confirms it alone', () => {
    const { events } = run([position(1, { speed: 10 })], context({ settings: { minimalTripDuration: 0, minimalTripDistance: 0 } }));
    assert.deepEqual(events, []);
  });

  it('uses the device attributes over the server settings', () => {
    const steps = [position(1, { fixTime: at(0), speed: 10 }), position(2, { fixTime: at(60), speed: 10 })];
    assert.deepEqual(run(steps, byDuration).events, []);
    const perDevice = context({ settings: { minimalTripDistance: 1e9 }, deviceAttributes: { minimalTripDuration: '60' } });
    assert.deepEqual(types(run(steps, perDevice).events), ['deviceMoving']);
  });
});

describe('deviceStopped', () => {
  const trip = [
    position(1, { fixTime: at(0), speed: 10 }),
    position(2, { fixTime: at(300), speed: 10 }),
  ];

  it('fires once the stop has held minimalParkingDuration (at the threshold, not just under)', () => {
    const under = run([...trip, position(3, { fixTime: at(400) }), position(4, { fixTime: at(699.999) })], byDuration);
    assert.deepEqual(types(under.events), ['deviceMoving']);

    const { eventsPerStep, state } = run(
      [...trip, position(3, { fixTime: at(400) }), position(4, { fixTime: at(700) }), position(5, { fixTime: at(800) })],
      byDuration,
    );
    assert.deepEqual(eventsPerStep.map(types), [[], ['deviceMoving'], [], ['deviceStopped'], []]);
    assert.deepEqual(eventsPerStep[3]![0]!.attributes, { startTime: at(400), startPositionId: 3 });
    assert.equal(state.motion.moving, false);
  });

  it('does not split a trip on a stop shorter than minimalParkingDuration', () => {
    const { events, state } = run(
      [
        ...trip,
        position(3, { fixTime: at(400) }),
        position(4, { fixTime: at(500), speed: 10 }),
        position(5, { fixTime: at(900), speed: 10 }),
        position(6, { fixTime: at(1000) }),
        position(7, { fixTime: at(1299) }),
      ],
      byDuration,
    );
    assert.deepEqual(types(events), ['deviceMoving']);
    assert.equal(state.motion.pending?.since, at(1000));
  });

  it('fires after a silence of minimalNoDataDuration while moving (at the threshold, not just under)', () => {
    const gap = (seconds: number) =>
      run([...trip, position(3, { fixTime: at(300 + seconds), speed: 10 })], byDuration).eventsPerStep[2]!;
    assert.deepEqual(gap(3599), []);
    const events = gap(3600);
    assert.deepEqual(types(events), ['deviceStopped']);
    assert.equal(events[0]!.positionId, 3);
    assert.deepEqual(events[0]!.attributes, { startTime: at(300), startPositionId: 2 });
  });

  it('does not fire for a silence while parked, nor when minimalNoDataDuration is 0', () => {
    const parked = run([position(1, { fixTime: at(0) }), position(2, { fixTime: at(10_000) })], byDuration);
    assert.deepEqual(parked.events, []);
    const off = context({ settings: { minimalTripDistance: 1e9, minimalNoDataDuration: 0 } });
    const moving = run([...trip, position(3, { fixTime: at(100_000), speed: 10 })], off);
    assert.deepEqual(types(moving.events), ['deviceMoving']);
  });

  it('starts a new trip after the silence like any other', () => {
    const { events } = run(
      [
        ...trip,
        position(3, { fixTime: at(5000), speed: 10 }),
        position(4, { fixTime: at(5100), speed: 10 }),
        position(5, { fixTime: at(5400), speed: 10 }),
      ],
      byDuration,
    );
    assert.deepEqual(types(events), ['deviceMoving', 'deviceStopped', 'deviceMoving']);
    assert.deepEqual(ofType(events, 'deviceMoving')[1]!.attributes, { startTime: at(5100), startPositionId: 4 });
  });
});
