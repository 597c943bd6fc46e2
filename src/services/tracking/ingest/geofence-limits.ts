import { ReadThroughCache } from '../../../platform/cache.ts';
import { readNumber } from '../engine/values.ts';
import type { GeofenceHit } from '../engine/index.ts';
import type { GeofenceRow } from '../geofences/repository.ts';
import type { LatLon } from '../geo/index.ts';

export interface GeofenceLimitsOptions {
  /** Ids (ascending) of the owner's geofences containing the point: the tracking module's index. */
  containing(ownerId: number, point: LatLon): Promise<number[]>;
  /** Every geofence of the owner. */
  load(ownerId: number): Promise<GeofenceRow[]>;
}

/**
 * The geofences a position is in, with the speed limit each sets (its `speedLimit` attribute, in
 * knots), as the event engine wants them. Containment comes from the module's geofence index;
 * the limits are kept per owner and dropped whenever that owner's geofences change.
 */
export class GeofenceLimits {
  readonly #options: GeofenceLimitsOptions;
  readonly #limits = new ReadThroughCache<number, Map<number, number>>();
  readonly #read: (ownerId: number) => Promise<Map<number, number>>;

  constructor(options: GeofenceLimitsOptions) {
    this.#options = options;
    this.#read = async (ownerId) => new Map((await options.load(ownerId)).map((row) => [row.id, speedLimitOf(row)]));
  }

  async hits(ownerId: number, point: LatLon): Promise<GeofenceHit[]> {
    const ids = await this.#options.containing(ownerId, point);
    if (ids.length === 0) return [];
    let limits = await this.#limits.get(ownerId, this.#read);
    // A geofence created since the limits were read: read them again once.
    if (ids.some((id) => !limits.has(id))) {
      this.forget(ownerId);
      limits = await this.#limits.get(ownerId, this.#read);
    }
    return ids.map((id) => {
      const speedLimit = limits.get(id);
      return speedLimit !== undefined && speedLimit > 0 ? { id, speedLimit } : { id };
    });
  }

  /** The owner's geofences changed (in this process or another), or the owner is gone. */
  forget(ownerId: number): void {
    this.#limits.invalidate(ownerId);
  }
}

/** The geofence's limit in knots, 0 when it sets none. */
function speedLimitOf(row: GeofenceRow): number {
  const attributes = JSON.parse(row.attributes) as Record<string, unknown>;
  return readNumber(attributes['speedLimit']) ?? 0;
}
