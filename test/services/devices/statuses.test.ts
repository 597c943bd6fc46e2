import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { EventBus } from '../../../src/platform/bus.ts';
import type { DeviceAccessApi } from '../../../src/services/devices/access.ts';
import type { DevicesUpdated } from '../../../src/services/devices/events.ts';
import { createDevicesModule } from '../../../src/services/devices/module.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { instanceContext, startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { signIn } from '../../support/api.ts';
import { Client } from './helpers.ts';

describeEachEngine('device statuses in batches (updateStatuses)', (engine) => {
  let server: TestServer;
  let api: DeviceAccessApi;
  let owner: Client;
  let published: DevicesUpdated[];
  const ids: number[] = [];

  before(async () => {
    server = await startTestServer(engine);
    const bus = new EventBus(server.app.log);
    published = [];
    bus.on('devices.device.updated', async (event) => {
      published.push(event);
      // As Redis would between processes: the server's device caches hear of the change.
      await server.bus.publish('devices.device.updated', event);
    });
    const module = await createDevicesModule(
      instanceContext(server, bus),
      { users: server.auth!.api.users },
    );
    api = module.api;
    owner = new Client(server, await signIn(server, 'statuses-owner@example.com'));
    for (const uniqueId of ['status-a', 'status-b', 'status-c']) {
      const created = await owner.post('/api/devices/', { name: uniqueId, uniqueId });
      assert.equal(created.status, 201);
      ids.push(created.body.id as number);
    }
  });
  after(() => server.dispose());

  const fieldsOf = async (id: number) => {
    const body = (await owner.get(`/api/devices/${id}`)).body;
    return { status: body.status, lastUpdate: body.lastUpdate, positionId: body.positionId };
  };

  it('writes each device its own fields in one call, leaving the rest alone, and announces the devices', async () => {
    const [a, b, c] = ids as [number, number, number];
    const at = Date.UTC(2025, 4, 6, 7, 8, 9, 10);
    published.length = 0;
    const updated = await api.updateStatuses([
      { deviceId: b, status: 'online', lastUpdate: at, positionId: 7 },
      { deviceId: a, status: 'unknown' },
      { deviceId: 987654321, status: 'online' },
    ]);
    assert.deepEqual(updated, [a, b], 'the ids of the devices that exist, ascending');
    assert.deepEqual(await fieldsOf(a), { status: 'unknown', lastUpdate: null, positionId: null });
    assert.deepEqual(await fieldsOf(b), { status: 'online', lastUpdate: '2025-05-06T07:08:09.010Z', positionId: 7 });
    assert.deepEqual(await fieldsOf(c), { status: 'offline', lastUpdate: null, positionId: null });
    assert.deepEqual(published, [{ deviceIds: [a, b] }]);

    await api.updateStatuses([{ deviceId: b, positionId: 8 }]);
    assert.deepEqual(await fieldsOf(b), { status: 'online', lastUpdate: '2025-05-06T07:08:09.010Z', positionId: 8 });
    await api.updateStatuses([{ deviceId: b, positionId: null, lastUpdate: null }]);
    assert.deepEqual(await fieldsOf(b), { status: 'online', lastUpdate: null, positionId: null }, 'null clears a field');
  });

  it('merges several changes of one device, the later winning field by field', async () => {
    const [a] = ids as [number];
    await api.updateStatuses([
      { deviceId: a, status: 'online', positionId: 1 },
      { deviceId: a, status: 'offline', lastUpdate: 5000 },
    ]);
    assert.deepEqual(await fieldsOf(a), { status: 'offline', lastUpdate: new Date(5000).toISOString(), positionId: 1 });
  });

  it('does nothing and announces nothing for an empty batch or changes without fields', async () => {
    published.length = 0;
    assert.deepEqual(await api.updateStatuses([]), []);
    assert.deepEqual(await api.updateStatuses([{ deviceId: ids[0] as number }]), []);
    assert.deepEqual(await api.updateStatuses([{ deviceId: 987654321, status: 'online' }]), []);
    assert.deepEqual(published, []);
  });

  it('updateStatus announces its device too', async () => {
    const [, , c] = ids as [number, number, number];
    published.length = 0;
    assert.equal(await api.updateStatus(c, { status: 'online' }), true);
    assert.deepEqual(published, [{ deviceIds: [c] }]);
  });

  it('updates thousands of devices in one call (chunked statements)', async () => {
    const many = Array.from({ length: 4500 }, (_, index) => ({ deviceId: 1_000_000 + index, status: 'online' as const }));
    const [a] = ids as [number];
    assert.deepEqual(await api.updateStatuses([...many, { deviceId: a, lastUpdate: 42 }]), [a]);
    assert.equal((await fieldsOf(a)).lastUpdate, new Date(42).toISOString());
  });
});
