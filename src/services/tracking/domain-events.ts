/** Domain events the tracking module publishes. */
declare module '../../platform/bus.ts' {
  interface DomainEvents {
    /**
     * A user's geofences changed in process `origin`: other processes drop their index of that
     * user's geofences and load it again on next use.
     */
    'tracking.geofences.changed': GeofencesChanged;
  }
}

export interface GeofencesChanged {
  ownerId: number;
  origin: string;
}
