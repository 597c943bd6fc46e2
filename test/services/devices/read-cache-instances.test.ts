import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../../src/config.ts';
import { createServer } from '../../../src/server.ts';
import type { Server } from '../../../src/server.ts';
import { signIn } from '../../support/api.ts';
import { createSharedDatabase, testEngines } from '../../support/engines.ts';
import type { SharedTestDatabase } from '../../support/engines.ts';
import { eventually } from '../../support/eventually.ts';
import { scaledOutEnv } from '../../support/server.ts';
import { uniqueId } from './helpers.ts';

const redisUrl = process.env.TEST_REDIS_URL;

interface Account {
  userId: number;
  email: string;
  headers: { authorization: string };
}

/**
 * Two instances on one database and one Redis: each caches users and device lists, and a write
 * on one must reach the other's caches. Every test first reads on B (so B has cached the answer),
 * writes on A, then waits for B to answer afresh.
 */
for (const engine of testEngines()) {
  describe(`device and user caches across two instances [${engine.name}]`, { skip: redisUrl ? false : 'needs TEST_REDIS_URL' }, () => {
    let shared: SharedTestDatabase | undefined;
    let a: Server;
    let b: Server;
    let admin: Account;
    let owner: Account;
    let viewer: Account;

    /** An account made on A; both instances verify its token (one DATA_DIR, one signing key). */
    async function account(email: string, administrator = false): Promise<Account> {
      const { userId, authorization } = await signIn(a, email, { administrator });
      return { userId, email: email.toLowerCase(), headers: authorization };
    }

    async function call(server: Server, user: Account, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) {
      const response = await server.app.inject({ method, url, headers: user.headers, ...(payload ? { payload } : {}) });
      return { status: response.statusCode, body: response.body ? response.json() : undefined };
    }

    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON bodies are asserted field by field
    async function listed(server: Server, user: Account, deviceId: number): Promise<any> {
      const reply = await call(server, user, 'GET', '/api/devices/');
      assert.equal(reply.status, 200);
      return (reply.body as { id: number }[]).find((device) => device.id === deviceId);
    }

    async function newDevice(user: Account): Promise<number> {
      const reply = await call(a, user, 'POST', '/api/devices/', { name: 'Shared', uniqueId: uniqueId('cache-multi') });
      assert.equal(reply.status, 201);
      return reply.body.id as number;
    }

    before(async () => {
      shared = await createSharedDatabase(engine, 'trackstack-cache-multi-');
      const env = scaledOutEnv(shared, redisUrl!);
      a = await createServer(loadConfig(env));
      b = await createServer(loadConfig(env));
      const suffix = `${process.pid}-${engine.name}`;
      admin = await account(`cache-multi-admin-${suffix}@example.com`, true);
      owner = await account(`cache-multi-owner-${suffix}@example.com`);
      viewer = await account(`cache-multi-viewer-${suffix}@example.com`);
    });
    after(async () => {
      await a?.close();
      await b?.close();
      await shared?.dispose();
    });

    it('a share made, changed and ended on A shows on B', async () => {
      const deviceId = await newDevice(owner);
      assert.equal(await listed(b, viewer, deviceId), undefined);
      assert.equal((await call(a, owner, 'POST', `/api/devices/${deviceId}/shares`, { email: viewer.email, permissions: { position: true } })).status, 201);
      await eventually(async () => (await listed(b, viewer, deviceId))?.permissions.position === true, 'B lists the new share');
      assert.equal((await b.devices!.api.accessFor(viewer.userId)).grant(deviceId)?.permissions.position, true);

      assert.equal((await call(a, owner, 'PUT', `/api/devices/${deviceId}/shares/${viewer.userId}`, { permissions: { position: false, events: true } })).status, 200);
      await eventually(async () => (await listed(b, viewer, deviceId))?.permissions.events === true, 'B lists the changed permissions');
      await eventually(async () => (await b.devices!.api.accessFor(viewer.userId)).grant(deviceId)?.permissions.position === false, 'B grants the change');

      assert.equal((await call(a, owner, 'DELETE', `/api/devices/${deviceId}/shares/${viewer.userId}`)).status, 204);
      await eventually(async () => (await listed(b, viewer, deviceId)) === undefined, 'B no longer lists the share');
      await eventually(async () => (await b.devices!.api.accessFor(viewer.userId)).grant(deviceId) === undefined, 'B no longer grants it');
      assert.equal((await call(b, viewer, 'GET', `/api/devices/${deviceId}`)).status, 403);
    });

    it('a device changed, updated by tracking, and deleted on A shows so on B, for its owner and its sharee', async () => {
      const deviceId = await newDevice(owner);
      assert.equal((await call(a, owner, 'POST', `/api/devices/${deviceId}/shares`, { email: viewer.email, permissions: { position: true } })).status, 201);
      await eventually(async () => (await listed(b, viewer, deviceId)) !== undefined, 'B lists the share');
      assert.equal((await listed(b, owner, deviceId))?.name, 'Shared');

      assert.equal((await call(a, owner, 'PUT', `/api/devices/${deviceId}`, { name: 'Renamed' })).status, 200);
      for (const user of [owner, viewer]) await eventually(async () => (await listed(b, user, deviceId))?.name === 'Renamed', 'B shows the new name');

      assert.equal(await a.devices!.api.updateStatus(deviceId, { status: 'online' }), true);
      for (const user of [owner, viewer]) await eventually(async () => (await listed(b, user, deviceId))?.status === 'online', 'B shows the status');

      assert.equal((await call(a, owner, 'DELETE', `/api/devices/${deviceId}`)).status, 204);
      for (const user of [owner, viewer]) await eventually(async () => (await listed(b, user, deviceId)) === undefined, 'B no longer lists it');
      assert.equal((await call(b, owner, 'GET', `/api/devices/${deviceId}`)).status, 404);
    });

    it('a claim token revoked on A leaves the device’s view on B', async () => {
      const unique = uniqueId('cache-multi-claim');
      const provisioned = await call(a, admin, 'POST', '/api/devices/claim-tokens', { uniqueId: unique, modelCode: 'PT-1' });
      assert.equal(provisioned.status, 201);
      const claimed = await call(a, owner, 'POST', '/api/devices/claim', { token: provisioned.body.token });
      assert.equal(claimed.status, 200);
      const deviceId = claimed.body.device.id as number;
      await eventually(async () => (await listed(b, owner, deviceId))?.claimToken === provisioned.body.token, 'B shows the claimed device with its token');
      assert.equal((await call(a, admin, 'DELETE', `/api/devices/claim-tokens/${provisioned.body.token}`)).status, 204);
      await eventually(async () => (await listed(b, owner, deviceId))?.claimToken === undefined, 'B no longer shows the token');
    });

    it('account flags changed on A apply on B: administrator removed, devices made read-only', async () => {
      const helper = await account(`cache-multi-helper-${process.pid}-${engine.name}@example.com`, true);
      assert.equal((await call(b, helper, 'GET', `/api/devices/?userId=${owner.userId}`)).status, 200);
      assert.equal((await call(a, admin, 'PUT', `/api/auth/users/${helper.userId}`, { administrator: false })).status, 200);
      await eventually(async () => (await call(b, helper, 'GET', `/api/devices/?userId=${owner.userId}`)).status === 403, 'B refuses the listing');

      assert.equal((await call(b, owner, 'GET', '/api/devices/')).status, 200);
      assert.equal((await call(a, admin, 'PUT', `/api/auth/users/${owner.userId}`, { deviceReadonly: true })).status, 200);
      const attempt = () => call(b, owner, 'POST', '/api/devices/', { name: 'Refused', uniqueId: uniqueId('cache-multi') });
      await eventually(async () => (await attempt()).status === 403, 'B refuses device changes');
      assert.equal((await call(a, admin, 'PUT', `/api/auth/users/${owner.userId}`, { deviceReadonly: false })).status, 200);
      await eventually(async () => (await attempt()).status === 201, 'B allows them again');
    });
  });
}
