/** Geofence areas between WKT (lat-lon order, DESIGN §5.4) and GeoJSON (lon-lat) for the map. */
import type { Feature, FeatureCollection } from 'geojson';

export type LngLat = [number, number];

export type Shape =
  | { kind: 'circle'; center: LngLat; radius: number }
  | { kind: 'polygon'; points: LngLat[] }
  | { kind: 'line'; points: LngLat[] };

const EARTH_RADIUS_M = 6_371_000;

function number(value: number): string {
  return String(Math.round(value * 1e6) / 1e6);
}

function pair([lon, lat]: LngLat): string {
  return `${number(lat)} ${number(lon)}`;
}

/** The WKT of a drawn shape. A polygon is closed here (its first point repeated last). */
export function toWkt(shape: Shape): string {
  switch (shape.kind) {
    case 'circle':
      return `CIRCLE (${pair(shape.center)}, ${Math.max(1, Math.round(shape.radius))})`;
    case 'polygon': {
      const ring = [...shape.points, shape.points[0] as LngLat];
      return `POLYGON ((${ring.map(pair).join(', ')}))`;
    }
    case 'line':
      return `LINESTRING (${shape.points.map(pair).join(', ')})`;
  }
}

function pairs(text: string): LngLat[] {
  return text.split(',').map((item) => {
    const [lat, lon] = item.trim().split(/\s+/).map(Number);
    return [lon as number, lat as number];
  });
}

/** The shape of a stored area, or undefined when it is not one of the three kinds. */
export function fromWkt(wkt: string): Shape | undefined {
  const circle = /^\s*CIRCLE\s*\(\s*([-\d.]+)\s+([-\d.]+)\s*,\s*([\d.]+)\s*\)\s*$/i.exec(wkt);
  if (circle) return { kind: 'circle', center: [Number(circle[2]), Number(circle[1])], radius: Number(circle[3]) };
  const polygon = /^\s*POLYGON\s*\(\s*\((.*)\)\s*\)\s*$/i.exec(wkt);
  if (polygon) return { kind: 'polygon', points: pairs(polygon[1] as string).slice(0, -1) };
  const line = /^\s*LINESTRING\s*\((.*)\)\s*$/i.exec(wkt);
  if (line) return { kind: 'line', points: pairs(line[1] as string) };
  return undefined;
}

/** Metres between two points (haversine). */
export function distance([lon1, lat1]: LngLat, [lon2, lat2]: LngLat): number {
  const rad = Math.PI / 180;
  const dLat = (lat2 - lat1) * rad;
  const dLon = (lon2 - lon1) * rad;
  const a = Math.sin(dLat / 2) ** 2 + Math.cos(lat1 * rad) * Math.cos(lat2 * rad) * Math.sin(dLon / 2) ** 2;
  return 2 * EARTH_RADIUS_M * Math.asin(Math.sqrt(a));
}

/** A circle as a 64-sided ring, for drawing. */
function circleRing([lon, lat]: LngLat, radius: number): LngLat[] {
  const ring: LngLat[] = [];
  const angular = radius / EARTH_RADIUS_M;
  const rad = Math.PI / 180;
  for (let i = 0; i <= 64; i++) {
    const bearing = (i / 64) * 2 * Math.PI;
    const lat2 = Math.asin(Math.sin(lat * rad) * Math.cos(angular) + Math.cos(lat * rad) * Math.sin(angular) * Math.cos(bearing));
    const lon2 = lon * rad + Math.atan2(Math.sin(bearing) * Math.sin(angular) * Math.cos(lat * rad), Math.cos(angular) - Math.sin(lat * rad) * Math.sin(lat2));
    ring.push([lon2 / rad, lat2 / rad]);
  }
  return ring;
}

/** Halfway along an edge, where a new corner is inserted (the shapes are small: plain averages suffice). */
export function midpoint([lon1, lat1]: LngLat, [lon2, lat2]: LngLat): LngLat {
  return [(lon1 + lon2) / 2, (lat1 + lat2) / 2];
}

/** South-west and north-east corners around a shape, to fit the map to it. */
export function shapeBounds(shape: Shape): [LngLat, LngLat] {
  const points = shape.kind === 'circle' ? circleRing(shape.center, shape.radius) : shape.points;
  const lons = points.map(([lon]) => lon);
  const lats = points.map(([, lat]) => lat);
  return [[Math.min(...lons), Math.min(...lats)], [Math.max(...lons), Math.max(...lats)]];
}

export function shapeFeature(shape: Shape, properties: Record<string, unknown> = {}): Feature {
  switch (shape.kind) {
    case 'circle':
      return { type: 'Feature', properties, geometry: { type: 'Polygon', coordinates: [circleRing(shape.center, shape.radius)] } };
    case 'polygon':
      return shape.points.length >= 3
        ? { type: 'Feature', properties, geometry: { type: 'Polygon', coordinates: [[...shape.points, shape.points[0] as LngLat]] } }
        : { type: 'Feature', properties, geometry: { type: 'LineString', coordinates: shape.points } };
    case 'line':
      return { type: 'Feature', properties, geometry: { type: 'LineString', coordinates: shape.points } };
  }
}

export function featureCollection(features: Feature[]): FeatureCollection {
  return { type: 'FeatureCollection', features };
}
