/**
 * The devices module's interface for "which devices may user U see, with which permissions".
 * Tracking calls it on every request, so it answers from one indexed query.
 */
export interface DevicePermissions {
  /** View positions and history. */
  position: boolean;
  /** View device events. */
  events: boolean;
  /** View geofences. */
  geofences: boolean;
  /** Receive notifications. */
  notifications: boolean;
  /** Send commands to the device. */
  commands: boolean;
}

export type Permission = keyof DevicePermissions;

export const ALL_PERMISSIONS: DevicePermissions = {
  position: true,
  events: true,
  geofences: true,
  notifications: true,
  commands: true,
};

export interface DeviceGrant {
  deviceId: number;
  ownerId: number;
  isOwner: boolean;
  permissions: DevicePermissions;
}

export interface DeviceAccess {
  /** Whether the user is an administrator (who sees every device with every permission). */
  administrator: boolean;
  /** Every device the user may see. */
  grants: DeviceGrant[];
  /** The grant on one device, or undefined when the user may not see it. */
  grant(deviceId: number): DeviceGrant | undefined;
  /** Ids of the visible devices on which the user holds `permission`. */
  deviceIdsWith(permission: Permission): number[];
}

export interface DeviceAccessApi {
  accessFor(userId: number): Promise<DeviceAccess>;
  /** Whether a device with this id exists at all (to tell 404 from 403). */
  exists(deviceId: number): Promise<boolean>;
}
