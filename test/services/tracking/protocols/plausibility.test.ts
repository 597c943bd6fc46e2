import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_DEVICE_CLOCK_AHEAD_MS, enforcePlausibility } from '../../../../src/services/tracking/protocols/plausibility.ts';
import type { DecodedMessage, DecodedPosition } from '../../../../src/services/tracking/protocols/types.ts';
import { NOW } from './protocol-test-helpers.ts';

function position(overrides: Partial<DecodedPosition> = {}): DecodedPosition {
  return {
    fixTime: NOW, deviceTime: NOW, valid: true, latitude: 52.5, longitude: 13.4, altitude: 40, speed: 10, course: 90,
    accuracy: 0, attributes: {}, ...overrides,
  };
}

function message(overrides: Partial<DecodedMessage> = {}): DecodedMessage {
  return { positions: [], statuses: [], ...overrides };
}

describe('plausibility of decoded messages', () => {
  it('accepts ordinary reports, a clock up to a day ahead and times back to 2000', () => {
    enforcePlausibility(message({ uniqueId: '1'.repeat(128), positions: [position()], statuses: [{ deviceTime: null, attributes: { batteryLevel: 50 } }] }), NOW);
    const ahead = new Date(NOW.getTime() + MAX_DEVICE_CLOCK_AHEAD_MS);
    enforcePlausibility(message({ positions: [position({ fixTime: ahead, deviceTime: ahead })] }), NOW);
    enforcePlausibility(message({ positions: [position({ fixTime: new Date('2000-01-01T00:00:00Z'), deviceTime: null })] }), NOW);
  });

  it('refuses numbers that are not finite, wherever they are', () => {
    for (const field of ['latitude', 'longitude', 'altitude', 'speed', 'course', 'accuracy'] as const) {
      for (const value of [Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN]) {
        assert.throws(() => enforcePlausibility(message({ positions: [position({ [field]: value })] }), NOW), /not a finite number/, `${field} ${value}`);
      }
    }
    assert.throws(() => enforcePlausibility(message({ positions: [position({ attributes: { odometer: Number.POSITIVE_INFINITY } })] }), NOW), /attribute odometer/);
    assert.throws(() => enforcePlausibility(message({ statuses: [{ deviceTime: null, attributes: { fuel: Number.NaN } }] }), NOW), /attribute fuel/);
  });

  it('refuses coordinates off the globe', () => {
    assert.throws(() => enforcePlausibility(message({ positions: [position({ latitude: 90.5 })] }), NOW), /out of range/);
    assert.throws(() => enforcePlausibility(message({ positions: [position({ longitude: -180.5 })] }), NOW), /out of range/);
  });

  it('refuses times before 2000, more than a day ahead, or not dates at all', () => {
    const tooFar = new Date(NOW.getTime() + MAX_DEVICE_CLOCK_AHEAD_MS + 1);
    for (const time of [new Date('1999-12-31T23:59:59Z'), tooFar, new Date(8_640_000_000_000_000), new Date(Number.NaN)]) {
      assert.throws(() => enforcePlausibility(message({ positions: [position({ fixTime: time })] }), NOW), /fix time/);
      assert.throws(() => enforcePlausibility(message({ positions: [position({ deviceTime: time })] }), NOW), /device time/);
      assert.throws(() => enforcePlausibility(message({ statuses: [{ deviceTime: time, attributes: {} }] }), NOW), /device time/);
    }
  });

  it('replaces a course outside [0, 360) and a negative speed by 0, listing each; 360 is north; the rest is kept', () => {
    const kept = message({ positions: [position({ course: 359.99, speed: 0 })] });
    enforcePlausibility(kept, NOW);
    assert.deepEqual([kept.positions[0]?.course, kept.positions[0]?.speed, kept.normalised], [359.99, 0, undefined]);
    const north = message({ positions: [position({ course: 360 })] });
    enforcePlausibility(north, NOW);
    assert.deepEqual([north.positions[0]?.course, north.normalised], [0, undefined]);
    const impossible = message({ positions: [position({ course: 90_000, speed: -180 }), position({ course: -1 }), position({ course: 653.2 })] });
    enforcePlausibility(impossible, NOW);
    assert.deepEqual(impossible.positions.map((fix) => [fix.course, fix.speed, fix.latitude, fix.longitude]), [[0, 0, 52.5, 13.4], [0, 10, 52.5, 13.4], [0, 10, 52.5, 13.4]]);
    assert.deepEqual(impossible.normalised, ['course_out_of_range', 'negative_speed', 'course_out_of_range', 'course_out_of_range']);
  });

  it('changes nothing of a message it refuses', () => {
    const refused = message({ positions: [position({ course: 400 }), position({ latitude: 91 })] });
    assert.throws(() => enforcePlausibility(refused, NOW), /out of range/);
    assert.deepEqual([refused.positions[0]?.course, refused.normalised], [400, undefined]);
  });

  it('refuses a device id longer than the devices module allows', () => {
    assert.throws(() => enforcePlausibility(message({ uniqueId: '1'.repeat(129) }), NOW), /longer than 128/);
  });
});
