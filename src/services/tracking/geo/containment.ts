import { AreaError, DEFAULT_POLYLINE_DISTANCE } from './area.ts';
import type { Area, Bounds, LatLon } from './area.ts';
import {
  EARTH_RADIUS_METERS,
  RADIANS_PER_DEGREE,
  cross,
  distanceMeters,
  dot,
  scale,
  squaredChord,
  toUnitVector,
  vectorLength,
} from './sphere.ts';
import type { Vector3 } from './sphere.ts';

/**
 * Margin added to every bounding box, in degrees (about 1 cm). It absorbs rounding so that a
 * point the exact test accepts is never outside the box, which the index relies on.
 */
const BOUNDS_MARGIN_DEGREES = 1e-7;

/**
 * Past this value of sin(radius) / cos(lat) the longitude half-width asin() becomes too
 * sensitive to rounding, and the box is widened to every longitude instead.
 */
const MAX_LON_SPREAD_RATIO = 0.99;

/** Segments whose endpoints are this close (sine of the angle) to equal or antipodal have no usable great circle. */
const DEGENERATE_SEGMENT_SINE = 1e-12;

/** A ring that winds around a pole is closed through this latitude, beyond the pole, so the pole itself is inside. */
const POLAR_CLOSURE_LATITUDE = 180;

/** An area with its per-shape precomputation done once, for repeated containment tests. */
export interface PreparedArea {
  contains(point: LatLon): boolean;
  bounds(): Bounds;
}

/**
 * Turns an unwrapped longitude interval (which may extend past ±180) into a Bounds longitude
 * range; the result has minLon > maxLon when it crosses the antimeridian.
 */
function wrapLonRange(lowLon: number, highLon: number): { minLon: number; maxLon: number } {
  if (highLon - lowLon >= 360) return { minLon: -180, maxLon: 180 };
  const shift = 360 * Math.floor((lowLon + 180) / 360);
  const minLon = lowLon - shift;
  const maxLon = highLon - shift;
  return { minLon, maxLon: maxLon > 180 ? maxLon - 360 : maxLon };
}

/**
 * Box around everything within `radiusRadians` of a box (all in degrees except the radius).
 * A point within the radius of a point at latitude φ differs in longitude by at most
 * asin(sin(radius) / cos φ), which grows towards the poles, so the widest latitude is used.
 */
function expandedBounds(
  minLat: number,
  maxLat: number,
  lowLon: number,
  highLon: number,
  radiusRadians: number,
): Bounds {
  const radiusDegrees = radiusRadians / RADIANS_PER_DEGREE + BOUNDS_MARGIN_DEGREES;
  const south = minLat - radiusDegrees;
  const north = maxLat + radiusDegrees;
  if (south <= -90 || north >= 90) {
    return { minLat: Math.max(-90, south), maxLat: Math.min(90, north), minLon: -180, maxLon: 180 };
  }
  const widestLat = Math.max(-south, north) * RADIANS_PER_DEGREE;
  const spreadRatio = Math.sin(radiusRadians) / Math.cos(widestLat);
  if (spreadRatio >= MAX_LON_SPREAD_RATIO) return { minLat: south, maxLat: north, minLon: -180, maxLon: 180 };
  const lonSpread = Math.asin(spreadRatio) / RADIANS_PER_DEGREE + BOUNDS_MARGIN_DEGREES;
  return { minLat: south, maxLat: north, ...wrapLonRange(lowLon - lonSpread, highLon + lonSpread) };
}

/** Difference between consecutive longitudes taken the short way round, in (-180, 180] except exactly -180. */
function lonStep(from: number, to: number): number {
  const step = to - from;
  if (step > 180) return step - 360;
  if (step < -180) return step + 360;
  return step;
}

class PreparedCircle implements PreparedArea {
  readonly center: LatLon;
  readonly radius: number;

  constructor(center: LatLon, radius: number) {
    this.center = center;
    this.radius = radius;
  }

  contains(point: LatLon): boolean {
    return distanceMeters(this.center, point) <= this.radius;
  }

  bounds(): Bounds {
    const { lat, lon } = this.center;
    return expandedBounds(lat, lat, lon, lon, this.radius / EARTH_RADIUS_METERS);
  }
}

/**
 * Polygon with straight edges in (lat, lon) space. Longitudes are unwrapped relative to the
 * first vertex (each step taken the short way round), so a ring crossing the antimeridian
 * becomes one continuous ring that may extend past ±180; a point is then tested at every
 * copy lon + 360k that falls in the ring's longitude span.
 */
class PreparedPolygon implements PreparedArea {
  readonly lats: Float64Array;
  readonly lons: Float64Array;
  readonly minLat: number;
  readonly maxLat: number;
  readonly minLon: number;
  readonly maxLon: number;
  readonly surroundsPole: boolean;

  constructor(points: readonly LatLon[]) {
    const lats: number[] = [];
    const lons: number[] = [];
    let lon = 0;
    let latSum = 0;
    points.forEach((point, index) => {
      lon = index === 0 ? point.lon : lon + lonStep((points[index - 1] as LatLon).lon, point.lon);
      lats.push(point.lat);
      lons.push(lon);
      latSum += point.lat;
    });
    const firstLon = lons[0] as number;
    const lastIndex = lons.length - 1;
    const windings = Math.round(((lons[lastIndex] as number) - firstLon) / 360);
    // The closing point repeats the first one; pin it to an exact multiple of 360 away so rounding leaves no gap.
    lons[lastIndex] = firstLon + 360 * windings;
    this.surroundsPole = windings !== 0;
    if (this.surroundsPole) {
      // A ring around the globe encloses the pole on the side of its average latitude.
      const closureLat = latSum >= 0 ? POLAR_CLOSURE_LATITUDE : -POLAR_CLOSURE_LATITUDE;
      lats.push(closureLat, closureLat, lats[0] as number);
      lons.push(lons[lastIndex] as number, firstLon, firstLon);
    }
    this.lats = Float64Array.from(lats);
    this.lons = Float64Array.from(lons);
    this.minLat = Math.min(...lats);
    this.maxLat = Math.max(...lats);
    this.minLon = Math.min(...lons);
    this.maxLon = Math.max(...lons);
  }

  contains(point: LatLon): boolean {
    if (!(point.lat >= this.minLat && point.lat <= this.maxLat)) return false;
    const firstCopy = Math.ceil((this.minLon - point.lon) / 360);
    const lastCopy = Math.floor((this.maxLon - point.lon) / 360);
    for (let copy = firstCopy; copy <= lastCopy; copy++) {
      if (this.rayCrossingsOdd(point.lat, point.lon + 360 * copy)) return true;
    }
    return false;
  }

  /** Even-odd rule with a ray towards increasing longitude; each edge counts for lat in [low end, high end). */
  rayCrossingsOdd(lat: number, lon: number): boolean {
    const { lats, lons } = this;
    let inside = false;
    for (let i = 1; i < lats.length; i++) {
      const lat1 = lats[i - 1] as number;
      const lat2 = lats[i] as number;
      if (lat1 > lat !== lat2 > lat) {
        const lon1 = lons[i - 1] as number;
        const edgeLon = lon1 + ((lat - lat1) * ((lons[i] as number) - lon1)) / (lat2 - lat1);
        if (lon < edgeLon) inside = !inside;
      }
    }
    return inside;
  }

  bounds(): Bounds {
    if (this.surroundsPole) {
      return {
        minLat: Math.max(-90, this.minLat - BOUNDS_MARGIN_DEGREES),
        maxLat: Math.min(90, this.maxLat + BOUNDS_MARGIN_DEGREES),
        minLon: -180,
        maxLon: 180,
      };
    }
    return expandedBounds(this.minLat, this.maxLat, this.minLon, this.maxLon, 0);
  }
}

/** One great-circle segment of a linestring, with what the distance test needs precomputed. */
type Segment = {
  start: Vector3;
  end: Vector3;
  /** Unit normal of the segment's great circle, or undefined for degenerate (equal or antipodal) endpoints. */
  normal: Vector3 | undefined;
  /**
   * p·startEdge >= 0 and p·endEdge >= 0 exactly when p lies in the lune between the
   * meridians (taking `normal` as the pole) of start and end.
   */
  startEdge: Vector3;
  endEdge: Vector3;
};

/**
 * Linestring buffered by `distance` metres, measured exactly on the sphere: within the lune
 * spanned by a segment the nearest point is the foot on its great circle (cross-track
 * distance), elsewhere it is an endpoint. Segments are the shorter great-circle arc, which
 * also makes antimeridian crossings need no special case.
 */
class PreparedLineString implements PreparedArea {
  readonly points: readonly LatLon[];
  readonly segments: Segment[] = [];
  readonly radiusRadians: number;
  readonly maxSineCrossTrack: number;
  readonly maxSquaredChord: number;

  constructor(points: readonly LatLon[], distance: number) {
    this.points = points;
    this.radiusRadians = distance / EARTH_RADIUS_METERS;
    // Beyond these angles every point qualifies; Infinity keeps the comparisons monotonic.
    this.maxSineCrossTrack = this.radiusRadians >= Math.PI / 2 ? Infinity : Math.sin(this.radiusRadians);
    this.maxSquaredChord = this.radiusRadians >= Math.PI ? Infinity : (2 * Math.sin(this.radiusRadians / 2)) ** 2;
    for (let i = 1; i < points.length; i++) {
      const start = toUnitVector(points[i - 1] as LatLon);
      const end = toUnitVector(points[i] as LatLon);
      const normalDirection = cross(start, end);
      const sine = vectorLength(normalDirection);
      const normal = sine < DEGENERATE_SEGMENT_SINE ? undefined : scale(normalDirection, 1 / sine);
      this.segments.push({
        start,
        end,
        normal,
        startEdge: normal === undefined ? start : cross(normal, start),
        endEdge: normal === undefined ? end : cross(end, normal),
      });
    }
  }

  contains(point: LatLon): boolean {
    const p = toUnitVector(point);
    for (const segment of this.segments) {
      if (segment.normal !== undefined && dot(p, segment.startEdge) >= 0 && dot(p, segment.endEdge) >= 0) {
        if (Math.abs(dot(p, segment.normal)) <= this.maxSineCrossTrack) return true;
      } else if (
        squaredChord(p, segment.start) <= this.maxSquaredChord ||
        squaredChord(p, segment.end) <= this.maxSquaredChord
      ) {
        return true;
      }
    }
    return false;
  }

  bounds(): Bounds {
    let minLat = Infinity;
    let maxLat = -Infinity;
    let lon = 0;
    let lowLon = Infinity;
    let highLon = -Infinity;
    this.points.forEach((point, index) => {
      lon = index === 0 ? point.lon : lon + lonStep((this.points[index - 1] as LatLon).lon, point.lon);
      lowLon = Math.min(lowLon, lon);
      highLon = Math.max(highLon, lon);
      minLat = Math.min(minLat, point.lat);
      maxLat = Math.max(maxLat, point.lat);
    });
    // A great-circle arc bulges poleward of its endpoints when it passes its circle's highest point.
    for (const { normal, startEdge, endEdge } of this.segments) {
      if (normal === undefined) continue;
      const toNorth = { x: -normal.z * normal.x, y: -normal.z * normal.y, z: 1 - normal.z * normal.z };
      const horizontal = vectorLength(toNorth);
      if (horizontal === 0) continue;
      const apexLat = Math.asin(Math.min(1, horizontal)) / RADIANS_PER_DEGREE;
      const northSide = dot(toNorth, startEdge) >= 0 && dot(toNorth, endEdge) >= 0;
      const southSide = dot(toNorth, startEdge) <= 0 && dot(toNorth, endEdge) <= 0;
      if (northSide) maxLat = Math.max(maxLat, apexLat);
      if (southSide) minLat = Math.min(minLat, -apexLat);
    }
    return expandedBounds(minLat, maxLat, lowLon, highLon, this.radiusRadians);
  }
}

/**
 * Prepares an area for repeated containment tests. `polylineDistance` (metres, finite, >= 0)
 * is the buffer width of a LINESTRING and is ignored for other kinds.
 */
export function prepareArea(area: Area, polylineDistance: number = DEFAULT_POLYLINE_DISTANCE): PreparedArea {
  switch (area.kind) {
    case 'circle':
      return new PreparedCircle(area.center, area.radius);
    case 'polygon':
      return new PreparedPolygon(area.points);
    case 'linestring':
      if (!(Number.isFinite(polylineDistance) && polylineDistance >= 0)) {
        throw new AreaError(`polylineDistance must be a finite number >= 0, got ${String(polylineDistance)}`);
      }
      return new PreparedLineString(area.points, polylineDistance);
  }
}

/**
 * Whether the area contains the point: a circle by haversine distance <= radius, a polygon by
 * even-odd ray casting (antimeridian-safe), a linestring by distance to its nearest segment
 * <= polylineDistance metres.
 */
export function areaContains(area: Area, point: LatLon, polylineDistance: number = DEFAULT_POLYLINE_DISTANCE): boolean {
  return prepareArea(area, polylineDistance).contains(point);
}

/**
 * A box containing every point `areaContains` accepts, with a small safety margin. A box that
 * crosses the antimeridian has minLon > maxLon; one that reaches a pole spans all longitudes.
 */
export function areaBounds(area: Area, polylineDistance: number = DEFAULT_POLYLINE_DISTANCE): Bounds {
  return prepareArea(area, polylineDistance).bounds();
}
