/** Domain events the tracking module publishes. */
declare module '../../platform/bus.ts' {
  interface DomainEvents {
    /**
     * A user's geofences changed in process `origin`: other processes drop their index of that
     * user's geofences and load it again on next use.
     */
    'tracking.geofences.changed': GeofencesChanged;
    /** Positions just made durable by ingestion, for live updates. Each is the spec's Position JSON text. */
    'tracking.positions.stored': { positions: LivePosition[] };
    /** Events just stored by the event engine, for live updates (spec Event shape). */
    'tracking.events.created': { events: LiveEvent[] };
  }
}

/** A stored position on its way to live clients: the device it belongs to and its Position JSON text. */
export interface LivePosition {
  deviceId: number;
  json: string;
}

/** A stored event on its way to live clients. */
export interface LiveEvent {
  deviceId: number;
  /** The spec's Event as JSON text. */
  json: string;
}

export interface GeofencesChanged {
  ownerId: number;
  origin: string;
}
