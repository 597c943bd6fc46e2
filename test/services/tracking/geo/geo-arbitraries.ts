import fc from 'fast-check';
import type { Area, Bounds, LatLon } from '../../../../src/services/tracking/geo/area.ts';
import { EARTH_RADIUS_METERS, RADIANS_PER_DEGREE } from '../../../../src/services/tracking/geo/sphere.ts';

/** Longitude brought into [-180, 180]. */
export function wrapLon(lon: number): number {
  return lon >= -180 && lon <= 180 ? lon : ((((lon + 180) % 360) + 360) % 360) - 180;
}

/**
 * Point reached from `start` after `distance` metres along the great circle with initial
 * `bearing` (degrees from north). Computed with vectors, not the asin formula, so it stays
 * accurate to well under a millimetre next to the poles.
 */
export function destinationPoint(start: LatLon, bearing: number, distance: number): LatLon {
  const lat = start.lat * RADIANS_PER_DEGREE;
  const lon = start.lon * RADIANS_PER_DEGREE;
  const heading = bearing * RADIANS_PER_DEGREE;
  const angle = distance / EARTH_RADIUS_METERS;
  const position = [Math.cos(lat) * Math.cos(lon), Math.cos(lat) * Math.sin(lon), Math.sin(lat)];
  const north = [-Math.sin(lat) * Math.cos(lon), -Math.sin(lat) * Math.sin(lon), Math.cos(lat)];
  const east = [-Math.sin(lon), Math.cos(lon), 0];
  const [x, y, z] = position.map(
    (p, i) =>
      p * Math.cos(angle) +
      ((north[i] as number) * Math.cos(heading) + (east[i] as number) * Math.sin(heading)) * Math.sin(angle),
  ) as [number, number, number];
  return {
    lat: Math.atan2(z, Math.hypot(x, y)) / RADIANS_PER_DEGREE,
    lon: wrapLon(Math.atan2(y, x) / RADIANS_PER_DEGREE),
  };
}

/** Initial great-circle bearing from one point towards another, in degrees from north. */
export function initialBearing(from: LatLon, to: LatLon): number {
  const lat1 = from.lat * RADIANS_PER_DEGREE;
  const lat2 = to.lat * RADIANS_PER_DEGREE;
  const deltaLon = (to.lon - from.lon) * RADIANS_PER_DEGREE;
  const y = Math.sin(deltaLon) * Math.cos(lat2);
  const x = Math.cos(lat1) * Math.sin(lat2) - Math.sin(lat1) * Math.cos(lat2) * Math.cos(deltaLon);
  return Math.atan2(y, x) / RADIANS_PER_DEGREE;
}

export function boundsContain(bounds: Bounds, point: LatLon): boolean {
  if (point.lat < bounds.minLat || point.lat > bounds.maxLat) return false;
  return bounds.minLon <= bounds.maxLon
    ? point.lon >= bounds.minLon && point.lon <= bounds.maxLon
    : point.lon >= bounds.minLon || point.lon <= bounds.maxLon;
}

export function closedRing(points: LatLon[]): LatLon[] {
  return [...points, points[0] as LatLon];
}

/** A double in [min, max], never NaN. */
export function between(min: number, max: number): fc.Arbitrary<number> {
  return fc.double({ min, max, noNaN: true });
}

// parseArea reads -0 as 0, so generated values use 0 to round-trip exactly.
const withoutNegativeZero = (value: number): number => (value === 0 ? 0 : value);

export const latitude = between(-90, 90).map(withoutNegativeZero);
export const longitude = between(-180, 180).map(withoutNegativeZero);
// Plain objects, as parseArea returns, so deep equality holds.
const plain = { noNullPrototype: true } as const;

export const anyPoint = fc.record({ lat: latitude, lon: longitude }, plain);
const positiveRadius = between(Number.MIN_VALUE, Number.MAX_VALUE);

/** Any syntactically valid area, with extreme numbers (subnormals, huge radii, exact bounds). */
export const anyArea: fc.Arbitrary<Area> = fc.oneof(
  fc.record({ kind: fc.constant('circle' as const), center: anyPoint, radius: positiveRadius }, plain),
  fc
    .array(anyPoint, { minLength: 3, maxLength: 8 })
    .map((points): Area => ({ kind: 'polygon', points: closedRing(points) })),
  fc.array(anyPoint, { minLength: 2, maxLength: 8 }).map((points): Area => ({ kind: 'linestring', points })),
);

/** Places where geometry is tricky: the antimeridian, near and at the poles, plus an ordinary spot. */
export const hotSpot = fc.constantFrom<LatLon>(
  { lat: 0, lon: 180 },
  { lat: 10, lon: -179.99 },
  { lat: -60, lon: 179.5 },
  { lat: 86, lon: 30 },
  { lat: 89.5, lon: -120 },
  { lat: -88, lon: 0 },
  { lat: 45, lon: 10 },
);

/** A point up to `spread` degrees away from `center` in latitude and longitude, clamped to the valid range. */
export function near(center: LatLon, spread: number): fc.Arbitrary<LatLon> {
  return fc
    .record({
      lat: between(-spread, spread),
      lon: between(-spread, spread),
    })
    .map((offset) => ({
      lat: Math.max(-90, Math.min(90, center.lat + offset.lat)),
      lon: wrapLon(center.lon + offset.lon),
    }));
}

/** Query points around a hot spot, plus exact edge cases: both sides of the antimeridian and the poles. */
export function queryPointNear(center: LatLon): fc.Arbitrary<LatLon> {
  return fc.oneof(
    { weight: 4, arbitrary: near(center, 3) },
    {
      weight: 1,
      arbitrary: fc.constantFrom<LatLon>(
        { lat: center.lat, lon: 180 },
        { lat: center.lat, lon: -180 },
        { lat: 90, lon: 0 },
        { lat: -90, lon: 45 },
        center,
      ),
    },
  );
}

export type Geofence = { area: Area; polylineDistance: number };

/** A ring at one latitude going once around the globe, which encloses the nearer pole. */
const polarCap: fc.Arbitrary<Area> = fc
  .record({
    lat: fc.oneof(between(60, 89.9), between(-89.9, -60)),
    startLon: longitude,
    corners: fc.integer({ min: 3, max: 8 }),
  })
  .map(({ lat, startLon, corners }) => ({
    kind: 'polygon',
    points: closedRing(
      Array.from({ length: corners }, (_, i) => ({ lat, lon: wrapLon(startLon + (360 * i) / corners) })),
    ),
  }));

/** Geofences of every kind around a hot spot, including ones crossing the antimeridian or reaching a pole. */
export function geofenceNear(center: LatLon): fc.Arbitrary<Geofence> {
  const noBuffer = (area: Area): Geofence => ({ area, polylineDistance: 25 });
  return fc.oneof(
    fc
      .record({ center: near(center, 1), radius: between(1, 400_000) })
      .map(({ center: circleCenter, radius }) => noBuffer({ kind: 'circle', center: circleCenter, radius })),
    fc
      .array(near(center, 2), { minLength: 3, maxLength: 6 })
      .map((points) => noBuffer({ kind: 'polygon', points: closedRing(points) })),
    polarCap.map(noBuffer),
    fc
      .record({
        points: fc.array(near(center, 1), { minLength: 2, maxLength: 5 }),
        polylineDistance: between(0, 60_000),
      })
      .map(({ points, polylineDistance }): Geofence => ({ area: { kind: 'linestring', points }, polylineDistance })),
  );
}
