import { AreaError, DEFAULT_POLYLINE_DISTANCE, GeofenceIndex, parseArea } from '../geo/index.ts';
import type { LatLon } from '../geo/index.ts';
import type { GeofenceRow } from './repository.ts';

/** The LINESTRING buffer width of a geofence: its `polylineDistance` attribute, in metres. */
function polylineDistanceOf(attributes: Record<string, unknown>): number {
  const value = attributes.polylineDistance;
  return typeof value === 'number' ? value : DEFAULT_POLYLINE_DISTANCE;
}

function addTo(index: GeofenceIndex, row: GeofenceRow): void {
  try {
    index.add(row.id, parseArea(row.area), polylineDistanceOf(JSON.parse(row.attributes) as Record<string, unknown>));
  } catch (error) {
    // Stored areas were validated on write; one that a later, stricter parser refuses matches nothing.
    if (!(error instanceof AreaError)) throw error;
    index.remove(row.id);
  }
}

/**
 * One GeofenceIndex per owner, loaded on first use and then kept current by applying each write.
 * Changes are chained behind a load in progress, so a write racing the load is never lost
 * (applying one the load already saw is harmless: add replaces, remove is idempotent).
 */
export class GeofenceIndexes {
  readonly #byOwner = new Map<number, Promise<GeofenceIndex>>();
  readonly #load: (ownerId: number) => Promise<GeofenceRow[]>;

  constructor(load: (ownerId: number) => Promise<GeofenceRow[]>) {
    this.#load = load;
  }

  async containing(ownerId: number, point: LatLon): Promise<number[]> {
    let pending = this.#byOwner.get(ownerId);
    if (!pending) {
      pending = this.#build(ownerId);
      this.#remember(ownerId, pending);
    }
    let index = await pending;
    // Changes queued behind the load while it ran are applied before answering.
    for (let latest = this.#byOwner.get(ownerId); latest && latest !== pending; latest = this.#byOwner.get(ownerId)) {
      pending = latest;
      index = await latest;
    }
    return index.containing(point);
  }

  /** A geofence was created or changed. */
  put(row: GeofenceRow): void {
    this.#change(row.owner_id, (index) => addTo(index, row));
  }

  /** A geofence was deleted. */
  remove(ownerId: number, geofenceId: number): void {
    this.#change(ownerId, (index) => index.remove(geofenceId));
  }

  /** Drops an owner's index (changed elsewhere, or the owner is gone); the next use loads it again. */
  forget(ownerId: number): void {
    this.#byOwner.delete(ownerId);
  }

  async #build(ownerId: number): Promise<GeofenceIndex> {
    const index = new GeofenceIndex();
    for (const row of await this.#load(ownerId)) addTo(index, row);
    return index;
  }

  #change(ownerId: number, apply: (index: GeofenceIndex) => void): void {
    const current = this.#byOwner.get(ownerId);
    if (!current) return;
    this.#remember(
      ownerId,
      current.then((index) => {
        apply(index);
        return index;
      }),
    );
  }

  /** A failed load is not kept: the next use tries again. */
  #remember(ownerId: number, index: Promise<GeofenceIndex>): void {
    this.#byOwner.set(ownerId, index);
    index.catch(() => {
      if (this.#byOwner.get(ownerId) === index) this.#byOwner.delete(ownerId);
    });
  }
}
