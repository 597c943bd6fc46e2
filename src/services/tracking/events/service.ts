import { AppError } from '../errors.ts';
import type { FactRecorder } from '../../../platform/outbox/outbox.ts';
import type { DeviceAccessApi } from '../../devices/access.ts';
import { authorize } from '../../devices/access.ts';
import { refusal } from '../../../platform/access-policy.ts';
import type { NewEvent } from '../api.ts';
import type { StoredEventFact } from '../domain-events.ts';
import { positionJson } from '../positions/formats.ts';
import { invalidQuery, parseTime } from '../query.ts';
import type { TrackingStore } from '../store.ts';
import type { HistoryCut } from '../history-cut.ts';
import type { EventRow } from './repository.ts';
import { EVENT_TYPES } from './types.ts';
import type { TrackingEvent } from '../../../client/tracking-types.ts';
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

/** The Event of spec §2.5; `type` is as stored. */
export interface EventView extends Omit<TrackingEvent, 'type'> {
  type: string;
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
  private readonly historyCut: HistoryCut;
  private readonly facts: FactRecorder;
  private readonly now: () => number;

  constructor(store: TrackingStore, devices: DeviceAccessApi, historyCut: HistoryCut, facts: FactRecorder, now: () => number = Date.now) {
    this.store = store;
    this.devices = devices;
    this.historyCut = historyCut;
    this.facts = facts;
    this.now = now;
  }

  /**
   * See TrackingApi.storeEvents. The fact 'tracking.event.created' commits with the events: one
   * outbox row per batch, whatever the number of rules, so notifications never lose an event and
   * add one insert to the write. Positions and geofences are read before the transaction.
   */
  async storeBatch(batch: readonly NewEvent[]): Promise<number[]> {
    if (batch.length === 0) return [];
    const rows = batch.map(toEventRow);
    const { positions, geofences } = await this.factContext(rows);
    return this.store.transaction(async (repositories, trx) => {
      const ids = await repositories.events.insertMany(rows);
      const events = rows.map((row, index): StoredEventFact => {
        const fact: StoredEventFact = toEventView({ id: ids[index] as number, ...row });
        const position = row.position_id === null ? undefined : positions.get(row.position_id);
        const geofence = row.geofence_id === null ? undefined : geofences.get(row.geofence_id);
        if (position) fact.position = position;
        if (geofence) fact.geofence = geofence;
        return fact;
      });
      await this.facts.record(trx, 'tracking.event.created', { events });
      return ids;
    });
  }

  private async factContext(rows: readonly Omit<EventRow, 'id'>[]) {
    const positionIds = [...new Set(rows.flatMap((row) => (row.position_id === null ? [] : [row.position_id])))];
    const geofenceIds = [...new Set(rows.flatMap((row) => (row.geofence_id === null ? [] : [row.geofence_id])))];
    const positions = new Map<number, Record<string, unknown>>();
    const geofences = new Map<number, { id: number; name: string }>();
    if (positionIds.length > 0) {
      for (const row of await this.store.positions.findByIds(positionIds)) positions.set(row.id, JSON.parse(positionJson(row)) as Record<string, unknown>);
    }
    for (const id of geofenceIds) {
      const geofence = await this.store.geofences.findById(id);
      if (geofence) geofences.set(id, { id, name: geofence.name });
    }
    return { positions, geofences };
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
      await authorize(access, access, query.deviceId, 'events');
      deviceIds = [query.deviceId];
    }
    if (deviceIds.length === 0) return [];
    // Devices whose owners' plans serve different windows are read apart, then merged.
    const byStart = new Map<number, number[]>();
    for (const [deviceId, servedFrom] of await this.historyCut.servedFrom(access, deviceIds)) {
      const start = Math.max(from, servedFrom ?? from);
      if (start > to) continue;
      let group = byStart.get(start);
      if (!group) byStart.set(start, (group = []));
      group.push(deviceId);
    }
    const found: EventRow[] = [];
    for (const [start, group] of byStart) {
      found.push(...(await this.store.events.list({ deviceIds: group, range: { from: start, to }, types: query.types ?? [], limit: EVENT_LIMIT })));
    }
    return found.sort((a, b) => a.event_time - b.event_time || a.id - b.id).slice(0, EVENT_LIMIT).map(toEventView);
  }

  /** 404 when no such event, 403 when the caller may not see the events of its device. */
  async get(userId: number, scope: object, eventId: number): Promise<EventView> {
    const row = await this.store.events.findById(eventId);
    if (!row) throw new AppError('NOT_FOUND', 'No such event');
    const access = await this.devices.accessFor(userId, scope);
    const standing = await access.standing(row.device_id);
    // An event whose device is gone is as gone as the device.
    if (!standing.exists) throw new AppError('NOT_FOUND', 'No such event');
    const refused = refusal(access, standing, 'events');
    if (refused) throw refused;
    // Beyond what the owner's plan serves, the event is as gone as the retention job will make it.
    const servedFrom = await this.historyCut.servedFromOf(access, row.device_id);
    if (servedFrom !== null && row.event_time < servedFrom) throw new AppError('NOT_FOUND', 'No such event');
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
