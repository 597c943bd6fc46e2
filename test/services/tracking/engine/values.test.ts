import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { effectiveSettings, readNumber, readText } from '../../../../src/services/tracking/engine/values.ts';
import { DEFAULT_ENGINE_SETTINGS, DEVICE_SETTING_KEYS } from '../../../../src/services/tracking/engine/index.ts';

describe('effectiveSettings', () => {
  const settings = { ...DEFAULT_ENGINE_SETTINGS, speedLimit: 50 };

  it('applies device attributes given as numbers or numeric strings, 0 included', () => {
    const result = effectiveSettings({ settings, deviceAttributes: { speedLimit: '65.5', minimalTripDistance: 0 } });
    assert.equal(result.speedLimit, 65.5);
    assert.equal(result.minimalTripDistance, 0);
    assert.equal(result.minimalTripDuration, 300);
  });

  it('ignores negative, non-numeric and unknown attributes', () => {
    const result = effectiveSettings({
      settings,
      deviceAttributes: {
        speedLimit: -1,
        minimalTripDuration: 'soon',
        minimalParkingDuration: true,
        fuelDropThreshold: '',
        overspeedMinimalDuration: 99,
        overspeedPreferLowest: true,
        useIgnition: 'yes',
      },
    });
    assert.deepEqual(result, settings);
  });

  it('lets every documented device key override', () => {
    const deviceAttributes = Object.fromEntries(DEVICE_SETTING_KEYS.map((key) => [key, 7]));
    const result = effectiveSettings({ settings, deviceAttributes });
    for (const key of DEVICE_SETTING_KEYS) assert.equal(result[key], 7, key);
    assert.equal(effectiveSettings({ settings, deviceAttributes: { useIgnition: true } }).useIgnition, true);
  });
});

describe('attribute readers', () => {
  it('readNumber accepts finite numbers and numeric strings only', () => {
    assert.deepEqual(['12', ' 3.5 ', 4, Infinity, NaN, '', 'x', null, true].map(readNumber), [12, 3.5, 4, null, null, null, null, null, null]);
  });

  it('readText accepts non-empty strings and finite numbers', () => {
    assert.deepEqual(['a', '', 42, NaN, {}, null].map(readText), ['a', null, '42', null, null, null]);
  });
});
