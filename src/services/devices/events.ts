/** Domain events the devices module publishes. */
declare module '../../platform/bus.ts' {
  interface DomainEvents {
    /** A device is gone (deleted by its owner or an administrator, or with its owner's account): its tracking data goes with it. */
    'devices.device.deleted': DeviceDeleted;
  }
}

export interface DeviceDeleted {
  deviceId: number;
}
