/** Domain events the devices module publishes. */
declare module '../../platform/bus.ts' {
  interface DomainEvents {
    /** A device is gone (deleted by its owner or an administrator, or with its owner's account): its tracking data goes with it. */
    'devices.device.deleted': DeviceDeleted;
    /** The status, lastUpdate or positionId of these devices changed (ingestion), for live updates. */
    'devices.device.updated': DevicesUpdated;
    /** What some users see of devices changed: the device caches of every process drop those users' entries. */
    'devices.access.changed': DeviceAccessChanged;
  }
}

export interface DevicesUpdated {
  /** Ascending. */
  deviceIds: number[];
}

export interface DeviceDeleted {
  deviceId: number;
}

/**
 * Published after a write in the devices module commits: the users named, and everyone who sees
 * one of the devices named (its owner and sharees), may see something else now.
 */
export interface DeviceAccessChanged {
  /** Users who gained or lost a device, or whose share of one changed. */
  userIds: number[];
  /** Devices whose fields, owner, shares or claim token changed. */
  deviceIds: number[];
}
