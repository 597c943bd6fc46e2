import { AppError } from './errors.ts';
import type { UserAccess, UserDirectory } from '../auth/users/directory.ts';
import type { DeviceAccess, DeviceAccessApi, Permission } from '../devices/access.ts';

const PERMISSION_NAMES: Record<Permission, string> = {
  position: 'positions',
  events: 'events',
  geofences: 'geofences',
  notifications: 'notifications',
  commands: 'commands',
};

/** 404 when the device does not exist, 403 when the user may not use `permission` on it. */
export async function assertDevicePermission(access: DeviceAccess, deviceId: number, permission: Permission): Promise<void> {
  const check = await access.check(deviceId, permission);
  if (check.outcome === 'missing') throw new AppError('NOT_FOUND', 'No such device');
  if (check.outcome === 'forbidden') throw new AppError('FORBIDDEN', `You may not see the ${PERMISSION_NAMES[permission]} of this device`);
}

/** Whether the user may use `permission` on a device, from the access alone (administrators: every device). */
export function mayUse(access: DeviceAccess, deviceId: number, permission: Permission): boolean {
  return access.administrator || access.grant(deviceId)?.permissions[permission] === true;
}

/** The user behind a request that changes something; a read-only account may only look. */
export async function requireWriter(users: UserDirectory, userId: number): Promise<UserAccess> {
  const user = await users.get(userId);
  if (!user) throw new AppError('UNAUTHORIZED', 'The account no longer exists');
  if (user.readonly && !user.administrator) throw new AppError('FORBIDDEN', 'This account is read-only');
  return user;
}

const unavailable = (what: string) => () => Promise.reject(new AppError('UPSTREAM_UNAVAILABLE', `The ${what} is not available to this process`));

/**
 * Without the devices module (or the auth directory) in this process every call that needs it
 * fails with 502 until a remote implementation is passed in; the health endpoint keeps answering.
 */
export const unavailableDevices: DeviceAccessApi = {
  accessFor: unavailable('device access of the devices service'),
  exists: unavailable('devices service'),
  findByUniqueId: unavailable('devices service'),
  getDevices: unavailable('devices service'),
  viewsFor: unavailable('devices service'),
  updateStatus: unavailable('devices service'),
  updateStatuses: unavailable('devices service'),
};

export const unavailableUsers: UserDirectory = {
  get: unavailable('user directory of the auth service'),
  findByEmail: unavailable('user directory of the auth service'),
};
