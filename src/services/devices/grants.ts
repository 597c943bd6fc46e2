import type { UserDirectory } from '../auth/users/directory.ts';
import { accessPerScope, ALL_PERMISSIONS, deviceAccessOf } from './access.ts';
import type { DeviceAccess, DeviceAccessData, DeviceGrant } from './access.ts';
import type { PerUserCache } from './caches.ts';
import type { DeviceRepository, GrantRow } from './repository.ts';
import { toPermissions } from './views.ts';

function toGrant(row: GrantRow, userId: number, administrator: boolean): DeviceGrant {
  if (row.owner_id === userId) return { deviceId: row.device_id, ownerId: row.owner_id, isOwner: true, permissions: { ...ALL_PERMISSIONS } };
  const flags = {
    position: row.position ?? 0,
    events: row.events ?? 0,
    geofences: row.geofences ?? 0,
    notifications: row.notifications ?? 0,
    commands: row.commands ?? 0,
  };
  return {
    deviceId: row.device_id,
    ownerId: row.owner_id,
    isOwner: false,
    permissions: administrator ? { ...ALL_PERMISSIONS } : toPermissions(flags),
    ...(row.shared_by === null ? {} : { sharedBy: row.shared_by }),
  };
}

/**
 * Answers "which devices may user U see, with which permissions" from one union query over
 * devices(owner_id) and device_shares(user_id), cached per user until a write changes it, plus the
 * user's administrator flag from the (caching) user directory.
 */
export class DeviceAccessResolver {
  private readonly devices: DeviceRepository;
  private readonly users: UserDirectory;
  private readonly grants: PerUserCache<GrantRow[]>;
  private readonly readGrants: (userId: number) => Promise<GrantRow[]>;
  /** The user's access; calls with the same `scope` object share one load. */
  readonly accessFor: (userId: number, scope?: object) => Promise<DeviceAccess>;

  constructor(devices: DeviceRepository, users: UserDirectory, grants: PerUserCache<GrantRow[]>) {
    this.devices = devices;
    this.users = users;
    this.grants = grants;
    this.readGrants = (userId) => devices.grantsOf(userId);
    this.accessFor = accessPerScope(async (userId) => deviceAccessOf(await this.dataOf(userId), (deviceId) => this.devices.exists(deviceId)));
  }

  /** The access as plain data (what a tracking process elsewhere receives). */
  async dataOf(userId: number): Promise<DeviceAccessData & { grants: DeviceGrant[] }> {
    const [user, rows] = await Promise.all([this.users.get(userId), this.grants.get(userId, this.readGrants)]);
    const administrator = user?.administrator ?? false;
    const grants = rows.map((row) => toGrant(row, userId, administrator)).sort((a, b) => a.deviceId - b.deviceId);
    return { userId, administrator, grants };
  }
}
