import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { signIn } from '../../support/api.ts';
import { Client, snapshot, uniqueId } from './helpers.ts';

const NONE = { position: false, events: false, geofences: false, notifications: false, commands: false };

describeEachEngine('device sharing', (engine) => {
  let server: TestServer;
  let owner: Client;
  let friend: Client;

  before(async () => {
    server = await startTestServer(engine);
    owner = new Client(server, await signIn(server, 'share-owner@example.com'));
    friend = new Client(server, await signIn(server, 'friend@example.com'));
  });
  after(() => server.dispose());

  const newDevice = async () => (await owner.post('/api/devices', { name: 'Shared', uniqueId: uniqueId('share') })).body as { id: number };

  it('shares by e-mail in any case, with the permissions given and the rest false', async () => {
    const device = await newDevice();
    const shared = await owner.post(`/api/devices/${device.id}/shares`, { email: 'FRIEND@Example.com', permissions: { position: true, geofences: true } });
    assert.equal(shared.status, 201);
    assert.equal(shared.body.userId, null, 'the answer never names the account');
    assert.equal(shared.body.email, 'friend@example.com');
    assert.deepEqual(shared.body.permissions, { ...NONE, position: true, geofences: true });
    assert.equal(shared.body.sharedBy, owner.userId);
    assert.ok(!Number.isNaN(Date.parse(shared.body.createdAt)));
    const seen = await friend.get(`/api/devices/${device.id}`);
    assert.equal(seen.status, 200);
    assert.deepEqual(seen.body.permissions, shared.body.permissions);
    assert.equal(seen.body.sharedBy, owner.userId);
    assert.equal(seen.body.isOwner, false);
    const listed = await owner.get(`/api/devices/${device.id}/shares`);
    assert.deepEqual(listed.body, [{ ...shared.body, userId: friend.userId, name: null }]);
  });

  it('answers a share to an address without an account exactly as one to an account', async () => {
    const device = await newDevice();
    const permissions = { position: true, events: true };
    const known = await owner.post(`/api/devices/${device.id}/shares`, { email: 'friend@example.com', permissions });
    const unknown = await owner.post(`/api/devices/${device.id}/shares`, { email: 'Not-Yet@Example.com', permissions });
    assert.equal(known.status, 201);
    assert.equal(unknown.status, 201);
    assert.deepEqual(Object.keys(unknown.body).sort(), Object.keys(known.body).sort());
    assert.deepEqual(Object.keys(unknown.headers).sort(), Object.keys(known.headers).sort());
    const comparable = ({ email: _email, createdAt: _created, updatedAt: _updated, ...rest }: Record<string, unknown>) => rest;
    assert.deepEqual(comparable(unknown.body), comparable(known.body));
    assert.equal(unknown.body.email, 'not-yet@example.com');
  });

  it('keeps a share to an address without an account pending, granting nothing, until an account with it looks', async () => {
    const device = await newDevice();
    const shared = await owner.post(`/api/devices/${device.id}/shares`, { email: 'newcomer@example.com', permissions: { position: true } });
    assert.equal(shared.status, 201);
    const db = server.database!.db;
    assert.deepEqual(await db.selectFrom('device_shares').selectAll().where('device_id', '=', device.id).execute(), []);
    const pending = (await owner.get(`/api/devices/${device.id}/shares`)).body;
    assert.deepEqual(pending, [shared.body]);
    assert.equal((await friend.get(`/api/devices/${device.id}`)).status, 403, 'another account gains nothing');

    const newcomer = new Client(server, await signIn(server, 'Newcomer@example.com'));
    const listed = await newcomer.get('/api/devices');
    assert.deepEqual(
      listed.body.map((seen: { id: number; isOwner: boolean; permissions: unknown }) => [seen.id, seen.isOwner, seen.permissions]),
      [[device.id, false, { ...NONE, position: true }]],
    );
    assert.deepEqual(await db.selectFrom('device_invitations').selectAll().where('device_id', '=', device.id).execute(), []);
    const active = (await owner.get(`/api/devices/${device.id}/shares`)).body;
    assert.deepEqual(active, [{ ...shared.body, userId: newcomer.userId, email: 'newcomer@example.com', name: null }]);
    assert.equal((await owner.put(`/api/devices/${device.id}/shares/${newcomer.userId}`, { permissions: { events: true } })).status, 200);
  });

  it('withdraws a pending share by its address; an active one ends by user id', async () => {
    const device = await newDevice();
    await owner.post(`/api/devices/${device.id}/shares`, { email: 'withdrawn@example.com', permissions: { position: true } });
    await owner.post(`/api/devices/${device.id}/shares`, { email: 'friend@example.com', permissions: {} });
    assert.equal((await friend.delete(`/api/devices/${device.id}/shares?email=withdrawn@example.com`)).status, 403);
    assert.equal((await owner.delete(`/api/devices/${device.id}/shares?email=Withdrawn@example.com`)).status, 204);
    const missing = await owner.delete(`/api/devices/${device.id}/shares?email=withdrawn@example.com`);
    assert.equal(missing.status, 404);
    assert.equal(missing.body.code, 'NOT_FOUND');
    assert.equal((await owner.delete(`/api/devices/${device.id}/shares?email=friend@example.com`)).status, 404);
    assert.deepEqual((await owner.get(`/api/devices/${device.id}/shares`)).body.map((share: { userId: number }) => share.userId), [friend.userId]);
    const late = new Client(server, await signIn(server, 'withdrawn@example.com'));
    assert.deepEqual((await late.get('/api/devices')).body, [], 'a withdrawn share is never accepted');
  });

  it('changes only the permissions named, and reads them back', async () => {
    const device = await newDevice();
    await owner.post(`/api/devices/${device.id}/shares`, { email: 'friend@example.com', permissions: { position: true, events: true } });
    const changed = await owner.put(`/api/devices/${device.id}/shares/${friend.userId}`, { permissions: { events: false, commands: true } });
    assert.equal(changed.status, 200);
    assert.deepEqual(changed.body.permissions, { ...NONE, position: true, commands: true });
    assert.deepEqual((await friend.get(`/api/devices/${device.id}`)).body.permissions, changed.body.permissions);
    const unchanged = await owner.put(`/api/devices/${device.id}/shares/${friend.userId}`, { permissions: {} });
    assert.deepEqual(unchanged.body.permissions, changed.body.permissions);
  });

  it('refuses to share with the owner, or twice, pending or not, changing nothing', async () => {
    const device = await newDevice();
    await owner.post(`/api/devices/${device.id}/shares`, { email: 'friend@example.com', permissions: {} });
    await owner.post(`/api/devices/${device.id}/shares`, { email: 'pending-twice@example.com', permissions: {} });
    const before = await snapshot(server);
    const pendingTwice = await owner.post(`/api/devices/${device.id}/shares`, { email: 'PENDING-twice@example.com', permissions: {} });
    assert.equal(pendingTwice.status, 409);
    assert.equal(pendingTwice.body.code, 'SHARE_EXISTS');
    const self = await owner.post(`/api/devices/${device.id}/shares`, { email: 'share-owner@example.com', permissions: {} });
    assert.equal(self.status, 400);
    assert.equal(self.body.code, 'CANNOT_SHARE_WITH_OWNER');
    const twice = await owner.post(`/api/devices/${device.id}/shares`, { email: 'friend@example.com', permissions: { position: true } });
    assert.equal(twice.status, 409);
    assert.equal(twice.body.code, 'SHARE_EXISTS');
    assert.deepEqual(await snapshot(server), before);
  });

  it('answers 404 for a share that does not exist', async () => {
    const device = await newDevice();
    const changed = await owner.put(`/api/devices/${device.id}/shares/${friend.userId}`, { permissions: { position: true } });
    assert.equal(changed.status, 404);
    assert.equal(changed.body.code, 'NOT_FOUND');
    const deleted = await owner.delete(`/api/devices/${device.id}/shares/${friend.userId}`);
    assert.equal(deleted.status, 404);
    assert.equal(deleted.body.code, 'NOT_FOUND');
    const selfLeave = await friend.delete(`/api/devices/${device.id}/shares/${friend.userId}`);
    assert.equal(selfLeave.status, 403, 'a stranger learns nothing beyond the device existing');
    assert.equal(selfLeave.body.code, 'FORBIDDEN');
  });

  it('refuses bad share input with 400 and changes nothing', async () => {
    const device = await newDevice();
    await owner.post(`/api/devices/${device.id}/shares`, { email: 'friend@example.com', permissions: {} });
    const before = await snapshot(server);
    const badCreates: unknown[] = [
      {},
      { email: 'friend@example.com' },
      { permissions: {} },
      { email: '', permissions: {} },
      { email: 'not-an-address', permissions: {} },
      { email: 42, permissions: {} },
      { email: `${'a'.repeat(250)}@example.com`, permissions: {} },
      { email: 'friend@example.com', permissions: { position: 'yes' } },
      { email: 'friend@example.com', permissions: { position: 1 } },
      { email: 'friend@example.com', permissions: { teleport: true } },
      { email: 'friend@example.com', permissions: [] },
      { email: 'friend@example.com', permissions: {}, userId: friend.userId },
    ];
    for (const payload of badCreates) {
      const reply = await owner.post(`/api/devices/${device.id}/shares`, payload);
      assert.equal(reply.status, 400, JSON.stringify(payload));
      assert.equal(reply.body.code, 'VALIDATION_FAILED', JSON.stringify(payload));
    }
    for (const payload of [{}, { permissions: null }, { permissions: { events: 'no' } }, { permissions: {}, extra: 1 }]) {
      const reply = await owner.put(`/api/devices/${device.id}/shares/${friend.userId}`, payload);
      assert.equal(reply.status, 400, JSON.stringify(payload));
      assert.equal(reply.body.code, 'VALIDATION_FAILED');
    }
    for (const url of [`/api/devices/${device.id}/shares/abc`, `/api/devices/${device.id}/shares/0`]) {
      const reply = await owner.delete(url);
      assert.equal(reply.status, 400, url);
      assert.equal(reply.body.code, 'VALIDATION_FAILED');
    }
    assert.deepEqual(await snapshot(server), before);
  });

  it('ends shares, pending ones too, when the device is deleted', async () => {
    const device = await newDevice();
    await owner.post(`/api/devices/${device.id}/shares`, { email: 'friend@example.com', permissions: { position: true } });
    await owner.post(`/api/devices/${device.id}/shares`, { email: 'never-came@example.com', permissions: { position: true } });
    assert.equal((await owner.delete(`/api/devices/${device.id}`)).status, 204);
    const db = server.database!.db;
    assert.deepEqual(await db.selectFrom('device_shares').selectAll().where('device_id', '=', device.id).execute(), []);
    assert.deepEqual(await db.selectFrom('device_invitations').selectAll().where('device_id', '=', device.id).execute(), []);
    assert.equal((await friend.get(`/api/devices/${device.id}`)).status, 404);
  });
});
