import { DEFAULT_POLYLINE_DISTANCE } from './area.ts';
import type { Area, LatLon } from './area.ts';
import { prepareArea } from './containment.ts';
import type { PreparedArea } from './containment.ts';
import { RTree } from './rtree.ts';
import type { Box } from './rtree.ts';

type IndexedGeofence = { prepared: PreparedArea; boxes: Box[] };

/** Brings a longitude outside [-180, 180] into range, so a point given as 190 finds the boxes of -170. */
function normalizeLon(lon: number): number {
  return lon >= -180 && lon <= 180 ? lon : ((((lon + 180) % 360) + 360) % 360) - 180;
}

/**
 * Finds the geofences containing a point. Each area's bounding box goes into an R-tree (a box
 * crossing the antimeridian as two boxes, one each side); a query takes the boxes containing
 * the point and confirms each candidate with the exact containment test.
 */
export class GeofenceIndex {
  readonly #geofences = new Map<number, IndexedGeofence>();
  readonly #tree = new RTree<number>();

  get size(): number {
    return this.#geofences.size;
  }

  /**
   * Adds a geofence, replacing any with the same id. `polylineDistance` is the LINESTRING
   * buffer width in metres. Throws AreaError for an invalid polylineDistance.
   */
  add(id: number, area: Area, polylineDistance: number = DEFAULT_POLYLINE_DISTANCE): void {
    const prepared = prepareArea(area, polylineDistance);
    const bounds = prepared.bounds();
    const boxes: Box[] =
      bounds.minLon <= bounds.maxLon
        ? [bounds]
        : [
            { ...bounds, maxLon: 180 },
            { ...bounds, minLon: -180 },
          ];
    this.remove(id);
    for (const box of boxes) this.#tree.insert(box, id);
    this.#geofences.set(id, { prepared, boxes });
  }

  /** Removes a geofence; says whether it was present. */
  remove(id: number): boolean {
    const geofence = this.#geofences.get(id);
    if (geofence === undefined) return false;
    for (const box of geofence.boxes) this.#tree.remove(box, id);
    this.#geofences.delete(id);
    return true;
  }

  /** Ids of the geofences containing the point, ascending. */
  containing(point: LatLon): number[] {
    const candidates = this.#tree.search(point.lat, normalizeLon(point.lon));
    const ids: number[] = [];
    for (const id of candidates) {
      if (this.#geofences.get(id)?.prepared.contains(point) === true) ids.push(id);
    }
    return ids.sort((a, b) => a - b);
  }
}
