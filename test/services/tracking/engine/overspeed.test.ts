import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { applicableSpeedLimit } from '../../../../src/services/tracking/engine/overspeed.ts';
import { DEFAULT_ENGINE_SETTINGS } from '../../../../src/services/tracking/engine/index.ts';
import { SECOND, T0, context, ofType, position, run, types } from './engine-helpers.ts';

const limit50 = context({ settings: { speedLimit: 50 } });
const overspeeds = (steps: Parameters<typeof run>[0], ctx = limit50) => ofType(run(steps, ctx).events, 'deviceOverspeed');

describe('deviceOverspeed', () => {
  it('fires above the limit only: at the limit is not overspeed', () => {
    assert.deepEqual(overspeeds([position(1, { speed: 49.99 })]), []);
    assert.deepEqual(overspeeds([position(1, { speed: 50 })]), []);
    const [event, ...rest] = overspeeds([position(1, { speed: 50.01 })]);
    assert.deepEqual(rest, []);
    assert.equal(event!.positionId, 1);
    assert.deepEqual(event!.attributes, { speed: 50.01, speedLimit: 50 });
    assert.equal(event!.geofenceId, undefined);
  });

  it('does nothing without a limit, or with a limit of 0', () => {
    assert.deepEqual(overspeeds([position(1, { speed: 500 })], context()), []);
    assert.deepEqual(overspeeds([position(1, { speed: 500 })], context({ settings: { speedLimit: 0 } })), []);
    const offForDevice = context({ settings: { speedLimit: 50 }, deviceAttributes: { speedLimit: 0 } });
    assert.deepEqual(overspeeds([position(1, { speed: 500 })], offForDevice), []);
  });

  it('fires once per episode; dropping to the limit ends the episode', () => {
    const events = overspeeds([
      position(1, { speed: 60 }),
      position(2, { speed: 70 }),
      position(3, { speed: 55 }),
      position(4, { speed: 50 }),
      position(5, { speed: 65 }),
      position(6, { speed: 65 }),
    ]);
    assert.deepEqual(events.map((event) => event.positionId), [1, 5]);
  });

  it('waits overspeedMinimalDuration from the start of the episode (at the threshold, not just under)', () => {
    const slow = context({ settings: { speedLimit: 50, overspeedMinimalDuration: 10 } });
    const at = (seconds: number) => T0 + seconds * SECOND;
    assert.deepEqual(
      overspeeds([position(1, { fixTime: at(0), speed: 60 }), position(2, { fixTime: at(9.999), speed: 60 })], slow),
      [],
    );
    const events = overspeeds(
      [
        position(1, { fixTime: at(0), speed: 60 }),
        position(2, { fixTime: at(5), speed: 60 }),
        position(3, { fixTime: at(10), speed: 60 }),
        position(4, { fixTime: at(20), speed: 60 }),
      ],
      slow,
    );
    assert.deepEqual(events.map((event) => event.positionId), [3]);
    const interrupted = overspeeds(
      [
        position(1, { fixTime: at(0), speed: 60 }),
        position(2, { fixTime: at(5), speed: 40 }),
        position(3, { fixTime: at(10), speed: 60 }),
      ],
      slow,
    );
    assert.deepEqual(interrupted, []);
  });

  it("lets a geofence's limit win over the device's, in both directions", () => {
    const school = context({ settings: { speedLimit: 50 }, geofences: [{ id: 9, speedLimit: 30 }] });
    const [event] = overspeeds([position(1, { speed: 40 })], school);
    assert.equal(event!.geofenceId, 9);
    assert.deepEqual(event!.attributes, { speed: 40, speedLimit: 30 });

    const motorway = context({ settings: { speedLimit: 50 }, geofences: [{ id: 3, speedLimit: 70 }] });
    assert.deepEqual(overspeeds([position(1, { speed: 60 })], motorway), []);
  });

  it('keeps one episode across a change of limit while still above it', () => {
    const inside = context({ settings: { speedLimit: 50 }, geofences: [{ id: 9, speedLimit: 30 }] });
    const { events } = run([{ position: position(1, { speed: 60 }), context: inside }, position(2, { speed: 60 })], limit50);
    assert.deepEqual(types(events), ['deviceOverspeed', 'geofenceEnter', 'geofenceExit']);
  });
});

describe('applicableSpeedLimit', () => {
  const settings = { ...DEFAULT_ENGINE_SETTINGS, speedLimit: 50 };

  it('takes the highest geofence limit, or the lowest with overspeedPreferLowest', () => {
    const geofences = [{ id: 1, speedLimit: 30 }, { id: 2 }, { id: 3, speedLimit: 70 }, { id: 4, speedLimit: 0 }];
    assert.deepEqual(applicableSpeedLimit(position(1), geofences, settings), { knots: 70, geofenceId: 3 });
    assert.deepEqual(applicableSpeedLimit(position(1), geofences, { ...settings, overspeedPreferLowest: true }), {
      knots: 30,
      geofenceId: 1,
    });
  });

  it('takes a limit the device reports with the position over the configured one', () => {
    assert.deepEqual(applicableSpeedLimit(position(1, { attributes: { speedLimit: 40 } }), [], settings), {
      knots: 40,
      geofenceId: null,
    });
    assert.deepEqual(applicableSpeedLimit(position(1, { attributes: { speedLimit: 40 } }), [{ id: 2, speedLimit: 20 }], settings), {
      knots: 20,
      geofenceId: 2,
    });
    assert.deepEqual(applicableSpeedLimit(position(1), [], settings), { knots: 50, geofenceId: null });
  });
});
