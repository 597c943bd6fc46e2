import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { DeviceAccessApi } from '../../../src/services/devices/access.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { signIn } from '../../support/api.ts';
import { Client, uniqueId } from './helpers.ts';

const VIEWER = 'cache-viewer@example.com';
const NONE = { position: false, events: false, geofences: false, notifications: false, commands: false };
const ALL = { position: true, events: true, geofences: true, notifications: true, commands: true };

/**
 * Device lists, single devices and grants are cached per user. Each test first reads what the
 * users concerned see (so their answers are cached), writes, then reads again: every read must
 * show the write at once.
 */
describeEachEngine('device reads after every kind of write (per-user caches)', (engine) => {
  let server: TestServer;
  let api: DeviceAccessApi;
  let admin: Client;
  let owner: Client;
  let viewer: Client;
  let buyer: Client;

  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off' });
    api = server.devices!.api;
    admin = new Client(server, await signIn(server, 'cache-admin@example.com', { administrator: true }));
    owner = new Client(server, await signIn(server, 'cache-owner@example.com'));
    viewer = new Client(server, await signIn(server, VIEWER));
    buyer = new Client(server, await signIn(server, 'cache-buyer@example.com'));
  });
  after(() => server.dispose());

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON bodies are asserted field by field
  const list = async (client: Client): Promise<any[]> => {
    const reply = await client.get('/api/devices/');
    assert.equal(reply.status, 200);
    return reply.body;
  };
  const listedIds = async (client: Client) => (await list(client)).map((device) => device.id as number);
  const grantedIds = async (client: Client) => (await api.accessFor(client.userId)).grants.map((grant) => grant.deviceId);
  /** Reads (and so caches) everything these users see. */
  const warm = async (...clients: Client[]) => {
    for (const client of clients) {
      for (const device of await list(client)) assert.equal((await client.get(`/api/devices/${device.id}`)).status, 200);
      await api.accessFor(client.userId);
    }
  };
  const create = async (client: Client, name = 'Device') => {
    const reply = await client.post('/api/devices/', { name, uniqueId: uniqueId('cache') });
    assert.equal(reply.status, 201);
    return reply.body as { id: number };
  };
  const share = async (deviceId: number, email: string, permissions: Record<string, boolean>, by = owner) => {
    const reply = await by.post(`/api/devices/${deviceId}/shares`, { email, permissions });
    assert.equal(reply.status, 201);
  };
  const provision = async (unique: string, transfer?: boolean) => {
    const reply = await admin.post('/api/devices/claim-tokens', { uniqueId: unique, modelCode: 'PT-1', transfer });
    assert.equal(reply.status, 201);
    return reply.body.token as string;
  };

  it('a created device shows at once in its owner’s list, device view and grants', async () => {
    await warm(owner);
    const device = await create(owner, 'Fresh');
    assert.ok((await listedIds(owner)).includes(device.id));
    assert.equal((await owner.get(`/api/devices/${device.id}`)).body.name, 'Fresh');
    assert.ok((await grantedIds(owner)).includes(device.id));
  });

  it('a device created with a claim token shows with its token', async () => {
    const unique = uniqueId('cache-token');
    const token = await provision(unique);
    await warm(buyer);
    const created = await buyer.post('/api/devices/', { name: 'Boxed', uniqueId: unique, deviceToken: token });
    assert.equal(created.status, 201);
    const listed = (await list(buyer)).find((device) => device.id === created.body.id);
    assert.equal(listed?.claimToken, token);
  });

  it('a changed device shows changed to its owner and to its sharees', async () => {
    const device = await create(owner, 'Before');
    await share(device.id, VIEWER, { position: true });
    await warm(owner, viewer);
    assert.equal((await owner.put(`/api/devices/${device.id}`, { name: 'After', attributes: { colour: 'red' } })).status, 200);
    for (const client of [owner, viewer]) {
      const listed = (await list(client)).find((entry) => entry.id === device.id);
      assert.equal(listed?.name, 'After');
      assert.deepEqual(listed?.attributes, { colour: 'red' });
      assert.equal((await client.get(`/api/devices/${device.id}`)).body.name, 'After');
    }
    assert.equal((await admin.put(`/api/devices/${device.id}`, { disabled: true })).status, 200, 'an administrator changes it too');
    for (const client of [owner, viewer]) assert.equal((await client.get(`/api/devices/${device.id}`)).body.disabled, true);
  });

  it('a deleted device leaves every list, view and grant', async () => {
    const device = await create(owner);
    await share(device.id, VIEWER, { position: true });
    await warm(owner, viewer);
    assert.equal((await owner.delete(`/api/devices/${device.id}`)).status, 204);
    for (const client of [owner, viewer]) {
      assert.ok(!(await listedIds(client)).includes(device.id));
      assert.equal((await client.get(`/api/devices/${device.id}`)).status, 404);
      assert.ok(!(await grantedIds(client)).includes(device.id));
    }
  });

  it('a new share shows to its user at once; a changed one with its new permissions', async () => {
    const device = await create(owner);
    await warm(viewer);
    assert.equal((await viewer.get(`/api/devices/${device.id}`)).status, 403);
    await share(device.id, VIEWER, { position: true });
    let listed = (await list(viewer)).find((entry) => entry.id === device.id);
    assert.deepEqual(listed?.permissions, { ...NONE, position: true });
    assert.equal(listed?.sharedBy, owner.userId);
    assert.equal((await viewer.get(`/api/devices/${device.id}`)).status, 200);
    assert.deepEqual((await api.accessFor(viewer.userId)).grant(device.id)?.permissions, { ...NONE, position: true });

    assert.equal((await owner.put(`/api/devices/${device.id}/shares/${viewer.userId}`, { permissions: { events: true, position: false } })).status, 200);
    listed = (await list(viewer)).find((entry) => entry.id === device.id);
    assert.deepEqual(listed?.permissions, { ...NONE, events: true });
    assert.deepEqual((await viewer.get(`/api/devices/${device.id}`)).body.permissions, { ...NONE, events: true });
    assert.deepEqual((await api.accessFor(viewer.userId)).deviceIdsWith('position').includes(device.id), false);
    assert.deepEqual((await api.accessFor(viewer.userId)).deviceIdsWith('events').includes(device.id), true);
  });

  it('a share ended by the owner, or left by its user, is gone at once', async () => {
    const device = await create(owner);
    await share(device.id, VIEWER, { position: true });
    await warm(viewer);
    assert.equal((await owner.delete(`/api/devices/${device.id}/shares/${viewer.userId}`)).status, 204);
    assert.ok(!(await listedIds(viewer)).includes(device.id));
    assert.equal((await viewer.get(`/api/devices/${device.id}`)).status, 403);
    assert.ok(!(await grantedIds(viewer)).includes(device.id));

    await share(device.id, VIEWER, { position: true });
    await warm(viewer);
    assert.equal((await viewer.delete(`/api/devices/${device.id}/shares/${viewer.userId}`)).status, 204);
    assert.ok(!(await listedIds(viewer)).includes(device.id));
    assert.ok(!(await grantedIds(viewer)).includes(device.id));
  });

  it('a claim shows the new device and its token to the claimer', async () => {
    const unique = uniqueId('cache-claim');
    const token = await provision(unique);
    await warm(buyer);
    const claimed = await buyer.post('/api/devices/claim', { token });
    assert.equal(claimed.status, 200);
    const listed = (await list(buyer)).find((device) => device.uniqueId === unique);
    assert.equal(listed?.claimToken, token);
    assert.ok((await grantedIds(buyer)).includes(listed?.id));
  });

  it('a device taken over by a claim leaves its former owner and sharees, and its revoked token leaves its view', async () => {
    const unique = uniqueId('cache-stock');
    const stock = (await owner.post('/api/devices/', { name: 'Stock', uniqueId: unique })).body as { id: number };
    await share(stock.id, VIEWER, { position: true });
    const token = await provision(unique, true);
    await warm(owner, viewer, buyer);
    assert.equal((await buyer.post('/api/devices/claim', { token })).status, 200);
    assert.ok(!(await listedIds(owner)).includes(stock.id));
    assert.ok(!(await grantedIds(owner)).includes(stock.id));
    assert.ok(!(await listedIds(viewer)).includes(stock.id));
    assert.equal((await viewer.get(`/api/devices/${stock.id}`)).status, 403);
    const taken = (await list(buyer)).find((device) => device.id === stock.id);
    assert.equal(taken?.isOwner, true);
    assert.equal(taken?.claimToken, token);

    await warm(buyer);
    assert.equal((await admin.delete(`/api/devices/claim-tokens/${token}`)).status, 204);
    assert.equal((await list(buyer)).find((device) => device.id === stock.id)?.claimToken, undefined);
    assert.equal((await buyer.get(`/api/devices/${stock.id}`)).body.claimToken, undefined);
  });

  it('tracking status updates show in the lists of the owner and the sharees', async () => {
    const device = await create(owner);
    await share(device.id, VIEWER, { position: true });
    await warm(owner, viewer);
    const at = Date.UTC(2025, 0, 2, 3, 4, 5);
    assert.equal(await api.updateStatus(device.id, { status: 'online', lastUpdate: at, positionId: 41 }), true);
    for (const client of [owner, viewer]) {
      const listed = (await list(client)).find((entry) => entry.id === device.id);
      assert.deepEqual([listed?.status, listed?.lastUpdate, listed?.positionId], ['online', new Date(at).toISOString(), 41]);
    }
    await warm(owner, viewer);
    assert.deepEqual(await api.updateStatuses([{ deviceId: device.id, status: 'offline' }]), [device.id]);
    for (const client of [owner, viewer]) assert.equal((await client.get(`/api/devices/${device.id}`)).body.status, 'offline');
  });

  it('a deleted account’s devices leave their sharees, and the account leaves the directory', async () => {
    const doomed = new Client(server, await signIn(server, 'cache-doomed@example.com'));
    const device = (await doomed.post('/api/devices/', { name: 'Doomed', uniqueId: uniqueId('cache') })).body as { id: number };
    await share(device.id, VIEWER, { position: true }, doomed);
    const owned = await create(owner);
    await share(owned.id, VIEWER, { position: true });
    await share(owned.id, 'cache-doomed@example.com', {});
    await warm(viewer, doomed, owner);
    assert.ok(await server.auth!.api.users.findByEmail('cache-doomed@example.com'));

    assert.equal((await doomed.delete('/api/auth/account')).status, 204);
    await server.outbox!.drainNow();
    assert.ok(!(await listedIds(viewer)).includes(device.id));
    assert.ok(!(await grantedIds(viewer)).includes(device.id));
    assert.deepEqual(await grantedIds(doomed), []);
    assert.equal(await server.auth!.api.users.get(doomed.userId), undefined);
    assert.equal(await server.auth!.api.users.findByEmail('cache-doomed@example.com'), undefined);
    const shares = (await owner.get(`/api/devices/${owned.id}/shares`)).body as { userId: number }[];
    assert.deepEqual(
      shares.map((entry) => entry.userId),
      [viewer.userId],
    );

    // An account that owned nothing: only its own entries knew of its share.
    const leaver = new Client(server, await signIn(server, 'cache-leaver@example.com'));
    await share(owned.id, 'cache-leaver@example.com', { position: true });
    assert.deepEqual(await grantedIds(leaver), [owned.id]);
    assert.equal((await leaver.delete('/api/auth/account')).status, 204);
    await server.outbox!.drainNow();
    assert.deepEqual(await grantedIds(leaver), []);
  });

  it('account flags changed through the admin API apply to the very next request', async () => {
    assert.equal((await admin.put(`/api/auth/users/${owner.userId}`, { deviceReadonly: true })).status, 200);
    assert.equal((await owner.post('/api/devices/', { name: 'No', uniqueId: uniqueId('cache') })).status, 403);
    assert.equal((await admin.put(`/api/auth/users/${owner.userId}`, { deviceReadonly: false })).status, 200);
    await create(owner);

    const device = await create(owner);
    await share(device.id, VIEWER, { position: true });
    await warm(viewer);
    assert.equal((await viewer.get(`/api/devices/?userId=${owner.userId}`)).status, 403);
    assert.equal((await admin.put(`/api/auth/users/${viewer.userId}`, { administrator: true })).status, 200);
    assert.equal((await viewer.get(`/api/devices/?userId=${owner.userId}`)).status, 200);
    assert.deepEqual((await list(viewer)).find((entry) => entry.id === device.id)?.permissions, ALL, 'an administrator holds every permission');
    assert.deepEqual((await api.accessFor(viewer.userId)).grant(device.id)?.permissions, ALL);
    assert.equal((await admin.put(`/api/auth/users/${viewer.userId}`, { administrator: false })).status, 200);
    assert.equal((await viewer.get(`/api/devices/?userId=${owner.userId}`)).status, 403);
    assert.deepEqual((await list(viewer)).find((entry) => entry.id === device.id)?.permissions, { ...NONE, position: true });
    assert.equal((await api.accessFor(viewer.userId)).administrator, false);
  });

  it('a changed profile name shows in the owner’s share listing', async () => {
    const device = await create(owner);
    await share(device.id, VIEWER, {});
    const names = async () => ((await owner.get(`/api/devices/${device.id}/shares`)).body as { name: string | null }[]).map((entry) => entry.name);
    await names();
    assert.equal((await viewer.put('/api/auth/profile', { name: 'Renamed Viewer' })).status, 200);
    assert.deepEqual(await names(), ['Renamed Viewer']);
  });

  it('filters a cached list by id and by uniqueId, a device matching both', async () => {
    const first = (await owner.post('/api/devices/', { name: 'F1', uniqueId: uniqueId('cache-filter') })).body as { id: number; uniqueId: string };
    const second = (await owner.post('/api/devices/', { name: 'F2', uniqueId: uniqueId('cache-filter') })).body as { id: number; uniqueId: string };
    await warm(owner);
    assert.deepEqual(
      (await owner.get(`/api/devices/?id=${second.id}&id=${first.id}`)).body.map((device: { id: number }) => device.id),
      [first.id, second.id],
    );
    assert.deepEqual(
      (await owner.get(`/api/devices/?uniqueId=${second.uniqueId}`)).body.map((device: { id: number }) => device.id),
      [second.id],
    );
    assert.deepEqual((await owner.get(`/api/devices/?id=${first.id}&uniqueId=${second.uniqueId}`)).body, []);
    const ids = await listedIds(owner);
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b), 'ascending by id');
  });
});
