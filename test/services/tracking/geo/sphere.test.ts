import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { EARTH_RADIUS_METERS, distanceMeters } from '../../../../src/services/tracking/geo/sphere.ts';
import { anyPoint, between, destinationPoint } from './geo-arbitraries.ts';

const METERS_PER_DEGREE = (EARTH_RADIUS_METERS * Math.PI) / 180;

function assertClose(actual: number, expected: number, tolerance: number): void {
  assert.ok(Math.abs(actual - expected) <= tolerance, `${actual} is not within ${tolerance} of ${expected}`);
}

describe('distanceMeters', () => {
  it('uses the mean Earth radius', () => {
    assert.equal(EARTH_RADIUS_METERS, 6_371_008.8);
    assertClose(distanceMeters({ lat: 0, lon: 0 }, { lat: 1, lon: 0 }), METERS_PER_DEGREE, 1e-6);
    assertClose(distanceMeters({ lat: 0, lon: 0 }, { lat: 90, lon: 0 }), (EARTH_RADIUS_METERS * Math.PI) / 2, 1e-6);
    assertClose(distanceMeters({ lat: 0, lon: 0 }, { lat: 0, lon: 180 }), EARTH_RADIUS_METERS * Math.PI, 1e-6);
  });

  it('measures across the antimeridian the short way', () => {
    assertClose(distanceMeters({ lat: 0, lon: 179.5 }, { lat: 0, lon: -179.5 }), METERS_PER_DEGREE, 1e-6);
  });

  it('shrinks longitude degrees by cos(latitude)', () => {
    const near = distanceMeters({ lat: 60, lon: 0 }, { lat: 60, lon: 0.001 });
    assertClose(near, 0.001 * METERS_PER_DEGREE * 0.5, 1e-6);
  });

  it('is zero for equal points, including any longitude at a pole', () => {
    assert.equal(distanceMeters({ lat: 12, lon: 34 }, { lat: 12, lon: 34 }), 0);
    assertClose(distanceMeters({ lat: 90, lon: 0 }, { lat: 90, lon: 120 }), 0, 1e-6);
  });

  it('is symmetric and inverts the destination formula', () => {
    fc.assert(
      fc.property(
        anyPoint,
        anyPoint,
        between(0, 360),
        between(0, 1e7),
        (a, b, bearing, distance) => {
          assertClose(distanceMeters(a, b), distanceMeters(b, a), 1e-6);
          assertClose(distanceMeters(a, destinationPoint(a, bearing, distance)), distance, 1e-5);
        },
      ),
    );
  });
});
