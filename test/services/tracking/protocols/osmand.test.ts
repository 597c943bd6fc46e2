import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { OSMAND_LIMITS, decodeOsmAnd } from '../../../../src/services/tracking/protocols/osmand/decoder.ts';
import type { OsmAndRequest } from '../../../../src/services/tracking/protocols/osmand/decoder.ts';
import { ProtocolError } from '../../../../src/services/tracking/protocols/types.ts';
import { NOW, assertWellFormed, roundTo, assertFix } from './protocol-test-helpers.ts';

function query(url: string): Record<string, string> {
  return Object.fromEntries(new URL(url, 'http://localhost').searchParams);
}

function decodeUrl(url: string) {
  return decodeOsmAnd({ query: query(url) }, NOW);
}

function onlyPosition(request: OsmAndRequest) {
  const message = decodeOsmAnd(request, NOW);
  assert.equal(message.positions.length, 1);
  assert.equal(message.statuses.length, 0);
  return message.positions[0]!;
}

// Requests from Traccar's OsmAndProtocolDecoderTest.
const TRACCAR_CLIENT_JSON = JSON.stringify({
  location: {
    event: 'motionchange', is_moving: false, uuid: '0e9a2473-a9a7-4c00-997b-fb97d2154e75',
    timestamp: '2021-07-21T08:06:34.444Z', odometer: 0,
    coords: {
      latitude: -6.1148096, longitude: 106.6837015, accuracy: 3.8, speed: 18.67, speed_accuracy: 0.26, heading: 63,
      heading_accuracy: 0.28, altitude: 35.7, altitude_accuracy: 3.8,
    },
    activity: { type: 'still', confidence: 100 }, battery: { is_charging: false, level: 0.79 }, extras: {},
  },
  device_id: '8737767034',
});
const TRACCAR_CLIENT_JSON_EXTRAS = JSON.stringify({
  location: {
    timestamp: '2025-06-15T13:45:12.862Z',
    coords: { latitude: 37.4219983, longitude: -122.084, accuracy: 5, speed: 0, heading: -1, altitude: 5 },
    is_moving: false, odometer: 0, event: 'motionchange', battery: { level: 1, is_charging: false },
    activity: { type: 'still' },
    extras: { device_string_test: 'long_device_id', device_bool_test: true, device_integer_twelve_test: 12,
      device_double_test: 1.345, nested: { ignored: true } },
    _: '&id=48241179&lat=37.4219983&lon=-122.084&timestamp=2025-06-15T13:45:12.862Z&',
  },
  device_id: '48241179',
});
const IOS_MOCK_JSON = JSON.stringify({
  location: {
    extras: {}, mock: true,
    coords: { speed_accuracy: -1, speed: -1, longitude: -122.406417, latitude: 37.785834000000001, accuracy: 5,
      altitude: 0, heading: -1 },
    is_moving: false, odometer: 0, event: 'motionchange', battery: { level: -1, is_charging: false },
    activity: { type: 'unknown', confidence: 100 }, timestamp: '2025-05-09T04:11:30.579Z',
  },
  device_id: '658765',
});

describe('osmand query string', () => {
  it('decodes id, coordinates, ISO timestamp and typed values', () => {
    const message = decodeUrl('/?id=902064&lat=42.06288&lon=-88.23412&timestamp=2016-01-27T18%3A55%3A47Z&hdop=6.0&altitude=224.0&speed=0.0');
    assert.equal(message.uniqueId, '902064');
    assert.equal(message.ack, undefined);
    assert.deepEqual(message.positions, [{
      fixTime: new Date('2016-01-27T18:55:47Z'), deviceTime: new Date('2016-01-27T18:55:47Z'), valid: true,
      latitude: 42.06288, longitude: -88.23412, altitude: 224, speed: 0, course: 0, accuracy: 0,
      attributes: { hdop: 6 },
    }]);
  });

  it('reads timestamps in seconds, milliseconds and yyyy-MM-dd HH:mm:ss UTC', () => {
    assert.equal(onlyPosition({ query: query('/?id=1&timestamp=1377177267&lat=60.0&lon=30.0') }).fixTime.toISOString(),
      '2013-08-22T13:14:27.000Z');
    assert.equal(onlyPosition({ query: query('/?id=1&timestamp=1442068686579&lat=1&lon=2') }).fixTime.toISOString(),
      '2015-09-12T14:38:06.579Z');
    const position = onlyPosition({
      query: query('/?lat=49.60688&lon=6.15788&timestamp=2014-06-04+09%3A10%3A11&altitude=384.7&speed=0.0&id=353861053849681'),
    });
    assert.equal(position.fixTime.toISOString(), '2014-06-04T09:10:11.000Z');
    assert.equal(position.altitude, 384.7);
    assert.equal(onlyPosition({ query: query('/?id=1&lat=1&lon=2&timestamp=2016-01-27T18:55:47') }).fixTime
      .toISOString(), '2016-01-27T18:55:47.000Z', 'an ISO time without zone is UTC');
  });

  it('accepts deviceid, location=lat,lon, heading and keeps speed in knots', () => {
    const position = onlyPosition({ query: query('/?location=60.0,30.0&speed=12.5&heading=90&deviceid=123456') });
    assert.equal(position.latitude, 60);
    assert.equal(position.longitude, 30);
    assert.equal(position.speed, 12.5);
    assert.equal(position.course, 90);
    assert.equal(position.fixTime, NOW, 'no timestamp means server time');
    assert.equal(position.deviceTime, null);
  });

  it('maps batt, charge, valid, driverUniqueId and types other keys', () => {
    const position = onlyPosition({
      query: query('/?id=1&lat=40.7232948571&lon=-74.0061408571&bearing=7.2&batt=87&charge=true&valid=0'
        + '&driverUniqueId=007&ignition=true&rpm=933&fuel=24&note=hello&accuracy=12&notificationToken=secret'),
    });
    assert.equal(position.valid, false);
    assert.equal(position.course, 7.2);
    assert.equal(position.accuracy, 12);
    assert.deepEqual(position.attributes, {
      batteryLevel: 87, charge: true, driverUniqueId: '007', ignition: true, rpm: 933, fuel: 24, note: 'hello',
    });
  });

  it('keeps cell and wifi as attributes and reports without coordinates as status', () => {
    const message = decodeOsmAnd({
      query: { id: '123456', timestamp: '1377177267', cell: ['257,02,16,2224', '257,02,16,2223,-90'], wifi: '00-14-22-01-23-45,-80' },
    }, NOW);
    assert.deepEqual(message.positions, []);
    assert.deepEqual(message.statuses, [{
      deviceTime: new Date('2013-08-22T13:14:27Z'),
      attributes: { cell: ['257,02,16,2224', '257,02,16,2223,-90'], wifi: '00-14-22-01-23-45,-80' },
    }]);
  });

  it('reads form bodies, with query keys taking precedence', () => {
    const position = onlyPosition({
      query: { lat: '10' },
      contentType: 'application/x-www-form-urlencoded',
      body: Buffer.from('id=abc&lat=20&lon=30&altitude=5'),
    });
    assert.equal(position.latitude, 10);
    assert.equal(position.longitude, 30);
    assert.equal(position.altitude, 5);
    assert.equal(decodeOsmAnd({ query: {}, body: 'id=abc&lat=20&lon=30' }, NOW).uniqueId, 'abc');
  });

  it('rejects a missing id and malformed values', () => {
    assert.throws(() => decodeUrl('/?timestamp=1377177267&lat=60.0&lon=30.0'), /missing id/);
    // An id with nothing else, or with a time alone, reports nothing.
    assert.throws(() => decodeUrl('/?id=123456'), /no location and no value/);
    assert.throws(() => decodeUrl('/?id=123456&timestamp=1377177267'), /no location and no value/);
    assert.throws(() => decodeUrl('/?id=1&lat=abc&lon=30'), /invalid lat/);
    assert.throws(() => decodeUrl('/?id=1&lat=91&lon=30'), /invalid coordinates/);
    assert.throws(() => decodeUrl('/?id=1&lat=1&lon=2&timestamp=yesterday'), /invalid timestamp/);
    assert.throws(() => decodeUrl('/?id=1&lat=1&lon=2&timestamp=2016-13-27 18:55:47'), /invalid timestamp/);
  });

  it('refuses numbers that are too long or overflow a double, and keeps such text under other keys as text', () => {
    // Each value would backtrack quadratically in a regex with overlapping digit runs; the length cap comes first.
    assert.throws(() => decodeUrl(`/?id=1&lat=${'1'.repeat(30_000)}x&lon=2`), /parameter lat is longer than 1024 characters/);
    assert.throws(() => decodeUrl(`/?id=1&lat=${'1'.repeat(33)}&lon=2`), /invalid lat/);
    assert.throws(() => decodeUrl('/?id=1&lat=1&lon=2&speed=1e309'), /invalid speed/);
    assert.throws(() => decodeUrl(`/?id=1&lat=1&lon=2&timestamp=${'9'.repeat(33)}`), /invalid timestamp/);
    assert.equal(onlyPosition({ query: { id: '1', lat: '1', lon: '2', speed: '12.5e0' } }).speed, 12.5);
    const position = onlyPosition({ query: { id: '1', lat: '1', lon: '2', big: '1e309', long: '1'.repeat(40) } });
    assert.deepEqual(position.attributes, { big: '1e309', long: '1'.repeat(40) });
  });

  it('refuses more parameters than the limit, over-long names and values, form and query together', () => {
    const many = Array.from({ length: OSMAND_LIMITS.parameters }, (_, index) => `k${index}=1`).join('&');
    assert.throws(() => decodeOsmAnd({ query: { id: '1' }, body: many }, NOW), /more than 100 parameters/);
    assert.throws(() => decodeOsmAnd({ query: {}, body: `id=1&${'a'.repeat(200_000)}` }, NOW), /name is longer than 64/);
    assert.throws(() => decodeUrl(`/?id=1&note=${'x'.repeat(1025)}`), /parameter note is longer than 1024/);
    assert.throws(() => decodeOsmAnd({ query: { id: '1', cell: Array.from({ length: 101 }, () => '1') } }, NOW), /more than 100/);
    const message = decodeOsmAnd({ query: { id: '1' }, body: Array.from({ length: OSMAND_LIMITS.parameters - 1 }, (_, index) => `k${index}=1`).join('&') }, NOW);
    assert.equal(Object.keys(message.statuses[0]?.attributes ?? {}).length, OSMAND_LIMITS.parameters - 1);
  });

  it('keeps the value of a key repeated in the form, query keys first', () => {
    const position = onlyPosition({ query: { id: '1', lat: '1' }, body: 'lon=5&x=a&lat=9&x=b&lon=2' });
    assert.deepEqual([position.latitude, position.longitude, position.attributes['x']], [1, 2, 'b']);
  });

  it('never turns __proto__ into an attribute', () => {
    const position = onlyPosition({ query: { id: '1', lat: '1', lon: '2' }, body: '__proto__=x' });
    assert.equal(Object.getPrototypeOf(position.attributes), Object.prototype);
    assert.deepEqual(position.attributes, {});
  });
});

describe('osmand Traccar Client JSON', () => {
  it('decodes coords, converts m/s to knots and maps battery and motion', () => {
    const message = decodeOsmAnd({ query: {}, contentType: 'application/json', body: TRACCAR_CLIENT_JSON }, NOW);
    assert.equal(message.uniqueId, '8737767034');
    const position = message.positions[0]!;
    assertFix(position, '2021-07-21T08:06:34.444Z', true, -6.11481, 106.6837);
    assert.equal(roundTo(position.speed, 5), 36.29158);
    assert.equal(position.course, 63);
    assert.equal(position.accuracy, 3.8);
    assert.equal(position.altitude, 35.7);
    assert.deepEqual(position.attributes, {
      event: 'motionchange', motion: false, odometer: 0, activity: 'still', batteryLevel: 79, charge: false,
    });
  });

  it('copies scalar extras and ignores a negative heading', () => {
    const position = onlyPosition({
      query: {}, contentType: 'application/json; charset=utf-8', body: Buffer.from(TRACCAR_CLIENT_JSON_EXTRAS),
    });
    assert.equal(position.course, 0);
    assert.deepEqual(position.attributes, {
      event: 'motionchange', motion: false, odometer: 0, activity: 'still', batteryLevel: 100, charge: false,
      device_string_test: 'long_device_id', device_bool_test: true, device_integer_twelve_test: 12,
      device_double_test: 1.345,
    });
  });

  it('ignores unknown speed and battery level (-1) and keeps the mock flag', () => {
    const position = onlyPosition({ query: {}, contentType: 'application/json', body: IOS_MOCK_JSON });
    assert.equal(position.speed, 0);
    assert.equal(position.attributes['mock'], true);
    assert.equal(position.attributes['batteryLevel'], undefined);
  });

  it('reports a location without coords as status and accepts a batch', () => {
    const body = JSON.stringify({
      device_id: 42,
      location: [
        { timestamp: '2025-01-01T00:00:00Z', event: 'heartbeat', battery: { level: 0.5, is_charging: true } },
        { timestamp: '2025-01-01T00:01:00Z', coords: { latitude: 1, longitude: 2 } },
      ],
    });
    const message = decodeOsmAnd({ query: {}, contentType: 'application/json', body }, NOW);
    assert.equal(message.uniqueId, '42');
    assert.deepEqual(message.statuses, [{
      deviceTime: new Date('2025-01-01T00:00:00Z'), attributes: { event: 'heartbeat', batteryLevel: 50, charge: true },
    }]);
    assert.equal(message.positions.length, 1);
  });

  it('refuses JSON documents beyond the limits: long texts, many extras or locations', () => {
    const json = (document: unknown) => decodeOsmAnd({ query: {}, contentType: 'application/json', body: JSON.stringify(document) }, NOW);
    const coords = { latitude: 1, longitude: 2 };
    assert.throws(() => json({ device_id: 'x'.repeat(1025), location: { coords } }), /device_id is longer than 1024/);
    assert.throws(() => json({ device_id: '1', location: { coords, event: 'e'.repeat(1025) } }), /event is longer/);
    assert.throws(() => json({ device_id: '1', location: { coords, timestamp: '2'.repeat(1025) } }), /timestamp is longer/);
    const extras = Object.fromEntries(Array.from({ length: 101 }, (_, index) => [`k${index}`, index]));
    assert.throws(() => json({ device_id: '1', location: { coords, extras } }), /more than 100 extras/);
    assert.throws(() => json({ device_id: '1', location: { coords, extras: { note: 'n'.repeat(1025) } } }), /note is longer/);
    assert.throws(() => json({ device_id: '1', location: Array.from({ length: 1001 }, () => ({})) }), /more than 1000 locations/);
    assert.equal(json({ device_id: '1', location: Array.from({ length: 1000 }, () => ({ battery: { level: 0.5 } })) }).statuses.length, 1000);
  });

  it('rejects malformed JSON documents', () => {
    const json = (body: string) => decodeOsmAnd({ query: {}, contentType: 'application/json', body }, NOW);
    assert.throws(() => json('{'), /invalid JSON/);
    assert.throws(() => json('[]'), ProtocolError);
    assert.throws(() => json('{"location":{}}'), /missing id/);
    assert.throws(() => json('{"device_id":"1"}'), /missing location/);
    assert.throws(() => json('{"device_id":"1","location":{"timestamp":"2024-01-01T00:00:00Z"}}'), /no location and no value/);
    assert.throws(() => json('{"device_id":"1","location":{"coords":{"latitude":"x","longitude":2}}}'),
      /invalid coordinates/);
  });
});

describe('osmand fuzzing', () => {
  it('never throws anything but ProtocolError on random parameters and bodies', () => {
    const key = fc.constantFrom('id', 'deviceid', 'lat', 'lon', 'location', 'timestamp', 'speed', 'bearing', 'valid',
      'batt', 'charge', 'cell', 'altitude', 'accuracy', 'hdop', 'other');
    const value = fc.oneof(fc.string({ maxLength: 12 }), fc.double().map(String), fc.integer().map(String));
    fc.assert(fc.property(fc.dictionary(key, value), fc.option(fc.string({ maxLength: 40 })), fc.boolean(),
      (parameters, body, json) => {
        try {
          const message = decodeOsmAnd(
            { query: parameters, contentType: json ? 'application/json' : undefined, body: body ?? undefined }, NOW);
          assertWellFormed(message);
        } catch (error) {
          if (!(error instanceof ProtocolError)) {
            throw error;
          }
        }
      }), { numRuns: 1000 });
  });

  it('never throws anything but ProtocolError on random JSON documents', () => {
    fc.assert(fc.property(fc.jsonValue(), fc.jsonValue(), (location, deviceId) => {
      try {
        const body = JSON.stringify({ device_id: deviceId, location });
        assertWellFormed(decodeOsmAnd({ query: {}, contentType: 'application/json', body }, NOW));
      } catch (error) {
        if (!(error instanceof ProtocolError)) {
          throw error;
        }
      }
    }), { numRuns: 1000 });
  });
});
