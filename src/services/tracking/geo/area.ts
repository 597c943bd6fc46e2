/** A position in degrees: latitude in [-90, 90], longitude in [-180, 180]. */
export type LatLon = { lat: number; lon: number };

/**
 * A geofence area. Polygon points form one closed ring (first point equals last);
 * a linestring's buffer width is not part of the area, it comes from the geofence's
 * `polylineDistance` attribute.
 */
export type Area =
  | { kind: 'circle'; center: LatLon; radius: number }
  | { kind: 'polygon'; points: LatLon[] }
  | { kind: 'linestring'; points: LatLon[] };

/**
 * A latitude/longitude box in degrees. When `minLon > maxLon` the box crosses the
 * antimeridian and covers `lon >= minLon || lon <= maxLon`.
 */
export type Bounds = { minLat: number; maxLat: number; minLon: number; maxLon: number };

/** Buffer width in metres around a LINESTRING when the geofence sets no `polylineDistance`. */
export const DEFAULT_POLYLINE_DISTANCE = 25;

/** Raised for any invalid area text or area parameter; the message says what and where. */
export class AreaError extends Error {
  override name = 'AreaError';
}
