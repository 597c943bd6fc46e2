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
  readonly #limits = new Map<number, Promise<Map<number, number>>>();

  constructor(options: GeofenceLimitsOptions) {
    this.#options = options;
  }

  async hits(ownerId: number, point: LatLon): Promise<GeofenceHit[]> {
    const ids = await this.#options.containing(ownerId, point);
    if (ids.length === 0) return [];
    let limits = await this.#limitsOf(ownerId);
    // A geofence created since the limits were read: read them again once.
    if (ids.some((id) => !limits.has(id))) {
      this.forget(ownerId);
      limits = await this.#limitsOf(ownerId);
    }
    return ids.map((id) => {
      const speedLimit = limits.get(id);
      return speedLimit !== undefined && speedLimit > 0 ? { id, speedLimit } : { id };
    });
  }

  /** The owner's geofences changed (in this process or another), or the owner is gone. */
  forget(ownerId: number): void {
    this.#limits.delete(ownerId);
  }

  #limitsOf(ownerId: number): Promise<Map<number, number>> {
    let limits = this.#limits.get(ownerId);
    if (!limits) {
      limits = this.#options.load(ownerId).then((rows) => new Map(rows.map((row) => [row.id, speedLimitOf(row)])));
      this.#limits.set(ownerId, limits);
      limits.catch(() => {
        if (this.#limits.get(ownerId) === limits) this.#limits.delete(ownerId);
      });
    }
    return limits;
  }
}

/** The geofence's limit in knots, 0 when it sets none. */
function speedLimitOf(row: GeofenceRow): number {
  const attributes = JSON.parse(row.attributes) as Record<string, unknown>;
  return readNumber(attributes['speedLimit']) ?? 0;
}
