import type { EnvReader } from '../../platform/env.ts';

export type DeviceRegistration = 'open' | 'claim-only';

/** The devices module's settings, read by config.ts with every module's. */
export interface DevicesSettings {
  /** DEVICE_REGISTRATION: `claim-only` lets non-administrators add devices only with a claim token (docs/devices.md). */
  deviceRegistration: DeviceRegistration;
}

export function readDevicesSettings(read: EnvReader): DevicesSettings {
  return { deviceRegistration: read.oneOf<DeviceRegistration>('DEVICE_REGISTRATION', 'open', ['open', 'claim-only']) };
}
