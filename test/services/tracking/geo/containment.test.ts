import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { AreaError } from '../../../../src/services/tracking/geo/area.ts';
import type { Area, Bounds, LatLon } from '../../../../src/services/tracking/geo/area.ts';
import { parseArea } from '../../../../src/services/tracking/geo/area-text.ts';
import { areaBounds, areaContains } from '../../../../src/services/tracking/geo/containment.ts';
import { EARTH_RADIUS_METERS, distanceMeters } from '../../../../src/services/tracking/geo/sphere.ts';
import {
  between,
  boundsContain,
  closedRing,
  destinationPoint,
  geofenceNear,
  hotSpot,
  initialBearing,
  near,
  queryPointNear,
  wrapLon,
} from './geo-arbitraries.ts';

const bearing = fc.double({ min: 0, max: 360, maxExcluded: true, noNaN: true });
const insideFactor = between(0, 0.99);
const outsideFactor = between(1.01, 3);

function assertBoundsClose(actual: Bounds, expected: Bounds): void {
  for (const key of ['minLat', 'maxLat', 'minLon', 'maxLon'] as const) {
    assert.ok(Math.abs(actual[key] - expected[key]) < 1e-9, `${key}: ${actual[key]} is not ${expected[key]}`);
  }
}

function polygon(points: LatLon[]): Area {
  return { kind: 'polygon', points: closedRing(points) };
}

describe('circle', () => {
  const berlin = parseArea('CIRCLE (52.52 13.405, 1000)');

  it('contains points up to the radius', () => {
    assert.equal(areaContains(berlin, { lat: 52.52, lon: 13.405 }), true);
    assert.equal(areaContains(berlin, destinationPoint({ lat: 52.52, lon: 13.405 }, 0, 999)), true);
    assert.equal(areaContains(berlin, destinationPoint({ lat: 52.52, lon: 13.405 }, 90, 1001)), false);
    assert.equal(areaContains(berlin, { lat: 0, lon: 0 }), false);
  });

  it('works across the antimeridian and over a pole', () => {
    const dateLine = parseArea('CIRCLE (0 179.999, 500)');
    assert.equal(areaContains(dateLine, { lat: 0, lon: -179.998 }), true);
    assert.equal(areaContains(dateLine, { lat: 0, lon: -179.99 }), false);
    const pole = parseArea('CIRCLE (89.99 0, 5000)');
    assert.equal(areaContains(pole, { lat: 89.99, lon: 180 }), true);
    assert.equal(areaContains(pole, { lat: 89.9, lon: 180 }), false);
  });

  it('contains points at < 0.99 r and excludes points at > 1.01 r', () => {
    fc.assert(
      fc.property(
        fc.record({ lat: between(-90, 90), lon: between(-180, 180) }),
        between(1, 1_000_000),
        bearing,
        insideFactor,
        outsideFactor,
        (center, radius, heading, inside, outside) => {
          const circle: Area = { kind: 'circle', center, radius };
          assert.equal(areaContains(circle, destinationPoint(center, heading, inside * radius)), true);
          assert.equal(areaContains(circle, destinationPoint(center, heading, outside * radius)), false);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('polygon', () => {
  it('contains interior points of a square and not exterior ones', () => {
    const square = parseArea('POLYGON ((0 0, 0 1, 1 1, 1 0, 0 0))');
    assert.equal(areaContains(square, { lat: 0.5, lon: 0.5 }), true);
    assert.equal(areaContains(square, { lat: 1.5, lon: 0.5 }), false);
    assert.equal(areaContains(square, { lat: 0.5, lon: -0.5 }), false);
  });

  it('handles a concave ring', () => {
    // A U open to the north: the notch is lat 1..3, lon 1..2.
    const letterU = parseArea('POLYGON ((0 0, 0 3, 3 3, 3 2, 1 2, 1 1, 3 1, 3 0, 0 0))');
    for (const point of [{ lat: 0.5, lon: 1.5 }, { lat: 2.5, lon: 0.5 }, { lat: 2.5, lon: 2.5 }]) {
      assert.equal(areaContains(letterU, point), true, JSON.stringify(point));
    }
    for (const point of [{ lat: 2.5, lon: 1.5 }, { lat: 1.5, lon: 1.5 }, { lat: 3.5, lon: 1.5 }]) {
      assert.equal(areaContains(letterU, point), false, JSON.stringify(point));
    }
  });

  it('handles a rectangle from lon 179 to -179', () => {
    const dateLine = parseArea('POLYGON ((10 179, 10 -179, 12 -179, 12 179, 10 179))');
    for (const lon of [179.5, 180, -180, -179.5]) {
      assert.equal(areaContains(dateLine, { lat: 11, lon }), true, `lon ${lon}`);
    }
    for (const lon of [178.5, -178.5, 0]) assert.equal(areaContains(dateLine, { lat: 11, lon }), false, `lon ${lon}`);
    assertBoundsClose(areaBounds(dateLine), {
      minLat: 10 - 1e-7,
      maxLat: 12 + 1e-7,
      minLon: 179 - 1e-7,
      maxLon: -179 + 1e-7,
    });
  });

  it('encloses the pole a ring around the globe winds around', () => {
    const arctic = parseArea('POLYGON ((80 0, 80 90, 80 180, 80 -90, 80 0))');
    assert.equal(areaContains(arctic, { lat: 85, lon: 33 }), true);
    assert.equal(areaContains(arctic, { lat: 85, lon: -150 }), true);
    assert.equal(areaContains(arctic, { lat: 90, lon: 0 }), true);
    assert.equal(areaContains(arctic, { lat: 75, lon: 33 }), false);
    assertBoundsClose(areaBounds(arctic), { minLat: 80 - 1e-7, maxLat: 90, minLon: -180, maxLon: 180 });
    const antarctic = parseArea('POLYGON ((-70 10, -70 130, -70 -110, -70 10))');
    assert.equal(areaContains(antarctic, { lat: -80, lon: 170 }), true);
    assert.equal(areaContains(antarctic, { lat: -60, lon: 170 }), false);
  });

  it('decides boundary points the same way every time', () => {
    const square = parseArea('POLYGON ((0 0, 0 1, 1 1, 1 0, 0 0))');
    for (const point of [{ lat: 0, lon: 0.5 }, { lat: 1, lon: 0.5 }, { lat: 0.5, lon: 0 }, { lat: 0, lon: 0 }]) {
      const first = areaContains(square, point);
      for (let i = 0; i < 3; i++) assert.equal(areaContains(square, point), first);
    }
  });

  const rectangleCase = (lat: fc.Arbitrary<number>, lon: fc.Arbitrary<number>, width: fc.Arbitrary<number>) =>
    fc.record({
      south: lat,
      height: between(0.01, 1),
      west: lon,
      width,
      across: between(0.01, 0.99),
      up: between(0.01, 0.99),
      beyond: fc.oneof(between(-1, -0.01), between(1.01, 2)),
      outsideInLat: fc.boolean(),
    });

  function checkRectangle(rectangle: {
    south: number;
    height: number;
    west: number;
    width: number;
    across: number;
    up: number;
    beyond: number;
    outsideInLat: boolean;
  }): void {
    const { south, height, west, width, across, up, beyond, outsideInLat } = rectangle;
    const north = south + height;
    const east = west + width;
    const area = polygon([
      { lat: south, lon: wrapLon(west) },
      { lat: south, lon: wrapLon(east) },
      { lat: north, lon: wrapLon(east) },
      { lat: north, lon: wrapLon(west) },
    ]);
    const inside = { lat: south + up * height, lon: wrapLon(west + across * width) };
    const outside = outsideInLat
      ? { lat: south + beyond * height, lon: inside.lon }
      : { lat: inside.lat, lon: wrapLon(west + beyond * width) };
    assert.equal(areaContains(area, inside), true);
    assert.equal(areaContains(area, outside), false);
  }

  it('classifies points around random rectangles', () => {
    fc.assert(
      fc.property(
        rectangleCase(between(-89, 88), between(-180, 180), between(0.01, 20)),
        checkRectangle,
      ),
      { numRuns: 300 },
    );
  });

  it('classifies points around rectangles spanning the antimeridian', () => {
    fc.assert(
      fc.property(
        rectangleCase(between(-60, 60), between(175, 179.99), between(5.01, 10)),
        (rectangle) => {
          assert.ok(rectangle.west + rectangle.width > 180);
          checkRectangle(rectangle);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('classifies points around rectangles near the poles (lat 85..89)', () => {
    fc.assert(
      fc.property(
        rectangleCase(fc.oneof(between(85, 88), between(-89, -86)), between(-180, 180), between(0.01, 40)),
        checkRectangle,
      ),
      { numRuns: 200 },
    );
  });

  it('classifies points inside (convex combinations) and outside (beyond a corner) random triangles', () => {
    const offset = between(-5, 5);
    const corner = fc.record({ lat: offset, lon: offset });
    const weight = between(0.05, 1);
    fc.assert(
      fc.property(
        fc.record({ lat: between(-75, 75), lon: fc.oneof(between(-180, 180), between(176, 180)) }),
        fc.tuple(corner, corner, corner),
        fc.tuple(weight, weight, weight),
        fc.nat({ max: 2 }),
        between(0.05, 1),
        (base, offsets, weights, cornerIndex, beyond) => {
          const [a, b, c] = offsets;
          fc.pre(Math.abs((b.lat - a.lat) * (c.lon - a.lon) - (c.lat - a.lat) * (b.lon - a.lon)) > 1);
          const corners = offsets.map((o) => ({ lat: base.lat + o.lat, lon: base.lon + o.lon }));
          const area = polygon(corners.map((p) => ({ lat: p.lat, lon: wrapLon(p.lon) })));
          const total = weights[0] + weights[1] + weights[2];
          const mix = (pick: (p: LatLon) => number) =>
            corners.reduce((sum, p, i) => sum + ((weights[i] as number) / total) * pick(p), 0);
          assert.equal(areaContains(area, { lat: mix((p) => p.lat), lon: wrapLon(mix((p) => p.lon)) }), true);
          const centroidLat = corners.reduce((sum, p) => sum + p.lat / 3, 0);
          const centroidLon = corners.reduce((sum, p) => sum + p.lon / 3, 0);
          const tip = corners[cornerIndex] as LatLon;
          const outside = {
            lat: tip.lat + beyond * (tip.lat - centroidLat),
            lon: wrapLon(tip.lon + beyond * (tip.lon - centroidLon)),
          };
          assert.equal(areaContains(area, outside), false);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('linestring', () => {
  it('buffers by polylineDistance, 25 m by default', () => {
    const line = parseArea('LINESTRING (0 0, 0 0.01)');
    const twentyMetresNorth = destinationPoint({ lat: 0, lon: 0.005 }, 0, 20);
    assert.equal(areaContains(line, twentyMetresNorth), true);
    assert.equal(areaContains(line, destinationPoint({ lat: 0, lon: 0.005 }, 0, 30)), false);
    assert.equal(areaContains(line, destinationPoint({ lat: 0, lon: 0.005 }, 0, 30), 40), true);
    assert.equal(areaContains(line, twentyMetresNorth, 0), false);
    assert.equal(areaContains(line, { lat: 0, lon: 0.005 }, 0), true);
  });

  it('measures to the nearest endpoint beyond the ends', () => {
    const line = parseArea('LINESTRING (0 0, 0 0.01)');
    assert.equal(areaContains(line, destinationPoint({ lat: 0, lon: 0.01 }, 60, 24)), true);
    assert.equal(areaContains(line, destinationPoint({ lat: 0, lon: 0.01 }, 60, 26)), false);
    assert.equal(areaContains(line, destinationPoint({ lat: 0, lon: 0 }, 250, 26)), false);
  });

  it('follows great circles, which bulge poleward of their endpoints', () => {
    const line = parseArea('LINESTRING (60 0, 60 90)');
    const apexLat = Math.atan(Math.tan(60 * (Math.PI / 180)) / Math.cos(45 * (Math.PI / 180))) * (180 / Math.PI);
    assert.equal(areaContains(line, { lat: apexLat, lon: 45 }, 1), true);
    assert.equal(areaContains(line, { lat: 60, lon: 45 }, 1000), false);
    assert.ok(areaBounds(line, 1).maxLat >= apexLat);
  });

  it('crosses the antimeridian', () => {
    const line = parseArea('LINESTRING (0 179.9, 0 -179.9)');
    assert.equal(areaContains(line, { lat: 0.0001, lon: 180 }), true);
    assert.equal(areaContains(line, { lat: 0.0001, lon: -180 }), true);
    assert.equal(areaContains(line, { lat: 0.001, lon: 180 }), false);
    assert.equal(areaContains(line, { lat: 0, lon: 0 }), false);
  });

  it('treats repeated points as a point', () => {
    const line = parseArea('LINESTRING (10 10, 10 10)');
    assert.equal(areaContains(line, destinationPoint({ lat: 10, lon: 10 }, 123, 24)), true);
    assert.equal(areaContains(line, destinationPoint({ lat: 10, lon: 10 }, 123, 26)), false);
  });

  it('rejects an invalid polylineDistance', () => {
    const line = parseArea('LINESTRING (0 0, 0 1)');
    for (const distance of [-1, Number.NaN, Infinity]) {
      assert.throws(() => areaContains(line, { lat: 0, lon: 0 }, distance), AreaError);
    }
    assert.equal(areaContains(parseArea('CIRCLE (0 0, 10)'), { lat: 0, lon: 0 }, -1), true);
  });

  const segmentCase = (latitude: fc.Arbitrary<number>, lon: fc.Arbitrary<number>, heading: fc.Arbitrary<number>) =>
    fc.record({
      start: fc.record({ lat: latitude, lon }),
      heading,
      length: between(100, 50_000),
      along: between(0.05, 0.95),
      buffer: between(5, 2000),
      side: fc.constantFrom(90, -90),
      inside: insideFactor,
      outside: outsideFactor,
    });

  type SegmentCase = {
    start: LatLon;
    heading: number;
    length: number;
    along: number;
    buffer: number;
    side: number;
    inside: number;
    outside: number;
  };

  function checkSegment({ start, heading, length, along, buffer, side, inside, outside }: SegmentCase): void {
    const end = destinationPoint(start, heading, length);
    const line: Area = { kind: 'linestring', points: [start, end] };
    const foot = destinationPoint(start, heading, along * length);
    const across = initialBearing(foot, end) + side;
    assert.equal(areaContains(line, destinationPoint(foot, across, inside * buffer), buffer), true);
    assert.equal(areaContains(line, destinationPoint(foot, across, outside * buffer), buffer), false);
  }

  it('contains points closer than the buffer to a segment and not farther ones', () => {
    fc.assert(
      fc.property(segmentCase(between(-80, 80), between(-180, 180), bearing), checkSegment),
      { numRuns: 300 },
    );
  });

  it('does the same for segments crossing the antimeridian', () => {
    fc.assert(
      fc.property(
        segmentCase(between(-60, 60), between(179.85, 180), between(60, 120)).map(
          (segment) => ({ ...segment, length: 30_000 + segment.length / 3 }),
        ),
        (segment) => {
          const end = destinationPoint(segment.start, segment.heading, segment.length);
          assert.ok(end.lon < 0, 'the segment crosses the antimeridian');
          checkSegment(segment);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('does the same near the poles', () => {
    fc.assert(
      fc.property(
        segmentCase(fc.oneof(between(85, 89), between(-89, -85)), between(-180, 180), bearing),
        checkSegment,
      ),
      { numRuns: 200 },
    );
  });
});

describe('areaBounds', () => {
  it('expands a circle by its radius, with the cos(lat) factor in longitude', () => {
    const bounds = areaBounds(parseArea('CIRCLE (60 10, 111195.08)'));
    assert.ok(Math.abs(bounds.minLat - 59) < 1e-5 && Math.abs(bounds.maxLat - 61) < 1e-5);
    assert.ok(bounds.maxLon - 10 > 2 && bounds.maxLon - 10 < 2.1, String(bounds.maxLon));
  });

  it('spans all longitudes when a circle reaches a pole', () => {
    const metersPerDegree = (EARTH_RADIUS_METERS * Math.PI) / 180;
    assertBoundsClose(areaBounds(parseArea('CIRCLE (89.5 0, 100000)')), {
      minLat: 89.5 - 100000 / metersPerDegree - 1e-7,
      maxLat: 90,
      minLon: -180,
      maxLon: 180,
    });
  });

  it('contains every point the area contains', () => {
    fc.assert(
      fc.property(
        hotSpot.chain((spot) =>
          fc.tuple(geofenceNear(spot), fc.array(queryPointNear(spot), { minLength: 20, maxLength: 20 })),
        ),
        ([{ area, polylineDistance }, points]) => {
          const bounds = areaBounds(area, polylineDistance);
          for (const point of points) {
            if (areaContains(area, point, polylineDistance)) {
              assert.ok(boundsContain(bounds, point), JSON.stringify({ bounds, point }));
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('contains points just inside the edge of circles and line buffers', () => {
    fc.assert(
      fc.property(
        hotSpot.chain((spot) => near(spot, 1)),
        bearing,
        between(1, 500_000),
        between(0, 1),
        bearing,
        (start, heading, size, along, outward) => {
          const circle: Area = { kind: 'circle', center: start, radius: size };
          const rim = destinationPoint(start, outward, size * 0.999999);
          assert.ok(boundsContain(areaBounds(circle), rim), JSON.stringify({ circle, rim }));

          const end = destinationPoint(start, heading, size * 4);
          const line: Area = { kind: 'linestring', points: [start, end] };
          const foot = destinationPoint(start, heading, along * size * 4);
          const edge = destinationPoint(foot, initialBearing(foot, end) + 90, size * 0.999);
          if (distanceMeters(foot, end) > 1) {
            assert.ok(areaContains(line, edge, size));
            assert.ok(boundsContain(areaBounds(line, size), edge), JSON.stringify({ line, edge }));
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
