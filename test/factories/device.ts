import type { DeviceRecord } from '../../src/services/devices/access.ts';

/** A device as the devices module hands it to tracking: enabled, never heard from, owned by user 1, unless `changes` say otherwise. */
export function deviceRecord(id: number, changes: Partial<DeviceRecord> = {}): DeviceRecord {
  return {
    id, name: `device ${id}`, uniqueId: `fake-${id}`, status: 'offline', lastUpdate: null, positionId: null, phone: null, model: null,
    contact: null, category: null, disabled: false, expirationTime: null, groupId: null, calendarId: null, attributes: {}, ownerId: 1,
    ...changes,
  };
}
