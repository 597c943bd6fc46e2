import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../errors.ts';
import type { UserDirectory } from '../../auth/users/directory.ts';
import type { DeviceAccessApi } from '../../devices/access.ts';
import { authorize, mayRead } from '../../devices/access.ts';
import { requireUser } from '../../auth/users/directory.ts';
import type { NewPosition } from '../api.ts';
import { invalidQuery, timeRange } from '../query.ts';
import type { TrackingStore } from '../store.ts';
import type { HistoryCut } from '../history-cut.ts';
import type { HistoryCursor, LatestEntry, PositionRow, TimeRange } from './repository.ts';

/** DESIGN §5.4: a history holding more positions answers 400 RANGE_TOO_LARGE. */
export const HISTORY_LIMIT = 100_000;
/** Rows per keyset page of a streamed history: bounded memory, and the database is free between pages. */
export const HISTORY_PAGE_SIZE = 5_000;

export interface PositionQuery {
  deviceId?: number;
  ids?: number[];
  /** ISO 8601 as received. */
  from?: string;
  to?: string;
}

/** A history to stream page by page, its first page already read. */
export interface History {
  deviceId: number;
  range: TimeRange;
  firstPage: PositionRow[];
}

/** Positions just stored: their rows in input order, and the latest positions they moved (with the server time of each). */
export interface StoredPositions {
  rows: PositionRow[];
  moved: (LatestEntry & { server_time: number })[];
}

/** A list answered at once, or a history to stream. */
export type PositionAnswer = { kind: 'list'; rows: PositionRow[] } | ({ kind: 'history' } & History);

export class PositionService {
  private readonly store: TrackingStore;
  private readonly devices: DeviceAccessApi;
  private readonly users: UserDirectory;
  private readonly log: FastifyBaseLogger;
  private readonly historyCut: HistoryCut;

  constructor(store: TrackingStore, devices: DeviceAccessApi, users: UserDirectory, historyCut: HistoryCut, log: FastifyBaseLogger) {
    this.store = store;
    this.devices = devices;
    this.users = users;
    this.historyCut = historyCut;
    this.log = log;
  }

  /** See TrackingApi.storePositions. */
  async storeBatch(batch: readonly NewPosition[]): Promise<number[]> {
    const { rows, moved } = await this.storeRows(batch);
    await this.publishLatest(moved.map((entry) => ({ deviceId: entry.device_id, positionId: entry.position_id, lastUpdate: entry.server_time })));
    return rows.map((row) => row.id);
  }

  /**
   * Stores a batch in one transaction, as storeBatch, without telling the devices module (ingestion
   * tells it together with the devices' status). Answers the stored rows in input order and the
   * latest positions that moved.
   */
  async storeRows(batch: readonly NewPosition[]): Promise<StoredPositions> {
    if (batch.length === 0) return { rows: [], moved: [] };
    const rows = batch.map(toRow);
    const { ids, moved } = await this.store.transaction(async (repositories) => {
      const ids = await repositories.positions.insertMany(rows);
      const newest = new Map<number, LatestEntry>();
      rows.forEach((row, index) => {
        const known = newest.get(row.device_id);
        // Equal fix times: the later in the batch (the larger id) is the newer.
        if (!known || row.fix_time >= known.fix_time) newest.set(row.device_id, { device_id: row.device_id, position_id: ids[index] as number, fix_time: row.fix_time });
      });
      return { ids, moved: await repositories.positions.advanceLatest([...newest.values()]) };
    });
    const stored = rows.map((row, index): PositionRow => ({ ...row, id: ids[index] as number }));
    const byId = new Map(stored.map((row) => [row.id, row]));
    return { rows: stored, moved: moved.map((entry) => ({ ...entry, server_time: (byId.get(entry.position_id) as PositionRow).server_time })) };
  }

  /**
   * The devices module shows each device's latest position. The positions are already durable, so
   * a failure here is logged rather than thrown (a retry by the caller would store them twice).
   */
  private async publishLatest(updates: { deviceId: number; positionId: number | null; lastUpdate?: number | undefined }[]): Promise<void> {
    if (updates.length === 0) return;
    try {
      await this.devices.updateStatuses(updates.map(({ deviceId, positionId, lastUpdate }) => (lastUpdate === undefined ? { deviceId, positionId } : { deviceId, positionId, lastUpdate })));
    } catch (error) {
      this.log.warn({ err: error }, 'tracking: the latest positions of devices could not be passed to the devices module');
    }
  }

  /**
   * The three query forms of spec §4.3: nothing → the latest position of every device the caller may
   * see positions of; deviceId → that device's latest; deviceId + from + to → its history. `id`
   * (repeatable) picks positions by id, silently leaving out those the caller may not see. A history and
   * positions by id stop at what the owner's plan serves (docs/plans.md); a latest position is shown whatever its age.
   */
  async query(userId: number, scope: object, query: PositionQuery): Promise<PositionAnswer> {
    const { deviceId, ids } = query;
    const hasRange = query.from !== undefined || query.to !== undefined;
    if (hasRange && deviceId === undefined) throw invalidQuery('deviceId', 'is required with from and to (a history is of one device)');
    if (hasRange && ids !== undefined) throw invalidQuery('id', 'cannot be combined with from and to');
    const range = hasRange ? timeRange(query.from, query.to) : undefined;

    const access = await this.devices.accessFor(userId, scope);
    if (deviceId !== undefined) await authorize(access, access, deviceId, 'position');

    if (ids !== undefined) {
      const rows = (await this.store.positions.findByIds(ids)).filter((row) => (deviceId === undefined || row.device_id === deviceId) && mayRead(access, row.device_id, 'position'));
      const servedFrom = await this.historyCut.servedFrom(access, [...new Set(rows.map((row) => row.device_id))]);
      return { kind: 'list', rows: rows.filter((row) => row.fix_time >= (servedFrom.get(row.device_id) ?? Number.NEGATIVE_INFINITY)) };
    }
    if (range && deviceId !== undefined) {
      const servedFrom = await this.historyCut.servedFromOf(access, deviceId);
      if (servedFrom !== null && servedFrom > range.from) range.from = servedFrom;
      // A history that fits in one page needs no count.
      const firstPage = await this.store.positions.historyPage(deviceId, range, undefined, HISTORY_PAGE_SIZE);
      if (firstPage.length === HISTORY_PAGE_SIZE && (await this.store.positions.countInRange(deviceId, range, HISTORY_LIMIT + 1)) > HISTORY_LIMIT) {
        throw new AppError('RANGE_TOO_LARGE', `The range holds more than ${HISTORY_LIMIT} positions; narrow it`);
      }
      return { kind: 'history', deviceId, range, firstPage };
    }
    const deviceIds = deviceId !== undefined ? [deviceId] : access.deviceIdsWith('position');
    return { kind: 'list', rows: await this.store.positions.latestOf(deviceIds) };
  }

  /** The history in (fixTime, id) order, one keyset page at a time. */
  async *historyPages(history: History): AsyncGenerator<PositionRow[]> {
    let page = history.firstPage;
    for (;;) {
      if (page.length > 0) yield page;
      const last = page.at(-1);
      if (!last || page.length < HISTORY_PAGE_SIZE) return;
      const cursor: HistoryCursor = { fixTime: last.fix_time, id: last.id };
      page = await this.store.positions.historyPage(history.deviceId, history.range, cursor, HISTORY_PAGE_SIZE);
    }
  }

  /** The name a GPX track of the device carries. */
  async trackName(deviceId: number): Promise<string> {
    const [device] = await this.devices.getDevices([deviceId]);
    return device?.name ?? `Device ${deviceId}`;
  }

  /**
   * Deletes the device's positions in the range (spec §4.3: owner only; administrators too).
   * Events they raised stay, without a positionId; a deleted latest position gives way to the newest left.
   */
  async delete(userId: number, scope: object, deviceId: number, from: string, to: string): Promise<void> {
    const range = timeRange(from, to);
    const [access, user] = await Promise.all([this.devices.accessFor(userId, scope), requireUser(this.users, userId)]);
    await authorize(access, user, deviceId, 'manage');

    const newest = await this.store.transaction(async (repositories) => {
      await repositories.events.detachPositionsInRange(deviceId, range);
      await repositories.positions.deleteInRange(deviceId, range);
      const latest = await repositories.positions.latestEntryOf(deviceId);
      if (!latest || latest.fix_time < range.from || latest.fix_time > range.to) return undefined;
      return { row: await repositories.positions.resetLatest(deviceId) };
    });
    if (newest) await this.publishLatest([{ deviceId, positionId: newest.row?.id ?? null }]);
  }

  /** The device is gone: its positions and events go with it (idempotent). */
  async removeDevice(deviceId: number): Promise<void> {
    await this.store.transaction(async (repositories) => {
      await repositories.events.deleteDevice(deviceId);
      await repositories.positions.deleteDevice(deviceId);
    });
  }
}

const MAX_ADDRESS_LENGTH = 512;
const MAX_PROTOCOL_LENGTH = 32;

function finite(value: number, what: string, deviceId: number): number {
  if (!Number.isFinite(value)) throw new TypeError(`position of device ${deviceId}: ${what} must be a finite number, got ${value}`);
  return value;
}

/** Largest epoch milliseconds a Date can hold. */
const MAX_TIME = 8.64e15;

/** Times are whole milliseconds (an int8 column) that a Date can represent. */
function epochMs(value: number, what: string, deviceId: number): number {
  if (!(Math.abs(value) <= MAX_TIME)) throw new TypeError(`position of device ${deviceId}: ${what} must be epoch milliseconds, got ${value}`);
  return Math.round(value);
}

/** Decoders hand over numbers they computed; anything not finite is a bug there and would corrupt the JSON written by hand. */
function toRow(position: NewPosition): Omit<PositionRow, 'id'> {
  const { deviceId } = position;
  if (!Number.isSafeInteger(deviceId) || deviceId <= 0) throw new TypeError(`position: deviceId must be a positive integer, got ${deviceId}`);
  if (position.protocol !== null && position.protocol.length > MAX_PROTOCOL_LENGTH) {
    throw new TypeError(`position of device ${deviceId}: protocol is longer than ${MAX_PROTOCOL_LENGTH} characters`);
  }
  return {
    device_id: deviceId,
    protocol: position.protocol,
    server_time: epochMs(position.serverTime, 'serverTime', deviceId),
    device_time: position.deviceTime === null ? null : epochMs(position.deviceTime, 'deviceTime', deviceId),
    fix_time: epochMs(position.fixTime, 'fixTime', deviceId),
    valid: position.valid ? 1 : 0,
    latitude: finite(position.latitude, 'latitude', deviceId),
    longitude: finite(position.longitude, 'longitude', deviceId),
    altitude: finite(position.altitude ?? 0, 'altitude', deviceId),
    speed: finite(position.speed ?? 0, 'speed', deviceId),
    course: finite(position.course ?? 0, 'course', deviceId),
    accuracy: finite(position.accuracy ?? 0, 'accuracy', deviceId),
    // An over-long address (reverse geocoding) is cut rather than failing the whole batch.
    address: position.address === undefined || position.address === null ? null : position.address.slice(0, MAX_ADDRESS_LENGTH),
    attributes: JSON.stringify(position.attributes ?? {}),
  };
}
