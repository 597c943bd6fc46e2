import { AppError } from '../errors.ts';
import type { DeviceAccessApi } from '../../devices/access.ts';
import { assertDevicePermission } from '../access.ts';
import type { NewEvent } from '../api.ts';
import { invalidQuery, parseTime } from '../query.ts';
import type { TrackingStore } from '../store.ts';
import type { EventRow } from './repository.ts';
import { EVENT_TYPES } from './types.ts';
import type { EventType } from './types.ts';

/** Spec §8: at most 1000 events per answer. */
export const EVENT_LIMIT = 1000;
/** DESIGN §5.4: without from, the 24 hours before `to` (itself now by default). */
export const DEFAULT_EVENT_WINDOW_MS = 24 * 60 * 60 * 1000;

const KNOWN_TYPES = new Set<string>(EVENT_TYPES);

export interface EventQuery {
  deviceId?: number;
  from?: string;
  to?: string;
  /** Any of these types; none given: every type. */
  types?: EventType[];
}

/** The Event of spec §2.5. */
export interface EventView {
  id: number;
  type: string;
  eventTime: string | null;
  deviceId: number;
  positionId: number | null;
  geofenceId: number | null;
  maintenanceId: number | null;
  attributes: Record<string, unknown>;
}

export function toEventView(row: EventRow): EventView {
  return {
    id: row.id,
    type: row.type,
    eventTime: new Date(row.event_time).toISOString(),
    deviceId: row.device_id,
    positionId: row.position_id,
    geofenceId: row.geofence_id,
    maintenanceId: row.maintenance_id,
    attributes: JSON.parse(row.attributes) as Record<string, unknown>,
  };
}

export class EventService {
  private readonly store: TrackingStore;
  private readonly devices: DeviceAccessApi;
  private readonly now: () => number;

  constructor(store: TrackingStore, devices: DeviceAccessApi, now: () => number = Date.now) {
    this.store = store;
    this.devices = devices;
    this.now = now;
  }

  /** See TrackingApi.storeEvents. */
  async storeBatch(batch: readonly NewEvent[]): Promise<number[]> {
    if (batch.length === 0) return [];
    const rows = batch.map(toEventRow);
    return this.store.transaction((repositories) => repositories.events.insertMany(rows));
  }

  /**
   * The first EVENT_LIMIT events, ascending by eventTime, of one device (deviceId) or of every
   * device the caller may see events of, in [from, to] (inclusive).
   */
  async list(userId: number, scope: object, query: EventQuery): Promise<EventView[]> {
    const to = query.to === undefined ? this.now() : parseTime(query.to, 'to');
    const from = query.from === undefined ? to - DEFAULT_EVENT_WINDOW_MS : parseTime(query.from, 'from');
    if (from > to) throw query.to === undefined ? invalidQuery('from', 'must not be after to (now when left out)') : invalidQuery('to', 'must not be before from');
    const access = await this.devices.accessFor(userId, scope);
    let deviceIds: readonly number[];
    if (query.deviceId === undefined) {
      deviceIds = access.deviceIdsWith('events');
    } else {
      await assertDevicePermission(access, query.deviceId, 'events');
      deviceIds = [query.deviceId];
    }
    if (deviceIds.length === 0) return [];
    const rows = await this.store.events.list({ deviceIds, range: { from, to }, types: query.types ?? [], limit: EVENT_LIMIT });
    return rows.map(toEventView);
  }

  /** 404 when no such event, 403 when the caller may not see the events of its device. */
  async get(userId: number, scope: object, eventId: number): Promise<EventView> {
    const row = await this.store.events.findById(eventId);
    if (!row) throw new AppError('NOT_FOUND', 'No such event');
    const access = await this.devices.accessFor(userId, scope);
    const check = await access.check(row.device_id, 'events');
    if (check.outcome === 'missing') throw new AppError('NOT_FOUND', 'No such event');
    if (check.outcome === 'forbidden') throw new AppError('FORBIDDEN', 'You may not see the events of this device');
    return toEventView(row);
  }
}

/** The row of a new event; throws on an unknown type or a time that is not epoch milliseconds. */
export function toEventRow(event: NewEvent): Omit<EventRow, 'id'> {
  if (!KNOWN_TYPES.has(event.type)) throw new TypeError(`event: unknown type ${String(event.type)}`);
  // Whole milliseconds (an int8 column) that a Date can represent.
  if (!(Math.abs(event.eventTime) <= 8.64e15)) throw new TypeError(`event of device ${event.deviceId}: eventTime must be epoch milliseconds`);
  return {
    type: event.type,
    event_time: Math.round(event.eventTime),
    device_id: event.deviceId,
    position_id: event.positionId ?? null,
    geofence_id: event.geofenceId ?? null,
    maintenance_id: event.maintenanceId ?? null,
    attributes: JSON.stringify(event.attributes ?? {}),
  };
}
