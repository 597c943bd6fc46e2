import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { AreaError } from '../../../../src/services/tracking/geo/area.ts';
import type { LatLon } from '../../../../src/services/tracking/geo/area.ts';
import { parseArea } from '../../../../src/services/tracking/geo/area-text.ts';
import { areaContains } from '../../../../src/services/tracking/geo/containment.ts';
import { GeofenceIndex } from '../../../../src/services/tracking/geo/geofence-index.ts';
import { geofenceNear, hotSpot, queryPointNear } from './geo-arbitraries.ts';
import type { Geofence } from './geo-arbitraries.ts';

function bruteForce(geofences: Map<number, Geofence>, point: LatLon): number[] {
  return [...geofences]
    .filter(([, { area, polylineDistance }]) => areaContains(area, point, polylineDistance))
    .map(([id]) => id)
    .sort((a, b) => a - b);
}

describe('GeofenceIndex', () => {
  it('adds, finds, replaces and removes geofences', () => {
    const index = new GeofenceIndex();
    index.add(1, parseArea('CIRCLE (52.52 13.405, 1000)'));
    index.add(2, parseArea('POLYGON ((52 13, 52 14, 53 14, 53 13, 52 13))'));
    index.add(3, parseArea('LINESTRING (52.52 13.3, 52.52 13.5)'), 100);
    assert.equal(index.size, 3);
    assert.deepEqual(index.containing({ lat: 52.52, lon: 13.405 }), [1, 2, 3]);
    assert.deepEqual(index.containing({ lat: 52.9, lon: 13.9 }), [2]);
    assert.deepEqual(index.containing({ lat: 0, lon: 0 }), []);

    index.add(2, parseArea('CIRCLE (0 0, 10)'));
    assert.equal(index.size, 3);
    assert.deepEqual(index.containing({ lat: 52.9, lon: 13.9 }), []);
    assert.deepEqual(index.containing({ lat: 0, lon: 0 }), [2]);

    assert.equal(index.remove(1), true);
    assert.equal(index.remove(1), false);
    assert.equal(index.size, 2);
    assert.deepEqual(index.containing({ lat: 52.52, lon: 13.405 }), [3]);
  });

  it('finds areas across the antimeridian from either side', () => {
    const index = new GeofenceIndex();
    index.add(7, parseArea('POLYGON ((10 179, 10 -179, 12 -179, 12 179, 10 179))'));
    index.add(8, parseArea('CIRCLE (-30 -179.99, 5000)'));
    index.add(9, parseArea('LINESTRING (50 179.9, 50 -179.9)'));
    assert.deepEqual(index.containing({ lat: 11, lon: 179.5 }), [7]);
    assert.deepEqual(index.containing({ lat: 11, lon: -179.5 }), [7]);
    assert.deepEqual(index.containing({ lat: 11, lon: 180 }), [7]);
    assert.deepEqual(index.containing({ lat: -30, lon: 179.99 }), [8]);
    assert.deepEqual(index.containing({ lat: 50, lon: -180 }), [9]);
    assert.deepEqual(index.containing({ lat: 11, lon: 0 }), []);
    index.remove(7);
    assert.deepEqual(index.containing({ lat: 11, lon: 179.5 }), []);
  });

  it('wraps query longitudes outside [-180, 180]', () => {
    const index = new GeofenceIndex();
    index.add(1, parseArea('CIRCLE (0 -170, 1000)'));
    assert.deepEqual(index.containing({ lat: 0, lon: 190 }), [1]);
  });

  it('rejects an invalid polylineDistance and keeps the previous geofence', () => {
    const index = new GeofenceIndex();
    const line = parseArea('LINESTRING (0 0, 0 1)');
    index.add(1, line);
    assert.throws(() => index.add(1, line, -5), AreaError);
    assert.deepEqual(index.containing({ lat: 0, lon: 0.5 }), [1]);
  });

  it('agrees with brute force after random adds and removes', () => {
    const operation = fc.oneof(
      { weight: 3, arbitrary: fc.record({ add: fc.nat({ max: 40 }), geofence: hotSpot.chain(geofenceNear) }) },
      { weight: 1, arbitrary: fc.record({ remove: fc.nat({ max: 40 }) }) },
    );
    const points = fc.array(hotSpot.chain(queryPointNear), { minLength: 1, maxLength: 40 });
    fc.assert(
      fc.property(fc.array(operation, { maxLength: 80 }), points, (operations, queries) => {
        const index = new GeofenceIndex();
        const model = new Map<number, Geofence>();
        for (const op of operations) {
          if ('add' in op) {
            index.add(op.add, op.geofence.area, op.geofence.polylineDistance);
            model.set(op.add, op.geofence);
          } else {
            assert.equal(index.remove(op.remove), model.delete(op.remove));
          }
        }
        assert.equal(index.size, model.size);
        for (const point of queries) assert.deepEqual(index.containing(point), bruteForce(model, point));
      }),
      { numRuns: 100 },
    );
  });
});
