import type { EventBus } from '../../platform/bus.ts';
import type { DeviceAccessChanged } from './events.ts';
import type { GrantRow, VisibleDeviceRow } from './repository.ts';
import { PerUserCache } from './user-cache.ts';

/** A user's owned and shared devices by id, ascending. */
export type VisibleDevices = Map<number, VisibleDeviceRow>;

/** Device rows (with attributes) held in the lists at most; a grant row is small, so more of those. */
const MAX_LISTED_DEVICES = 100_000;
const MAX_GRANTS = 500_000;

/**
 * The module's two per-user caches and the events that drop their entries. Two, because the
 * tracking status of a device (changed by every position) shows in the lists but not in the grants
 * that tracking requests check.
 */
export class DeviceCaches {
  /** Each user's visible devices as the database answered (GET /api/devices/ and /api/devices/{id}). */
  readonly lists = new PerUserCache<VisibleDevices>((devices) => [...devices.keys()], MAX_LISTED_DEVICES);
  /** Each user's grants (accessFor). */
  readonly grants = new PerUserCache<GrantRow[]>((rows) => rows.map((row) => row.device_id), MAX_GRANTS);

  /** Handlers also run for events from other processes when Redis connects them. */
  constructor(bus: EventBus) {
    bus.on('devices.access.changed', (change) => {
      this.lists.forget(change);
      this.grants.forget(change);
    });
    bus.on('devices.device.deleted', ({ deviceId }) => {
      this.lists.forget({ userIds: [], deviceIds: [deviceId] });
      this.grants.forget({ userIds: [], deviceIds: [deviceId] });
    });
    bus.on('devices.device.updated', ({ deviceIds }) => this.lists.forget({ userIds: [], deviceIds }));
  }
}

/** Call after the write has committed: a load that read the rows before then must not be kept. */
export function announceAccessChange(bus: EventBus, change: Partial<DeviceAccessChanged>): Promise<void> {
  const event: DeviceAccessChanged = { userIds: change.userIds ?? [], deviceIds: change.deviceIds ?? [] };
  return bus.publish('devices.access.changed', event);
}
