import type { UserDirectory } from '../auth/users/directory.ts';
import { ALL_PERMISSIONS } from './access.ts';
import type { AccessCheck, DeviceAccess, DeviceGrant, Permission } from './access.ts';
import type { PerUserCache } from './caches.ts';
import type { DeviceRepository, GrantRow } from './repository.ts';
import { toPermissions } from './views.ts';

const ALLOWED: AccessCheck = { outcome: 'allowed' };
const FORBIDDEN: AccessCheck = { outcome: 'forbidden' };
const MISSING: AccessCheck = { outcome: 'missing' };

class UserDeviceAccess implements DeviceAccess {
  readonly userId: number;
  readonly administrator: boolean;
  readonly grants: readonly DeviceGrant[];
  private readonly byDevice: Map<number, DeviceGrant>;
  private readonly devices: DeviceRepository;

  constructor(userId: number, administrator: boolean, grants: DeviceGrant[], devices: DeviceRepository) {
    this.userId = userId;
    this.administrator = administrator;
    this.grants = grants;
    this.byDevice = new Map(grants.map((grant) => [grant.deviceId, grant]));
    this.devices = devices;
  }

  grant(deviceId: number): DeviceGrant | undefined {
    return this.byDevice.get(deviceId);
  }

  deviceIdsWith(permission: Permission): number[] {
    return this.grants.filter((grant) => grant.permissions[permission]).map((grant) => grant.deviceId);
  }

  async check(deviceId: number, permission?: Permission): Promise<AccessCheck> {
    const grant = this.byDevice.get(deviceId);
    if (grant && (permission === undefined || grant.permissions[permission])) return ALLOWED;
    if (grant && !this.administrator) return FORBIDDEN;
    if (!(await this.devices.exists(deviceId))) return MISSING;
    return this.administrator ? ALLOWED : FORBIDDEN;
  }
}

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
  private readonly scopes = new WeakMap<object, Map<number, Promise<DeviceAccess>>>();

  constructor(devices: DeviceRepository, users: UserDirectory, grants: PerUserCache<GrantRow[]>) {
    this.devices = devices;
    this.users = users;
    this.grants = grants;
    this.readGrants = (userId) => devices.grantsOf(userId);
  }

  accessFor(userId: number, scope?: object): Promise<DeviceAccess> {
    if (!scope) return this.load(userId);
    let cached = this.scopes.get(scope);
    if (!cached) this.scopes.set(scope, (cached = new Map()));
    const known = cached.get(userId);
    if (known) return known;
    const loading = this.load(userId);
    cached.set(userId, loading);
    // A failed load is not remembered, so a retry in the same scope asks again.
    loading.catch(() => cached.delete(userId));
    return loading;
  }

  private async load(userId: number): Promise<DeviceAccess> {
    const [user, rows] = await Promise.all([this.users.get(userId), this.grants.get(userId, this.readGrants)]);
    const administrator = user?.administrator ?? false;
    const grants = rows.map((row) => toGrant(row, userId, administrator)).sort((a, b) => a.deviceId - b.deviceId);
    return new UserDeviceAccess(userId, administrator, grants, this.devices);
  }
}
