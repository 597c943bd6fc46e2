import type { EventView } from './events/service.ts';

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
    /** Commands whose status changed (queued, sent, delivered, expired, failed), for live updates and waiting senders. */
    'tracking.commands.changed': { commands: LiveCommand[] };
    /** Asks the instance `instanceId` to send the device's queued commands on the connection it holds. */
    'tracking.commands.route': { instanceId: string; deviceId: number };
    /**
     * Fact: events stored, recorded in the transaction that stores them, for the modules that act on
     * them (notifications). Never published: the 'tracking.events.created' hint above wakes its consumers.
     */
    'tracking.event.created': { events: StoredEventFact[] };
  }
}

/** A command on its way to live clients: its device, status, and the Command as JSON text. */
export interface LiveCommand {
  id: number;
  deviceId: number;
  status: string;
  json: string;
}

/**
 * A stored event as a fact carries it: the spec's Event, with the Position that raised it (when
 * it has one) and the geofence it concerns (when it has one), as they were when it was stored.
 */
export interface StoredEventFact extends EventView {
  position?: Record<string, unknown>;
  geofence?: { id: number; name: string };
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
