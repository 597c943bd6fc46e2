import type { EventBus } from '../../platform/bus.ts';
import { ReadThroughCache } from '../../platform/cache.ts';
import type { DeviceAccessChanged } from './events.ts';
import type { GrantRow, VisibleDeviceRow } from './repository.ts';

/** A user's owned and shared devices by id, ascending. */
export type VisibleDevices = Map<number, VisibleDeviceRow>;

/** What the database answered about each user's devices, by user id and indexed by device id. */
export type PerUserCache<T> = ReadThroughCache<number, T, number>;

/** Device rows (with attributes) held in the lists at most; a grant row is small, so more of those. */
const MAX_LISTED_DEVICES = 100_000;
const MAX_GRANTS = 500_000;

/**
 * How long an entry lives at most. Change events drop entries at once; this only bounds what a
 * lost event leaves behind (Redis pub/sub drops messages while a connection is down).
 */
const MISSED_EVENT_TTL_MS = 60_000;

/**
 * An entry weighs the devices it holds (at least one), so the bound is on devices, and is indexed by
 * them, so a changed device drops exactly the entries of the users who see it.
 */
function perUserCache<T>(deviceIdsOf: (value: T) => number[], maxDevices: number): PerUserCache<T> {
  return new ReadThroughCache<number, T, number>({
    ttlMs: MISSED_EVENT_TTL_MS,
    maxEntries: maxDevices,
    weightOf: (value) => Math.max(deviceIdsOf(value).length, 1),
    indexBy: deviceIdsOf,
  });
}

/**
 * The module's two per-user caches and the events that drop their entries. Two, because the
 * tracking status of a device (changed by every position) shows in the lists but not in the grants
 * that tracking requests check.
 *
 * Why they are exact without versions in the database:
 * - every write names, once it has committed, the users it may change (a new owner, a sharee) and
 *   the devices it changed (see DeviceAccessChanged); the bus brings that to every process;
 * - each entry is indexed by the devices it contains, so a changed device drops exactly the entries
 *   of the users who see it (owner and sharees alike) without asking the database who they are; a
 *   user who does not see the device yet is named by the write that makes them see it;
 * - a load during which such a change arrived is answered but not kept: it may have read the rows
 *   before that write committed.
 */
export class DeviceCaches {
  /** Each user's visible devices as the database answered (GET /api/devices/ and /api/devices/{id}). */
  readonly lists = perUserCache<VisibleDevices>((devices) => [...devices.keys()], MAX_LISTED_DEVICES);
  /** Each user's grants (accessFor). */
  readonly grants = perUserCache<GrantRow[]>((rows) => rows.map((row) => row.device_id), MAX_GRANTS);

  /** Handlers also run for events from other processes when Redis connects them. */
  constructor(bus: EventBus) {
    bus.on('devices.access.changed', (change) => {
      forget(this.lists, change);
      forget(this.grants, change);
    });
    bus.on('devices.device.deleted', ({ deviceId }) => {
      this.lists.invalidateBy(deviceId);
      this.grants.invalidateBy(deviceId);
    });
    bus.on('devices.device.updated', ({ deviceIds }) => forget(this.lists, { userIds: [], deviceIds }));
  }
}

function forget<T>(cache: PerUserCache<T>, change: DeviceAccessChanged): void {
  for (const userId of change.userIds) cache.invalidate(userId);
  for (const deviceId of change.deviceIds) cache.invalidateBy(deviceId);
}

/** Call after the write has committed: a load that read the rows before then must not be kept. */
export function announceAccessChange(bus: EventBus, change: Partial<DeviceAccessChanged>): Promise<void> {
  const event: DeviceAccessChanged = { userIds: change.userIds ?? [], deviceIds: change.deviceIds ?? [] };
  return bus.publish('devices.access.changed', event);
}
