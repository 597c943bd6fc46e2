import type { Entitlement } from '../billing/module.ts';
import type { DeviceAccess, DeviceAccessApi } from '../devices/access.ts';

/**
 * How far back a device's history is served: its owner's plan `historyDays` (docs/plans.md). A shared device
 * follows its owner's plan, not the viewer's; administrators see what the owner's plan serves too, so what a
 * plan shows does not depend on who looks.
 */
export class HistoryCut {
  private readonly plans: Entitlement | undefined;
  private readonly devices: DeviceAccessApi;

  /** Without `plans` (no billing reachable) every history is served whole. */
  constructor(plans: Entitlement | undefined, devices: DeviceAccessApi) {
    this.plans = plans;
    this.devices = devices;
  }

  /** Per device, the earliest time served (epoch ms); null: all of its history. Devices the caller cannot see are absent. */
  async servedFrom(access: DeviceAccess, deviceIds: readonly number[]): Promise<Map<number, number | null>> {
    const plans = this.plans;
    const cut = new Map<number, number | null>();
    if (!plans) {
      for (const deviceId of deviceIds) cut.set(deviceId, null);
      return cut;
    }
    const owners = new Map<number, number>();
    const unknown: number[] = [];
    for (const deviceId of deviceIds) {
      const ownerId = access.grant(deviceId)?.ownerId;
      if (ownerId === undefined) unknown.push(deviceId);
      else owners.set(deviceId, ownerId);
    }
    // An administrator may look at devices granted to nobody they know of: the owner comes from the device.
    if (unknown.length > 0) for (const device of await this.devices.getDevices(unknown)) owners.set(device.id, device.ownerId);
    const now = Date.now();
    const byOwner = new Map<number, Promise<number | null>>();
    for (const [deviceId, ownerId] of owners) {
      let from = byOwner.get(ownerId);
      if (!from) byOwner.set(ownerId, (from = plans.historyWindow(ownerId, now).then((window) => window.servedFrom)));
      cut.set(deviceId, await from);
    }
    return cut;
  }

  /** The one device's earliest time served; null: all of it. */
  async servedFromOf(access: DeviceAccess, deviceId: number): Promise<number | null> {
    return (await this.servedFrom(access, [deviceId])).get(deviceId) ?? null;
  }
}
