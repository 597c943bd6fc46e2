/**
 * The devices module's interface for "which devices may user U see, with which permissions", and
 * the few device facts the tracking module needs. Tracking calls accessFor on every request, so it
 * answers from one indexed query, cached per request (pass the request as `scope`).
 */
import { devicesHolding, holds, refusal } from '../../platform/access-policy.ts';
import type { Caller, DeviceAction, Standing } from '../../platform/access-policy.ts';
import { unavailable } from '../../platform/http/errors.ts';
import type { Device, DevicePermissions, DeviceStatus } from '../../client/tracking-types.ts';

export type { DevicePermissions, DeviceStatus };

/** Longest uniqueId a device may have (the column is varchar(128)): ingestion refuses longer ids unread. */
export const MAX_UNIQUE_ID_LENGTH = 128;

export type Permission = keyof DevicePermissions;

export const PERMISSIONS: readonly Permission[] = ['position', 'events', 'geofences', 'notifications', 'commands'];

export const ALL_PERMISSIONS: Readonly<DevicePermissions> = Object.freeze({
  position: true,
  events: true,
  geofences: true,
  notifications: true,
  commands: true,
});

export const NO_PERMISSIONS: Readonly<DevicePermissions> = Object.freeze({
  position: false,
  events: false,
  geofences: false,
  notifications: false,
  commands: false,
});

export interface DeviceGrant {
  deviceId: number;
  ownerId: number;
  isOwner: boolean;
  /** Every permission for the owner; the share's flags for anyone else. */
  permissions: DevicePermissions;
  /** Who shared the device with the user; absent for the owner. */
  sharedBy?: number;
}

/** What a user's access is made of: plain data, the same in the devices process and in a tracking process elsewhere. */
export interface DeviceAccessData {
  userId: number;
  /** Whether the user is an administrator, who may reach every device with every permission. */
  administrator: boolean;
  /** The devices the user owns or was shared (an administrator's own list too; others are reached by check), ascending by device. */
  grants: readonly DeviceGrant[];
}

export interface DeviceAccess extends DeviceAccessData {
  /** The user's own grant on one device, or undefined when the user neither owns it nor was shared it. */
  grant(deviceId: number): DeviceGrant | undefined;
  /** Ids of the granted devices on which the user holds `permission`, ascending. */
  deviceIdsWith(permission: Permission): number[];
  /** How the user stands to the device: from the grants without a query, else one indexed lookup tells a device from none. */
  standing(deviceId: number): Promise<Standing>;
}

class UserDeviceAccess implements DeviceAccess {
  readonly userId: number;
  readonly administrator: boolean;
  readonly grants: readonly DeviceGrant[];
  private readonly byDevice: Map<number, DeviceGrant>;
  private readonly exists: (deviceId: number) => Promise<boolean>;

  constructor(data: DeviceAccessData, exists: (deviceId: number) => Promise<boolean>) {
    this.userId = data.userId;
    this.administrator = data.administrator;
    this.grants = data.grants;
    this.byDevice = new Map(data.grants.map((grant) => [grant.deviceId, grant]));
    this.exists = exists;
  }

  grant(deviceId: number): DeviceGrant | undefined {
    return this.byDevice.get(deviceId);
  }

  deviceIdsWith(permission: Permission): number[] {
    return devicesHolding(this.administrator, this.grants, permission);
  }

  async standing(deviceId: number): Promise<Standing> {
    const holding = this.byDevice.get(deviceId);
    if (holding) return { exists: true, holding };
    return (await this.exists(deviceId)) ? { exists: true, holding: undefined } : { exists: false };
  }
}

/**
 * Throws the access policy's refusal of `action` on the device (docs/errors.md, Access). `caller`
 * is the user's account (UserAccess) for the actions their flags decide; for reading, the access itself.
 */
export async function authorize(access: DeviceAccess, caller: Pick<Caller, 'administrator'> & Partial<Caller>, deviceId: number, action: DeviceAction): Promise<void> {
  const refused = refusal(caller, await access.standing(deviceId), action);
  if (refused) throw refused;
}

/** Whether the user may read what `permission` covers on a device, from the grants alone (administrators: every device). */
export function mayRead(access: DeviceAccess, deviceId: number, permission: Permission): boolean {
  return holds(access.administrator, access.grant(deviceId), permission);
}

/** The access behind `data`; `exists` tells a device the user has no grant on from no device at all. */
export function deviceAccessOf(data: DeviceAccessData, exists: (deviceId: number) => Promise<boolean>): DeviceAccess {
  return new UserDeviceAccess(data, exists);
}

/**
 * `load` behind DeviceAccessApi.accessFor: calls with the same `scope` object and user share one
 * load; a failed load is not remembered, so a retry in the same scope asks again.
 */
export function accessPerScope(load: (userId: number) => Promise<DeviceAccess>): (userId: number, scope?: object) => Promise<DeviceAccess> {
  const scopes = new WeakMap<object, Map<number, Promise<DeviceAccess>>>();
  return (userId, scope) => {
    if (!scope) return load(userId);
    let cached = scopes.get(scope);
    if (!cached) scopes.set(scope, (cached = new Map()));
    const known = cached.get(userId);
    if (known) return known;
    const loading = load(userId);
    cached.set(userId, loading);
    loading.catch(() => cached.delete(userId));
    return loading;
  };
}

/** A device as stored, without anything that depends on who looks at it. Times are epoch milliseconds. */
export interface DeviceRecord extends Omit<Device, 'lastUpdate' | 'expirationTime' | 'claimToken' | 'isOwner' | 'permissions' | 'sharedBy'> {
  lastUpdate: number | null;
  expirationTime: number | null;
  ownerId: number;
}

/** The fields the tracking module may change: status, time of the last message, latest position. */
export interface DeviceStatusUpdate {
  status?: DeviceStatus;
  lastUpdate?: number | null;
  positionId?: number | null;
}

/** One device's part of a batch status update. */
export interface DeviceStatusChange extends DeviceStatusUpdate {
  deviceId: number;
}

/** The Device of spec §2.3 as one user sees it (JSON-safe: times are ISO 8601). */
export type DeviceView = Device;

/** What other modules (tracking) use of the devices module. */
export interface DeviceAccessApi {
  /** The user's access; calls with the same `scope` object (e.g. the HTTP request) share one query. */
  accessFor(userId: number, scope?: object): Promise<DeviceAccess>;
  /** Whether a device with this id exists at all (to tell 404 from 403). */
  exists(deviceId: number): Promise<boolean>;
  /** The device a tracker identifies itself as (ingestion), or undefined when unknown. */
  findByUniqueId(uniqueId: string): Promise<DeviceRecord | undefined>;
  /** Stored devices with these ids (unknown ids are skipped), ascending by id. */
  getDevices(ids: readonly number[]): Promise<DeviceRecord[]>;
  /** The devices among `ids` that the access's user may see, shaped as that user sees them (live updates). */
  viewsFor(access: DeviceAccess, ids: readonly number[]): Promise<DeviceView[]>;
  /** Maintained by the tracking module only; answers false when the device no longer exists. */
  updateStatus(deviceId: number, update: DeviceStatusUpdate): Promise<boolean>;
  /**
   * Maintained by the tracking module only: applies every change in one transaction (at most one
   * change per device; a later one for the same device wins) and answers the ids of the devices
   * that exist, ascending. Publishes 'devices.device.updated' for them.
   */
  updateStatuses(batch: readonly DeviceStatusChange[]): Promise<number[]>;
}

/** The devices module as seen from a process without it, until a remote implementation is passed in. */
export const unavailableDevices: DeviceAccessApi = {
  accessFor: unavailable('device access of the devices service'),
  exists: unavailable('devices service'),
  findByUniqueId: unavailable('devices service'),
  getDevices: unavailable('devices service'),
  viewsFor: unavailable('devices service'),
  updateStatus: unavailable('devices service'),
  updateStatuses: unavailable('devices service'),
};
