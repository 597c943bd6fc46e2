import type { InternalClient } from '../../platform/http/internal-client.ts';
import { accessPerScope, deviceAccessOf } from './access.ts';
import type { DeviceAccessApi, DeviceAccessData, DeviceRecord, DeviceStatusChange, DeviceView } from './access.ts';
import { INTERNAL_BATCH, MAX_LOOKUP_UNIQUE_ID } from './internal/routes.ts';

function parts<T>(items: readonly T[]): T[][] {
  const result: T[][] = [];
  for (let start = 0; start < items.length; start += INTERNAL_BATCH) result.push(items.slice(start, start + INTERNAL_BATCH));
  return result;
}

/**
 * The devices module's interface over HTTP, for a process that runs tracking without devices
 * (DEVICES_URL): the devices process's internal routes, with the internal token. Nothing is
 * cached beyond one request (`scope`): a share or a deletion shows at once, at the price of one
 * internal call per request that needs the caller's access.
 */
export function remoteDevices(client: InternalClient): DeviceAccessApi {
  const getDevices = async (ids: readonly number[]): Promise<DeviceRecord[]> => {
    const records: DeviceRecord[] = [];
    for (const part of parts(ids)) {
      records.push(...(await client.json<DeviceRecord[]>('/api/devices/internal/devices/by-id', { method: 'POST', body: { ids: part } })));
    }
    return records;
  };
  const exists = async (deviceId: number) => (await getDevices([deviceId])).length > 0;
  const updateStatuses = async (batch: readonly DeviceStatusChange[]): Promise<number[]> => {
    const deviceIds: number[] = [];
    // In order, so a later change of a device still wins.
    for (const changes of parts(batch)) {
      const answer = await client.json<{ deviceIds: number[] }>('/api/devices/internal/statuses', { method: 'PUT', body: { changes } });
      deviceIds.push(...answer.deviceIds);
    }
    return [...new Set(deviceIds)].sort((a, b) => a - b);
  };

  return {
    accessFor: accessPerScope(async (userId) =>
      deviceAccessOf(await client.json<DeviceAccessData>(`/api/devices/internal/access/${userId}`), exists),
    ),
    exists,
    async findByUniqueId(uniqueId) {
      if (uniqueId.length === 0 || uniqueId.length > MAX_LOOKUP_UNIQUE_ID) return undefined;
      const answer = await client.json<{ device: DeviceRecord | null }>('/api/devices/internal/devices/by-unique-id', { method: 'POST', body: { uniqueId } });
      return answer.device ?? undefined;
    },
    getDevices,
    async viewsFor(access, ids) {
      const views: DeviceView[] = [];
      for (const part of parts(ids)) {
        views.push(...(await client.json<DeviceView[]>('/api/devices/internal/views', { method: 'POST', body: { userId: access.userId, ids: part } })));
      }
      return views;
    },
    async updateStatus(deviceId, update) {
      if (update.status === undefined && update.lastUpdate === undefined && update.positionId === undefined) return exists(deviceId);
      return (await updateStatuses([{ deviceId, ...update }])).length === 1;
    },
    updateStatuses,
  };
}
