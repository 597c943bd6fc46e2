import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer, TEST_INTERNAL_TOKEN } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { nestedJson } from '../../support/nested-json.ts';
import { signIn } from '../../support/api.ts';
import { Client, setUserFlags, snapshot, uniqueId } from './helpers.ts';

const ALL = { position: true, events: true, geofences: true, notifications: true, commands: true };

describeEachEngine('device routes', (engine) => {
  let server: TestServer;
  let owner: Client;
  let other: Client;
  let admin: Client;

  before(async () => {
    server = await startTestServer(engine);
    owner = new Client(server, await signIn(server, 'owner@example.com'));
    other = new Client(server, await signIn(server, 'other@example.com'));
    admin = new Client(server, await signIn(server, 'admin@example.com', { administrator: true }));
  });
  after(() => server.dispose());

  it('creates a device with every field and reads it back', async () => {
    const id = uniqueId();
    const created = await owner.post('/api/devices', {
      name: 'Car',
      uniqueId: id,
      phone: '+15550100',
      model: 'GT06N',
      contact: 'Alice',
      category: 'car',
      groupId: 7,
      attributes: { speedLimit: 60, nested: { a: [1, 'b'] } },
    });
    assert.equal(created.status, 201);
    assert.deepEqual(created.body, {
      id: created.body.id,
      name: 'Car',
      uniqueId: id,
      status: 'offline',
      lastUpdate: null,
      positionId: null,
      phone: '+15550100',
      model: 'GT06N',
      contact: 'Alice',
      category: 'car',
      disabled: false,
      expirationTime: null,
      groupId: 7,
      calendarId: null,
      attributes: { speedLimit: 60, nested: { a: [1, 'b'] } },
      isOwner: true,
      permissions: ALL,
    });
    assert.ok(Number.isInteger(created.body.id));
    const read = await owner.get(`/api/devices/${created.body.id}`);
    assert.equal(read.status, 200);
    assert.deepEqual(read.body, created.body);
  });

  it('creates with only the required fields, optional ones null', async () => {
    const created = await owner.post('/api/devices', { name: 'Bare', uniqueId: uniqueId() });
    assert.equal(created.status, 201);
    assert.equal(created.body.phone, null);
    assert.equal(created.body.groupId, null);
    assert.deepEqual(created.body.attributes, {});
  });

  it('answers 409 DEVICE_EXISTS for a taken uniqueId, whoever owns it, and changes nothing', async () => {
    const id = uniqueId();
    assert.equal((await owner.post('/api/devices', { name: 'First', uniqueId: id })).status, 201);
    const before = await snapshot(server);
    for (const client of [owner, other, admin]) {
      const again = await client.post('/api/devices', { name: 'Second', uniqueId: id });
      assert.equal(again.status, 409);
      assert.equal(again.body.code, 'DEVICE_EXISTS');
    }
    assert.deepEqual(await snapshot(server), before);
  });

  it('lists owned and shared devices, filtered by repeatable id and uniqueId', async () => {
    const lister = new Client(server, await signIn(server, 'lister@example.com'));
    const sharer = new Client(server, await signIn(server, 'sharer@example.com'));
    const mine = [];
    for (let index = 0; index < 3; index++) mine.push((await lister.post('/api/devices', { name: `Mine ${index}`, uniqueId: uniqueId('list') })).body);
    const theirs = (await sharer.post('/api/devices', { name: 'Theirs', uniqueId: uniqueId('list') })).body;
    const shared = await sharer.post(`/api/devices/${theirs.id}/shares`, { email: 'lister@example.com', permissions: { position: true } });
    assert.equal(shared.status, 201);

    const all = await lister.get('/api/devices');
    assert.equal(all.status, 200);
    assert.deepEqual(
      all.body.map((device: { id: number }) => device.id),
      [...mine.map((device) => device.id), theirs.id],
    );
    const sharedView = all.body.at(-1);
    assert.equal(sharedView.isOwner, false);
    assert.equal(sharedView.sharedBy, sharer.userId);
    assert.deepEqual(sharedView.permissions, { position: true, events: false, geofences: false, notifications: false, commands: false });

    const byIds = await lister.get(`/api/devices?id=${mine[0].id}&id=${theirs.id}`);
    assert.deepEqual(
      byIds.body.map((device: { id: number }) => device.id),
      [mine[0].id, theirs.id],
    );
    const byUniqueIds = await lister.get(`/api/devices?uniqueId=${encodeURIComponent(mine[1].uniqueId)}&uniqueId=${encodeURIComponent(theirs.uniqueId)}`);
    assert.deepEqual(
      byUniqueIds.body.map((device: { id: number }) => device.id),
      [mine[1].id, theirs.id],
    );
    const single = await lister.get(`/api/devices?id=${mine[2].id}`);
    assert.deepEqual(
      single.body.map((device: { id: number }) => device.id),
      [mine[2].id],
    );
    const stranger = await other.get(`/api/devices?id=${mine[0].id}`);
    assert.deepEqual(stranger.body, [], 'filters never widen what a user sees');
  });

  it('lets only administrators list another user’s devices, as that user sees them', async () => {
    const device = (await owner.post('/api/devices', { name: 'Listed', uniqueId: uniqueId() })).body;
    const refused = await other.get(`/api/devices?userId=${owner.userId}`);
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'FORBIDDEN');
    const self = await owner.get(`/api/devices?userId=${owner.userId}`);
    assert.equal(self.status, 200);
    const listed = await admin.get(`/api/devices?userId=${owner.userId}`);
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body, self.body);
    assert.ok(listed.body.some((row: { id: number; isOwner: boolean }) => row.id === device.id && row.isOwner));
    const nobody = await admin.get('/api/devices?userId=999999');
    assert.deepEqual(nobody.body, []);
  });

  it('updates the changeable fields and clears optional ones with null', async () => {
    const device = (await owner.post('/api/devices', { name: 'Before', uniqueId: uniqueId(), phone: '1', groupId: 3, attributes: { a: 1 } })).body;
    const updated = await owner.put(`/api/devices/${device.id}`, {
      name: 'After',
      phone: null,
      model: 'M',
      contact: 'C',
      category: 'truck',
      groupId: null,
      disabled: true,
      attributes: { b: true },
    });
    assert.equal(updated.status, 200);
    assert.equal(updated.body.name, 'After');
    assert.equal(updated.body.phone, null);
    assert.equal(updated.body.model, 'M');
    assert.equal(updated.body.contact, 'C');
    assert.equal(updated.body.category, 'truck');
    assert.equal(updated.body.groupId, null);
    assert.equal(updated.body.disabled, true);
    assert.deepEqual(updated.body.attributes, { b: true });
    assert.equal(updated.body.uniqueId, device.uniqueId);
    assert.deepEqual((await owner.get(`/api/devices/${device.id}`)).body, updated.body);

    const partial = await owner.put(`/api/devices/${device.id}`, { name: 'Renamed' });
    assert.equal(partial.body.name, 'Renamed');
    assert.equal(partial.body.model, 'M', 'fields left out keep their value');
  });

  it('deletes a device: 204, then 404, publishing devices.device.deleted', async () => {
    const device = (await owner.post('/api/devices', { name: 'Gone', uniqueId: uniqueId() })).body;
    const published: number[] = [];
    server.bus.on('devices.device.deleted', ({ deviceId }) => {
      published.push(deviceId);
    });
    const deleted = await owner.delete(`/api/devices/${device.id}`);
    assert.equal(deleted.status, 204);
    assert.equal(deleted.body, undefined);
    assert.deepEqual(published, [device.id]);
    assert.equal((await owner.get(`/api/devices/${device.id}`)).status, 404);
    const again = await owner.delete(`/api/devices/${device.id}`);
    assert.equal(again.status, 404);
    assert.equal(again.body.code, 'NOT_FOUND');
    assert.deepEqual(published, [device.id], 'nothing is published for a device that was not there');
    const recreated = await owner.post('/api/devices', { name: 'Back', uniqueId: device.uniqueId });
    assert.equal(recreated.status, 201, 'the uniqueId is free again');
  });

  it('refuses device changes to readonly and deviceReadonly accounts, not their reads', async () => {
    for (const [flags, code] of [[{ deviceReadonly: true }, 'USER_DEVICE_READONLY'], [{ readonly: true }, 'USER_READONLY']] as const) {
      const user = new Client(server, await signIn(server, `restricted-${Object.keys(flags)[0]}@example.com`));
      const device = (await user.post('/api/devices', { name: 'Mine', uniqueId: uniqueId() })).body;
      await setUserFlags(server, user.userId, flags);
      const before = await snapshot(server);
      const created = await user.post('/api/devices', { name: 'New', uniqueId: uniqueId() });
      const updated = await user.put(`/api/devices/${device.id}`, { name: 'Changed' });
      const deleted = await user.delete(`/api/devices/${device.id}`);
      const shared = await user.post(`/api/devices/${device.id}/shares`, { email: 'other@example.com', permissions: {} });
      for (const reply of [created, updated, deleted, shared]) {
        assert.equal(reply.status, 403);
        assert.equal(reply.body.code, code);
      }
      assert.deepEqual(await snapshot(server), before);
      assert.equal((await user.get(`/api/devices/${device.id}`)).status, 200);
      assert.equal((await user.get('/api/devices')).body.length, 1);
    }
  });

  it('lets an administrator change a readonly user’s device', async () => {
    const user = new Client(server, await signIn(server, 'restricted-admin-target@example.com'));
    const device = (await user.post('/api/devices', { name: 'Mine', uniqueId: uniqueId() })).body;
    await setUserFlags(server, user.userId, { deviceReadonly: true });
    const updated = await admin.put(`/api/devices/${device.id}`, { name: 'By admin' });
    assert.equal(updated.status, 200);
    assert.equal(updated.body.isOwner, false);
    assert.deepEqual(updated.body.permissions, ALL);
  });

  it('needs a token on every device route but validate-token and health', async () => {
    const anonymous = new Client(server);
    const device = (await owner.post('/api/devices', { name: 'Anon', uniqueId: uniqueId() })).body;
    const protectedRoutes: [string, string][] = [
      ['GET', '/api/devices'],
      ['POST', '/api/devices'],
      ['GET', `/api/devices/${device.id}`],
      ['PUT', `/api/devices/${device.id}`],
      ['DELETE', `/api/devices/${device.id}`],
      ['POST', '/api/devices/claim'],
      ['POST', `/api/devices/${device.id}/shares`],
      ['GET', `/api/devices/${device.id}/shares`],
      ['PUT', `/api/devices/${device.id}/shares/1`],
      ['DELETE', `/api/devices/${device.id}/shares/1`],
      ['GET', '/api/devices/claim-tokens'],
      ['POST', '/api/devices/claim-tokens'],
      ['GET', '/api/devices/claim-tokens/AAAA-AAAA-AAAA'],
      ['PUT', '/api/devices/claim-tokens/AAAA-AAAA-AAAA'],
      ['DELETE', '/api/devices/claim-tokens/AAAA-AAAA-AAAA'],
    ];
    for (const [method, url] of protectedRoutes) {
      const reply = await anonymous.request(method as 'GET', url, method === 'POST' || method === 'PUT' ? {} : undefined);
      assert.equal(reply.status, 401, `${method} ${url}`);
      assert.equal(reply.body.code, 'UNAUTHORIZED');
    }
    const forged = await server.app.inject({ method: 'GET', url: '/api/devices', headers: { 'x-user-id': String(owner.userId) } });
    assert.equal(forged.statusCode, 401, 'a client-sent X-User-Id is ignored');
    assert.equal((await anonymous.get('/api/devices/health')).status, 200);
    assert.equal((await anonymous.post('/api/devices/validate-token', { token: '' })).status, 200);
  });

  it('reports health with the database state', async () => {
    const health = await new Client(server).get('/api/devices/health');
    assert.deepEqual(health.body, { status: 'healthy', service: 'device', ready: true, database: 'connected' });
  });

  it('refuses bad input with 400 and changes nothing', async () => {
    const device = (await owner.post('/api/devices', { name: 'Valid', uniqueId: uniqueId() })).body;
    const before = await snapshot(server);
    const badCreates: [unknown, string][] = [
      [{}, '/body/name'],
      [{ name: 'x' }, '/body/uniqueId'],
      [{ uniqueId: uniqueId() }, '/body/name'],
      [{ name: '', uniqueId: uniqueId() }, '/body/name'],
      [{ name: '   ', uniqueId: uniqueId() }, '/body/name'],
      [{ name: 'x', uniqueId: '' }, '/body/uniqueId'],
      [{ name: 'x', uniqueId: 'has space' }, '/body/uniqueId'],
      [{ name: 123, uniqueId: uniqueId() }, '/body/name'],
      [{ name: 'x', uniqueId: 12345 }, '/body/uniqueId'],
      [{ name: 'x'.repeat(129), uniqueId: uniqueId() }, '/body/name'],
      [{ name: 'x', uniqueId: 'u'.repeat(129) }, '/body/uniqueId'],
      [{ name: 'x', uniqueId: uniqueId(), phone: 'p'.repeat(65) }, '/body/phone'],
      [{ name: 'x', uniqueId: uniqueId(), contact: 'c'.repeat(513) }, '/body/contact'],
      [{ name: 'x', uniqueId: uniqueId(), phone: '' }, '/body/phone'],
      [{ name: 'x', uniqueId: uniqueId(), groupId: 'one' }, '/body/groupId'],
      [{ name: 'x', uniqueId: uniqueId(), groupId: 1.5 }, '/body/groupId'],
      [{ name: 'x', uniqueId: uniqueId(), groupId: 0 }, '/body/groupId'],
      [{ name: 'x', uniqueId: uniqueId(), attributes: [] }, '/body/attributes'],
      [{ name: 'x', uniqueId: uniqueId(), attributes: 'text' }, '/body/attributes'],
      [{ name: 'x', uniqueId: uniqueId(), attributes: { big: 'y'.repeat(20_000) } }, '/body/attributes'],
      [{ name: 'x', uniqueId: uniqueId(), status: 'online' }, '/body/status'],
      [{ name: 'x', uniqueId: uniqueId(), ownerId: other.userId }, '/body/ownerId'],
      [{ name: 'x', uniqueId: uniqueId(), deviceToken: '' }, '/body/deviceToken'],
      [{ name: 'x', uniqueId: uniqueId(), disabled: true }, '/body/disabled'],
    ];
    for (const [payload, path] of badCreates) {
      const reply = await owner.post('/api/devices', payload);
      assert.equal(reply.status, 400, JSON.stringify(payload).slice(0, 80));
      assert.equal(reply.body.code, 'VALIDATION_FAILED');
      assert.equal(reply.body.details[0].path, path, JSON.stringify(payload).slice(0, 80));
    }
    const badUpdates: unknown[] = [
      { name: '' },
      { name: null },
      { disabled: 'yes' },
      { uniqueId: 'changed' },
      { status: 'online' },
      { positionId: 5 },
      { attributes: null },
      { phone: 5 },
    ];
    for (const payload of badUpdates) {
      const reply = await owner.put(`/api/devices/${device.id}`, payload);
      assert.equal(reply.status, 400, JSON.stringify(payload));
      assert.equal(reply.body.code, 'VALIDATION_FAILED');
    }
    const malformed = await owner.request('POST', '/api/devices', '{"name": ');
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.code, 'MALFORMED_JSON');
    for (const url of ['/api/devices/abc', '/api/devices/0', '/api/devices/-1', '/api/devices/1.5', '/api/devices/99999999999999999999']) {
      const reply = await owner.get(url);
      assert.equal(reply.status, 400, url);
      assert.equal(reply.body.code, 'VALIDATION_FAILED');
    }
    for (const query of ['userId=abc', 'id=x', `uniqueId=${'u'.repeat(129)}`]) {
      const reply = await owner.get(`/api/devices?${query}`);
      assert.equal(reply.status, 400, query);
      assert.equal(reply.body.code, 'VALIDATION_FAILED');
    }
    assert.deepEqual(await snapshot(server), before);
  });

  it('refuses deep or large attributes on create and update with 400 naming the path, and changes nothing', async () => {
    const device = (await owner.post('/api/devices', { name: 'Attributed', uniqueId: uniqueId(), attributes: { keep: true } })).body;
    const deepest = await owner.put(`/api/devices/${device.id}`, `{"attributes":${nestedJson(8)}}`);
    assert.equal(deepest.status, 200, 'eight levels are allowed');
    const before = await snapshot(server);
    const refused: [string, string][] = [
      [`{"attributes":${nestedJson(9)}}`, `/body/attributes${'/a'.repeat(9)}`],
      [`{"attributes":${nestedJson(5000)}}`, `/body/attributes${'/a'.repeat(32)}`],
      [JSON.stringify({ attributes: { big: 'y'.repeat(16_384) } }), '/body/attributes'],
    ];
    for (const [attributes, path] of refused) {
      const create = await owner.request('POST', '/api/devices', `{"name":"x","uniqueId":"${uniqueId()}",${attributes.slice(1)}`);
      const update = await owner.request('PUT', `/api/devices/${device.id}`, attributes);
      for (const reply of [create, update]) {
        assert.equal(reply.status, 400, reply.body.message);
        assert.equal(reply.body.code, 'VALIDATION_FAILED');
        assert.equal(reply.body.details[0].path, path);
      }
    }
    assert.deepEqual(await snapshot(server), before);
  });

  it('answers 404 for a device that does not exist, on every device route', async () => {
    const missing = 987654321;
    for (const [method, url, payload] of [
      ['GET', `/api/devices/${missing}`, undefined],
      ['PUT', `/api/devices/${missing}`, { name: 'x' }],
      ['DELETE', `/api/devices/${missing}`, undefined],
      ['POST', `/api/devices/${missing}/shares`, { email: 'other@example.com', permissions: {} }],
      ['GET', `/api/devices/${missing}/shares`, undefined],
      ['PUT', `/api/devices/${missing}/shares/${other.userId}`, { permissions: {} }],
      ['DELETE', `/api/devices/${missing}/shares/${other.userId}`, undefined],
    ] as const) {
      for (const client of [owner, admin]) {
        const reply = await client.request(method, url, payload);
        assert.equal(reply.status, 404, `${method} ${url}`);
        assert.equal(reply.body.code, 'NOT_FOUND');
      }
    }
  });
});

describeEachEngine('device routes without the auth module in the process', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine, { SERVICES: 'devices' });
  });
  after(() => server.dispose());

  it('keeps health and the public preview up, and answers 502 where a user must be looked up', async () => {
    const health = await server.app.inject({ method: 'GET', url: '/api/devices/health' });
    assert.deepEqual(health.json(), { status: 'healthy', service: 'device', ready: true, database: 'connected' });
    const preview = await server.app.inject({ method: 'POST', url: '/api/devices/validate-token', payload: { token: 'ZZZZ-ZZZZ-ZZZZ' } });
    assert.equal(preview.statusCode, 200);
    assert.equal(preview.json().errorCode, 'TOKEN_INVALID');
    const asUser = { 'x-internal-token': TEST_INTERNAL_TOKEN, 'x-user-id': '1' };
    const list = await server.app.inject({ method: 'GET', url: '/api/devices', headers: asUser });
    assert.equal(list.statusCode, 502);
    assert.equal(list.json().code, 'UPSTREAM_UNAVAILABLE');
    const forged = await server.app.inject({ method: 'GET', url: '/api/devices', headers: { 'x-user-id': '1' } });
    assert.equal(forged.statusCode, 401, 'without the internal token X-User-Id is not trusted');
  });
});
