import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_DEVICE_CLOCK_AHEAD_MS, assertPlausible } from '../../../../src/services/tracking/protocols/plausibility.ts';
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
    assertPlausible(message({ uniqueId: '1'.repeat(128), positions: [position()], statuses: [{ deviceTime: null, attributes: { batteryLevel: 50 } }] }), NOW);
    const ahead = new Date(NOW.getTime() + MAX_DEVICE_CLOCK_AHEAD_MS);
    assertPlausible(message({ positions: [position({ fixTime: ahead, deviceTime: ahead })] }), NOW);
    assertPlausible(message({ positions: [position({ fixTime: new Date('2000-01-01T00:00:00Z'), deviceTime: null })] }), NOW);
  });

  it('refuses numbers that are not finite, wherever they are', () => {
    for (const field of ['latitude', 'longitude', 'altitude', 'speed', 'course', 'accuracy'] as const) {
      for (const value of [Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN]) {
        assert.throws(() => assertPlausible(message({ positions: [position({ [field]: value })] }), NOW), /not a finite number/, `${field} ${value}`);
      }
    }
    assert.throws(() => assertPlausible(message({ positions: [position({ attributes: { odometer: Number.POSITIVE_INFINITY } })] }), NOW), /attribute odometer/);
    assert.throws(() => assertPlausible(message({ statuses: [{ deviceTime: null, attributes: { fuel: Number.NaN } }] }), NOW), /attribute fuel/);
  });

  it('refuses coordinates off the globe', () => {
    assert.throws(() => assertPlausible(message({ positions: [position({ latitude: 90.5 })] }), NOW), /out of range/);
    assert.throws(() => assertPlausible(message({ positions: [position({ longitude: -180.5 })] }), NOW), /out of range/);
  });

  it('refuses times before 2000, more than a day ahead, or not dates at all', () => {
    const tooFar = new Date(NOW.getTime() + MAX_DEVICE_CLOCK_AHEAD_MS + 1);
    for (const time of [new Date('1999-12-31T23:59:59Z'), tooFar, new Date(8_640_000_000_000_000), new Date(Number.NaN)]) {
      assert.throws(() => assertPlausible(message({ positions: [position({ fixTime: time })] }), NOW), /fix time/);
      assert.throws(() => assertPlausible(message({ positions: [position({ deviceTime: time })] }), NOW), /device time/);
      assert.throws(() => assertPlausible(message({ statuses: [{ deviceTime: time, attributes: {} }] }), NOW), /device time/);
    }
  });

  it('refuses a device id longer than the devices module allows', () => {
    assert.throws(() => assertPlausible(message({ uniqueId: '1'.repeat(129) }), NOW), /longer than 128/);
  });
});
