import type { LatLon } from './area.ts';

/** Mean Earth radius (IUGG), the sphere all distances are measured on. */
export const EARTH_RADIUS_METERS = 6_371_008.8;

export const RADIANS_PER_DEGREE = Math.PI / 180;

export type Vector3 = { x: number; y: number; z: number };

/** Great-circle distance in metres (haversine formula). */
export function distanceMeters(a: LatLon, b: LatLon): number {
  const lat1 = a.lat * RADIANS_PER_DEGREE;
  const lat2 = b.lat * RADIANS_PER_DEGREE;
  const sinHalfLat = Math.sin((lat2 - lat1) / 2);
  const sinHalfLon = Math.sin(((b.lon - a.lon) * RADIANS_PER_DEGREE) / 2);
  const h = sinHalfLat * sinHalfLat + Math.cos(lat1) * Math.cos(lat2) * sinHalfLon * sinHalfLon;
  return 2 * EARTH_RADIUS_METERS * Math.asin(Math.sqrt(Math.min(1, h)));
}

/** Point on the unit sphere; z points to the north pole, x to (0, 0). */
export function toUnitVector(point: LatLon): Vector3 {
  const lat = point.lat * RADIANS_PER_DEGREE;
  const lon = point.lon * RADIANS_PER_DEGREE;
  const cosLat = Math.cos(lat);
  return { x: cosLat * Math.cos(lon), y: cosLat * Math.sin(lon), z: Math.sin(lat) };
}

export function cross(a: Vector3, b: Vector3): Vector3 {
  return { x: a.y * b.z - a.z * b.y, y: a.z * b.x - a.x * b.z, z: a.x * b.y - a.y * b.x };
}

export function dot(a: Vector3, b: Vector3): number {
  return a.x * b.x + a.y * b.y + a.z * b.z;
}

export function scale(v: Vector3, factor: number): Vector3 {
  return { x: v.x * factor, y: v.y * factor, z: v.z * factor };
}

export function vectorLength(v: Vector3): number {
  return Math.sqrt(dot(v, v));
}

export function squaredChord(a: Vector3, b: Vector3): number {
  const dx = a.x - b.x;
  const dy = a.y - b.y;
  const dz = a.z - b.z;
  return dx * dx + dy * dy + dz * dz;
}
