import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../../../src/config.ts';
import { DEFAULT_ENGINE_SETTINGS, initialDeviceState } from '../../../../src/services/tracking/engine/index.ts';
import { seedFromLatest } from '../../../../src/services/tracking/ingest/engine-seed.ts';
import { engineSettings } from '../../../../src/services/tracking/ingest/settings.ts';

function configError(env: Record<string, string>): ConfigError {
  try {
    engineSettings(loadConfig(env).eventDefaults);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error;
  }
  assert.fail('expected a ConfigError');
}

describe('ingestion settings', () => {
  it('INGEST_BATCH_SIZE, INGEST_BATCH_DELAY and DEVICE_CONNECTIONS_PER_IP default to 1000 rows, 2 ms and 1000 connections and are bounded', () => {
    assert.deepEqual(loadConfig({}).ingest, { batchSize: 1000, batchDelay: 2, connectionsPerIp: 1000 });
    assert.deepEqual(loadConfig({ INGEST_BATCH_SIZE: '50', INGEST_BATCH_DELAY: '0', DEVICE_CONNECTIONS_PER_IP: '1' }).ingest, {
      batchSize: 50,
      batchDelay: 0,
      connectionsPerIp: 1,
    });
    for (const env of [
      { INGEST_BATCH_SIZE: '0' },
      { INGEST_BATCH_SIZE: '10001' },
      { INGEST_BATCH_DELAY: '1001' },
      { INGEST_BATCH_DELAY: 'soon' },
      { DEVICE_CONNECTIONS_PER_IP: '0' },
      { DEVICE_CONNECTIONS_PER_IP: 'many' },
    ]) {
      assert.throws(() => loadConfig(env), ConfigError, JSON.stringify(env));
    }
  });

  it('EVENT_DEFAULTS sets server-wide rule settings over Traccar’s defaults', () => {
    assert.deepEqual(engineSettings(loadConfig({}).eventDefaults), DEFAULT_ENGINE_SETTINGS);
    const settings = engineSettings(loadConfig({ EVENT_DEFAULTS: 'speedLimit=54, minimalParkingDuration=120,overspeedPreferLowest=true,fuelDropThreshold=2.5' }).eventDefaults);
    assert.deepEqual(settings, { ...DEFAULT_ENGINE_SETTINGS, speedLimit: 54, minimalParkingDuration: 120, overspeedPreferLowest: true, fuelDropThreshold: 2.5 });
  });

  it('EVENT_DEFAULTS refuses malformed pairs, unknown names and values of the wrong kind', () => {
    assert.match(configError({ EVENT_DEFAULTS: 'speedLimit' }).message, /^EVENT_DEFAULTS: expected name=value pairs/);
    assert.match(configError({ EVENT_DEFAULTS: 'speedLimit=-5' }).message, /^EVENT_DEFAULTS: speedLimit: expected a number >= 0/);
    assert.match(configError({ EVENT_DEFAULTS: 'speedLimit=fast' }).message, /expected a number >= 0, true or false/);
    assert.match(configError({ EVENT_DEFAULTS: 'speedlimit=5' }).message, /unknown setting 'speedlimit'/);
    assert.match(configError({ EVENT_DEFAULTS: 'speedLimit=true' }).message, /speedLimit must be a number/);
    assert.match(configError({ EVENT_DEFAULTS: 'ignoreDuplicateAlarms=1' }).message, /ignoreDuplicateAlarms must be true or false/);
  });
});

describe('engine state seeded from the latest stored position', () => {
  const latest = {
    id: 41,
    deviceId: 7,
    protocol: 'teltonika',
    serverTime: 5_000,
    deviceTime: 4_000,
    fixTime: 4_000,
    valid: true,
    latitude: 52.5,
    longitude: 13.4,
    speed: 30,
    attributes: { ignition: true, driverUniqueId: 'D-1', fuel: 40, odometer: 1200, alarm: 'sos,powerCut' },
  };
  const context = { deviceAttributes: {}, settings: DEFAULT_ENGINE_SETTINGS };

  it('takes the last fix, known values, alarms, motion and geofences; keeps status and last message time', () => {
    const state = { ...initialDeviceState(7, 'online', 9_000), inactivityNotifiedAt: 8_000 };
    assert.deepEqual(seedFromLatest(state, latest, [3, 5], context), {
      ...state,
      last: { id: 41, fixTime: 4_000, alarms: ['sos', 'powerCut'] },
      lastFix: { lat: 52.5, lon: 13.4 },
      known: { ignition: true, driverUniqueId: 'D-1', fuel: 40, odometer: 1200 },
      motion: { moving: true, lastMotion: true, pending: null },
      geofenceIds: [3, 5],
    });
  });

  it('an invalid fix leaves no coordinates to measure from; the motion attribute wins over the speed', () => {
    const seeded = seedFromLatest(initialDeviceState(7), { ...latest, valid: false, attributes: { motion: false } }, [], context);
    assert.equal(seeded.lastFix, null);
    assert.deepEqual(seeded.motion, { moving: false, lastMotion: false, pending: null });
    assert.deepEqual(seeded.known, { ignition: null, driverUniqueId: null, fuel: null, odometer: null });
  });
});
