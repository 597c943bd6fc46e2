import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { signIn } from '../../support/api.ts';
import { Client, snapshot, uniqueId } from './helpers.ts';
import type { Reply } from './helpers.ts';

type Permissions = Record<'position' | 'events' | 'geofences' | 'notifications' | 'commands', boolean>;
const NONE: Permissions = { position: false, events: false, geofences: false, notifications: false, commands: false };
const ALL: Permissions = { position: true, events: true, geofences: true, notifications: true, commands: true };
const SINGLE = Object.keys(NONE) as (keyof Permissions)[];

type Role = 'owner' | 'administrator' | 'stranger' | 'shared:none' | `shared:${keyof Permissions}`;
const ROLES: Role[] = ['owner', ...SINGLE.map((permission) => `shared:${permission}` as Role), 'shared:none', 'stranger', 'administrator'];

/** A claimed device, shared with one user per single permission and one with none. */
interface Fixture {
  device: Record<string, unknown> & { id: number; claimToken: string };
  clients: Record<Role, Client>;
  permissionsOf(role: Role): Permissions;
}

describeEachEngine('device access matrix', (engine) => {
  let server: TestServer;
  let clients: Record<Role, Client>;
  let spare: Client;

  before(async () => {
    server = await startTestServer(engine);
    const entries: [Role, Client][] = [];
    for (const role of ROLES) {
      entries.push([role, new Client(server, await signIn(server, `${role.replace(':', '-')}@example.com`, { administrator: role === 'administrator' }))]);
    }
    clients = Object.fromEntries(entries) as Record<Role, Client>;
    spare = new Client(server, await signIn(server, 'spare@example.com'));
  });
  after(() => server.dispose());

  const emailOf = (role: Role) => `${role.replace(':', '-')}@example.com`;

  async function fixture(): Promise<Fixture> {
    const id = uniqueId('matrix');
    const token = await clients.administrator.post('/api/devices/claim-tokens', { uniqueId: id, modelCode: 'PT-1', modelName: 'Pet Tracker' });
    assert.equal(token.status, 201);
    const claimed = await clients.owner.post('/api/devices/claim', { token: token.body.token });
    assert.equal(claimed.status, 200);
    const device = claimed.body.device;
    assert.equal(device.claimToken, token.body.token);
    for (const role of ROLES.filter((candidate) => candidate.startsWith('shared:'))) {
      const permission = role.slice('shared:'.length);
      const permissions = permission === 'none' ? {} : { [permission]: true };
      const share = await clients.owner.post(`/api/devices/${device.id}/shares`, { email: emailOf(role), permissions });
      assert.equal(share.status, 201);
    }
    return {
      device,
      clients,
      permissionsOf(role) {
        if (role === 'owner' || role === 'administrator') return ALL;
        const permission = role.slice('shared:'.length);
        return permission === 'none' ? NONE : { ...NONE, [permission]: true };
      },
    };
  }

  /** The device as each role must see it; undefined when the role may not see it. */
  function expectedView(f: Fixture, role: Role): Record<string, unknown> | undefined {
    const { claimToken: _claimToken, isOwner: _isOwner, permissions: _permissions, ...common } = f.device;
    if (role === 'owner') return f.device;
    if (role === 'stranger') return undefined;
    if (role === 'administrator') return { ...common, isOwner: false, permissions: ALL };
    return { ...common, isOwner: false, permissions: f.permissionsOf(role), sharedBy: f.clients.owner.userId };
  }

  function assertForbidden(reply: Reply, context: string): void {
    assert.equal(reply.status, 403, context);
    assert.equal(reply.body.code, 'FORBIDDEN', context);
    assert.equal(reply.body.statusCode, 403, context);
    assert.equal(typeof reply.body.message, 'string', context);
  }

  it('GET /api/devices/{id}: owner, shared users and administrators see their view; strangers 403', async () => {
    const f = await fixture();
    for (const role of ROLES) {
      const reply = await clients[role].get(`/api/devices/${f.device.id}`);
      const expected = expectedView(f, role);
      if (expected === undefined) assertForbidden(reply, role);
      else {
        assert.equal(reply.status, 200, role);
        assert.deepEqual(reply.body, expected, role);
      }
    }
  });

  it('GET /api/devices: each role’s own list holds the device exactly when it was owned or shared', async () => {
    const f = await fixture();
    for (const role of ROLES) {
      const reply = await clients[role].get(`/api/devices?id=${f.device.id}`);
      assert.equal(reply.status, 200, role);
      const expected = role === 'administrator' || role === 'stranger' ? [] : [expectedView(f, role)];
      assert.deepEqual(reply.body, expected, role);
    }
  });

  it('PUT /api/devices/{id}: owner and administrator only', async () => {
    const f = await fixture();
    for (const role of ROLES) {
      const before = await snapshot(server);
      const reply = await clients[role].put(`/api/devices/${f.device.id}`, { name: `Renamed by ${role}` });
      if (role === 'owner' || role === 'administrator') {
        assert.equal(reply.status, 200, role);
        assert.deepEqual(reply.body, { ...expectedView(f, role), name: `Renamed by ${role}` }, role);
      } else {
        assertForbidden(reply, role);
        assert.deepEqual(await snapshot(server), before, role);
      }
    }
  });

  it('DELETE /api/devices/{id}: owner and administrator only', async () => {
    for (const role of ROLES) {
      const f = await fixture();
      const before = await snapshot(server);
      const reply = await clients[role].delete(`/api/devices/${f.device.id}`);
      if (role === 'owner' || role === 'administrator') {
        assert.equal(reply.status, 204, role);
        assert.equal((await clients.owner.get(`/api/devices/${f.device.id}`)).status, 404, role);
      } else {
        assertForbidden(reply, role);
        assert.deepEqual(await snapshot(server), before, role);
      }
    }
  });

  it('POST /api/devices/{id}/shares: owner and administrator only', async () => {
    const f = await fixture();
    for (const role of ROLES) {
      const before = await snapshot(server);
      const reply = await clients[role].post(`/api/devices/${f.device.id}/shares`, { email: 'spare@example.com', permissions: { events: true } });
      if (role === 'owner' || role === 'administrator') {
        assert.equal(reply.status, 201, role);
        assert.deepEqual(
          { ...reply.body, createdAt: undefined, updatedAt: undefined },
          {
            deviceId: f.device.id,
            userId: null,
            email: 'spare@example.com',
            name: null,
            permissions: { ...NONE, events: true },
            sharedBy: clients[role].userId,
            createdAt: undefined,
            updatedAt: undefined,
          },
          role,
        );
        assert.equal((await clients.owner.delete(`/api/devices/${f.device.id}/shares/${spare.userId}`)).status, 204);
      } else {
        assertForbidden(reply, role);
        assert.deepEqual(await snapshot(server), before, role);
      }
    }
  });

  it('GET /api/devices/{id}/shares: owner and administrator only', async () => {
    const f = await fixture();
    const sharedRoles = ROLES.filter((role) => role.startsWith('shared:'));
    for (const role of ROLES) {
      const reply = await clients[role].get(`/api/devices/${f.device.id}/shares`);
      if (role === 'owner' || role === 'administrator') {
        assert.equal(reply.status, 200, role);
        assert.deepEqual(
          reply.body.map((share: { userId: number; email: string; permissions: Permissions; sharedBy: number }) => [
            share.userId,
            share.email,
            share.permissions,
            share.sharedBy,
          ]),
          sharedRoles
            .map((shared) => [clients[shared].userId, emailOf(shared), f.permissionsOf(shared), clients.owner.userId])
            .sort((a, b) => (a[0] as number) - (b[0] as number)),
          role,
        );
      } else {
        assertForbidden(reply, role);
      }
    }
  });

  it('PUT /api/devices/{id}/shares/{userId}: owner and administrator only', async () => {
    const f = await fixture();
    const target = clients['shared:none'];
    for (const role of ROLES) {
      const before = await snapshot(server);
      const reply = await clients[role].put(`/api/devices/${f.device.id}/shares/${target.userId}`, { permissions: { commands: true } });
      if (role === 'owner' || role === 'administrator') {
        assert.equal(reply.status, 200, role);
        assert.deepEqual(reply.body.permissions, { ...NONE, commands: true }, role);
        assert.equal((await clients.owner.put(`/api/devices/${f.device.id}/shares/${target.userId}`, { permissions: { commands: false } })).status, 200);
      } else {
        assertForbidden(reply, role);
        assert.deepEqual(await snapshot(server), before, role);
      }
    }
  });

  it('DELETE /api/devices/{id}/shares/{userId}: owner and administrator, or the shared user for their own share', async () => {
    for (const role of ROLES) {
      const f = await fixture();
      const target = role === 'shared:events' ? clients['shared:position'] : clients['shared:events'];
      const before = await snapshot(server);
      const reply = await clients[role].delete(`/api/devices/${f.device.id}/shares/${target.userId}`);
      if (role === 'owner' || role === 'administrator') {
        assert.equal(reply.status, 204, role);
        assert.equal((await target.get(`/api/devices/${f.device.id}`)).status, 403, role);
      } else {
        assertForbidden(reply, role);
        assert.deepEqual(await snapshot(server), before, role);
      }
      if (role.startsWith('shared:')) {
        const own = await clients[role].delete(`/api/devices/${f.device.id}/shares/${clients[role].userId}`);
        assert.equal(own.status, 204, `${role} leaves their own share`);
        assert.equal((await clients[role].get(`/api/devices/${f.device.id}`)).status, 403, role);
      }
    }
  });

  it('claim-token administration: administrators only', async () => {
    const f = await fixture();
    const token = f.device.claimToken;
    for (const role of ROLES.filter((candidate) => candidate !== 'administrator')) {
      const before = await snapshot(server);
      for (const [method, url, payload] of [
        ['GET', '/api/devices/claim-tokens', undefined],
        ['POST', '/api/devices/claim-tokens', { modelCode: 'X' }],
        ['GET', `/api/devices/claim-tokens/${token}`, undefined],
        ['PUT', `/api/devices/claim-tokens/${token}`, { modelName: 'Y' }],
        ['DELETE', `/api/devices/claim-tokens/${token}`, undefined],
      ] as const) {
        assertForbidden(await clients[role].request(method, url, payload), `${role} ${method} ${url}`);
      }
      assert.deepEqual(await snapshot(server), before, role);
    }
  });
});
