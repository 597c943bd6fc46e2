import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  addAlarm, int64Value, isValidCoordinate, knotsFromKmh, knotsFromMps, utcDate,
} from '../../../../src/services/tracking/protocols/decode-helpers.ts';

describe('speed conversions', () => {
  it('converts km/h and m/s to knots', () => {
    assert.equal(knotsFromKmh(1.852), 1);
    assert.equal(Number(knotsFromMps(1852 / 3600).toFixed(12)), 1);
  });
});

describe('isValidCoordinate', () => {
  it('accepts the valid range and rejects the rest', () => {
    assert.equal(isValidCoordinate(90, -180), true);
    assert.equal(isValidCoordinate(90.0001, 0), false);
    assert.equal(isValidCoordinate(0, 180.5), false);
    assert.equal(isValidCoordinate(Number.NaN, 0), false);
  });
});

describe('addAlarm', () => {
  it('joins distinct alarms with commas and ignores empty ones', () => {
    const attributes: Record<string, unknown> = {};
    addAlarm(attributes, null);
    assert.deepEqual(attributes, {});
    addAlarm(attributes, 'sos');
    addAlarm(attributes, 'sos');
    addAlarm(attributes, 'powerCut');
    assert.equal(attributes['alarm'], 'sos,powerCut');
  });
});

describe('utcDate', () => {
  it('builds dates from two-digit years and applies a time zone offset', () => {
    assert.equal(utcDate(15, 10, 20, 14, 21, 11)?.toISOString(), '2015-10-20T14:21:11.000Z');
    assert.equal(utcDate(2024, 2, 29, 0, 0, 0, 120)?.toISOString(), '2024-02-28T22:00:00.000Z');
  });

  it('rejects out-of-range fields instead of rolling over', () => {
    assert.equal(utcDate(0, 0, 0, 0, 0, 0), null);
    assert.equal(utcDate(23, 2, 29, 0, 0, 0), null);
    assert.equal(utcDate(23, 1, 1, 24, 0, 0), null);
    assert.equal(utcDate(23, 1, 1, 0, 60, 0), null);
  });
});

describe('int64Value', () => {
  it('keeps exact numbers and falls back to strings', () => {
    assert.equal(int64Value(-5n), -5);
    assert.equal(int64Value(2n ** 60n), '1152921504606846976');
  });
});
