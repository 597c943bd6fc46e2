import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { CompiledQuery } from 'kysely';
import type { Kysely } from 'kysely';
import { authorize } from '../../../src/services/devices/access.ts';
import type { DeviceAccessApi } from '../../../src/services/devices/access.ts';
import type { DeviceAction } from '../../../src/platform/access-policy.ts';
import type { AppError } from '../../../src/platform/http/errors.ts';
import { DeviceRepository } from '../../../src/services/devices/repository.ts';
import type { DevicesTables } from '../../../src/services/devices/tables.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { signIn } from '../../support/api.ts';
import { Client, uniqueId } from './helpers.ts';

const NONE = { position: false, events: false, geofences: false, notifications: false, commands: false };
const ALL = { position: true, events: true, geofences: true, notifications: true, commands: true };

describeEachEngine('device access interface', (engine) => {
  let server: TestServer;
  let api: DeviceAccessApi;
  let owner: Client;
  let viewer: Client;
  let stranger: Client;
  let admin: Client;
  let owned: { id: number; uniqueId: string };
  let shared: { id: number; uniqueId: string };
  let unrelated: { id: number; uniqueId: string };

  before(async () => {
    server = await startTestServer(engine);
    // The interface as the tracking module receives it.
    api = server.devices!.api;
    owner = new Client(server, await signIn(server, 'grant-owner@example.com'));
    viewer = new Client(server, await signIn(server, 'grant-viewer@example.com'));
    stranger = new Client(server, await signIn(server, 'grant-stranger@example.com'));
    admin = new Client(server, await signIn(server, 'grant-admin@example.com', { administrator: true }));
    owned = (await owner.post('/api/devices', { name: 'Owned', uniqueId: uniqueId('grant'), attributes: { speedLimit: 50 } })).body;
    shared = (await owner.post('/api/devices', { name: 'Shared', uniqueId: uniqueId('grant') })).body;
    unrelated = (await stranger.post('/api/devices', { name: 'Unrelated', uniqueId: uniqueId('grant') })).body;
    await owner.post(`/api/devices/${shared.id}/shares`, { email: 'grant-viewer@example.com', permissions: { position: true, events: true } });
  });
  after(() => server.dispose());

  it('grants the owner every permission on owned devices', async () => {
    const access = await api.accessFor(owner.userId);
    assert.equal(access.userId, owner.userId);
    assert.equal(access.administrator, false);
    assert.deepEqual(access.grants, [
      { deviceId: owned.id, ownerId: owner.userId, isOwner: true, permissions: ALL },
      { deviceId: shared.id, ownerId: owner.userId, isOwner: true, permissions: ALL },
    ]);
    assert.deepEqual(access.deviceIdsWith('commands'), [owned.id, shared.id]);
  });

  it('grants a shared user the share’s permissions, and nothing else', async () => {
    const access = await api.accessFor(viewer.userId);
    assert.deepEqual(access.grants, [
      { deviceId: shared.id, ownerId: owner.userId, isOwner: false, permissions: { ...NONE, position: true, events: true }, sharedBy: owner.userId },
    ]);
    assert.deepEqual(access.grant(shared.id), access.grants[0]);
    assert.equal(access.grant(owned.id), undefined);
    assert.deepEqual(access.deviceIdsWith('position'), [shared.id]);
    assert.deepEqual(access.deviceIdsWith('geofences'), []);
  });

  it('answers through the access policy: allowed, 403 FORBIDDEN, 403 PERMISSION_REQUIRED, 404', async () => {
    const missing = 987654321;
    const cases: [Client, number, DeviceAction, string | undefined][] = [
      [owner, owned.id, 'commands', undefined],
      [owner, missing, 'view', 'NOT_FOUND'],
      [viewer, shared.id, 'position', undefined],
      [viewer, shared.id, 'view', undefined],
      [viewer, shared.id, 'geofences', 'PERMISSION_REQUIRED'],
      [viewer, owned.id, 'view', 'FORBIDDEN'],
      [viewer, missing, 'position', 'NOT_FOUND'],
      [stranger, owned.id, 'position', 'FORBIDDEN'],
      [admin, owned.id, 'commands', undefined],
      [admin, unrelated.id, 'position', undefined],
      [admin, missing, 'position', 'NOT_FOUND'],
    ];
    for (const [client, deviceId, action, code] of cases) {
      const access = await api.accessFor(client.userId);
      const refused = await authorize(access, access, deviceId, action).then(() => undefined, (error: AppError) => error.code);
      assert.equal(refused, code, `${client.userId} ${deviceId} ${action}`);
    }
    const adminAccess = await api.accessFor(admin.userId);
    assert.equal(adminAccess.administrator, true);
    assert.deepEqual(adminAccess.grants, [], 'an administrator’s grants are their own devices; others are reached by check');
  });

  it('loads access once per scope, and afresh for a new scope', async () => {
    const scope = {};
    const first = api.accessFor(viewer.userId, scope);
    assert.equal(api.accessFor(viewer.userId, scope), first);
    assert.notEqual(api.accessFor(owner.userId, scope), first, 'per user within a scope');
    await owner.put(`/api/devices/${shared.id}/shares/${viewer.userId}`, { permissions: { geofences: true } });
    assert.deepEqual((await api.accessFor(viewer.userId, scope)).deviceIdsWith('geofences'), [], 'the scope keeps its answer');
    assert.deepEqual((await api.accessFor(viewer.userId, {})).deviceIdsWith('geofences'), [shared.id]);
    await owner.put(`/api/devices/${shared.id}/shares/${viewer.userId}`, { permissions: { geofences: false } });
  });

  it('answers existence and the device a tracker identifies as', async () => {
    assert.equal(await api.exists(owned.id), true);
    assert.equal(await api.exists(987654321), false);
    const record = await api.findByUniqueId(owned.uniqueId);
    assert.deepEqual(record, {
      id: owned.id,
      name: 'Owned',
      uniqueId: owned.uniqueId,
      status: 'offline',
      lastUpdate: null,
      positionId: null,
      phone: null,
      model: null,
      contact: null,
      category: null,
      disabled: false,
      expirationTime: null,
      groupId: null,
      calendarId: null,
      attributes: { speedLimit: 50 },
      ownerId: owner.userId,
    });
    assert.equal(await api.findByUniqueId('no-such-tracker'), undefined);
    const records = await api.getDevices([unrelated.id, 987654321, owned.id]);
    assert.deepEqual(
      records.map((device) => device.id),
      [owned.id, unrelated.id].sort((a, b) => a - b),
    );
    assert.deepEqual(await api.getDevices([]), []);
  });

  it('shapes devices for live updates as each user sees them, leaving out the ones they may not see', async () => {
    const ids = [owned.id, shared.id, unrelated.id];
    const asViewer = await api.viewsFor(await api.accessFor(viewer.userId), ids);
    assert.deepEqual(asViewer, [(await viewer.get(`/api/devices/${shared.id}`)).body]);
    const asOwner = await api.viewsFor(await api.accessFor(owner.userId), ids);
    assert.deepEqual(asOwner, [(await owner.get(`/api/devices/${owned.id}`)).body, (await owner.get(`/api/devices/${shared.id}`)).body]);
    const asAdmin = await api.viewsFor(await api.accessFor(admin.userId), ids);
    assert.deepEqual(
      asAdmin.map((device) => [device.id, device.isOwner, device.permissions]),
      ids.map((id) => [id, false, ALL]),
    );
  });

  it('lets the tracking module maintain status, lastUpdate and positionId', async () => {
    const at = Date.UTC(2025, 0, 2, 3, 4, 5, 678);
    assert.equal(await api.updateStatus(owned.id, { status: 'online', lastUpdate: at, positionId: 42 }), true);
    const device = (await owner.get(`/api/devices/${owned.id}`)).body;
    assert.equal(device.status, 'online');
    assert.equal(device.lastUpdate, '2025-01-02T03:04:05.678Z');
    assert.equal(device.positionId, 42);
    assert.equal(await api.updateStatus(owned.id, { status: 'unknown' }), true);
    const record = await api.findByUniqueId(owned.uniqueId);
    assert.deepEqual([record?.status, record?.lastUpdate, record?.positionId], ['unknown', at, 42], 'fields left out keep their value');
    assert.equal(await api.updateStatus(owned.id, {}), true);
    assert.equal(await api.updateStatus(987654321, { status: 'online' }), false);
    assert.equal(await api.updateStatus(987654321, {}), false);
    const renamed = await owner.put(`/api/devices/${owned.id}`, { name: 'Renamed' });
    assert.equal(renamed.body.status, 'unknown', 'a user’s update leaves the tracking fields alone');
  });

  it('reads grants through the owner and share indexes', async () => {
    const db = server.database!.db as Kysely<DevicesTables>;
    if (engine.name === 'sqlite') {
      const compiled: CompiledQuery[] = [];
      const spy = db.withPlugin({
        transformQuery: ({ node, queryId }) => {
          compiled.push(db.getExecutor().compileQuery(node, queryId));
          return node;
        },
        transformResult: async ({ result }) => result,
      });
      await new DeviceRepository(spy).grantsOf(viewer.userId);
      // The union is compiled last, after its parts.
      const query = compiled.at(-1);
      assert.ok(query);
      const plan = await db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]));
      const details = plan.rows.map((row) => row.detail).join('\n');
      assert.match(details, /devices_owner_id/);
      assert.match(details, /device_shares_user_id/);
      assert.doesNotMatch(details, /SCAN (devices|device_shares)\b(?! USING)/);
    } else {
      const indexes = await db.executeQuery<{ indexname: string; indexdef: string }>(
        CompiledQuery.raw("select indexname, indexdef from pg_indexes where tablename in ('devices', 'device_shares')"),
      );
      const definitions = indexes.rows.map((row) => row.indexdef).join('\n');
      assert.match(definitions, /devices_owner_id ON public\.devices USING btree \(owner_id\)/);
      assert.match(definitions, /device_shares_user_id ON public\.device_shares USING btree \(user_id\)/);
      assert.match(definitions, /UNIQUE INDEX \S+ ON public\.devices USING btree \(unique_id\)/);
    }
  });
});
