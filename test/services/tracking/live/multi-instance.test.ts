import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { request } from 'undici';
import { loadConfig } from '../../../../src/config.ts';
import { createServer } from '../../../../src/server.ts';
import type { Server } from '../../../../src/server.ts';
import { signIn } from '../../../support/api.ts';
import { osmAndQuery } from '../../../../src/services/tracking/protocols/osmand/simulator.ts';
import { createSharedDatabase, testEngines } from '../../../support/engines.ts';
import type { SharedTestDatabase } from '../../../support/engines.ts';
import { scaledOutEnv } from '../../../support/server.ts';
import { fixAt } from '../ingest/support.ts';
import { LiveClient, socketUrl } from './support.ts';
import type { LiveMessage } from './support.ts';

const redisUrl = process.env.TEST_REDIS_URL;

interface Account {
  userId: number;
  email: string;
  sessionId: string;
  headers: { authorization: string };
}

/** DESIGN §6: a position ingested by one instance reaches a WebSocket client of the other, through Redis. */
for (const engine of testEngines()) {
  describe(`live updates across two instances [${engine.name}]`, { skip: redisUrl ? false : 'needs TEST_REDIS_URL' }, () => {
    let shared: SharedTestDatabase | undefined;
    let first: Server;
    let second: Server;
    let secondUrl: string;
    let open: LiveClient[] = [];

    /** An account made on the first instance; both verify its token (one DATA_DIR, one signing key). */
    async function account(email: string): Promise<Account> {
      const { userId, sessionId, authorization } = await signIn(first, email);
      return { userId, email, sessionId, headers: authorization };
    }

    async function device(owner: Account, uniqueId: string): Promise<number> {
      const response = await first.app.inject({ method: 'POST', url: '/api/devices/', headers: owner.headers, payload: { name: uniqueId, uniqueId } });
      assert.equal(response.statusCode, 201, response.body);
      return response.json().id as number;
    }

    async function connect(target: string, user: Account): Promise<LiveClient> {
      const client = await LiveClient.open(target, { headers: user.headers });
      open.push(client);
      assert.ok(((await client.next()) as LiveMessage).positions);
      return client;
    }

    before(async () => {
      shared = await createSharedDatabase(engine, 'trackstack-live-multi-');
      const env = scaledOutEnv(shared, redisUrl!);
      first = await createServer(loadConfig(env));
      second = await createServer(loadConfig(env));
      secondUrl = await socketUrl(second.app);
    });
    afterEach(async () => {
      for (const client of open) client.close();
      await Promise.all(open.map((client) => client.closed));
      open = [];
    });
    after(async () => {
      await first?.close();
      await second?.close();
      await shared?.dispose();
    });

    it('a position ingested by one instance reaches a socket of the other, once', async () => {
      const owner = await account(`live-multi-${Date.now()}@example.com`);
      const deviceId = await device(owner, `live-multi-${Date.now()}`);
      const uniqueId = ((await first.app.inject({ url: `/api/devices/${deviceId}`, headers: owner.headers })).json() as { uniqueId: string }).uniqueId;
      const remote = await connect(secondUrl, owner);
      const local = await connect(await socketUrl(first.app), owner);

      assert.ok(first.tracking);
      const port = await first.tracking.ingestion.listen('osmand', 0);
      for (const seconds of [0, 1]) {
        const response = await request(`http://127.0.0.1:${port}/?${osmAndQuery(uniqueId, fixAt(seconds))}`);
        await response.body.dump();
        assert.equal(response.statusCode, 200);
      }
      const stored = (await first.app.inject({ url: `/api/positions?deviceId=${deviceId}&from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z`, headers: owner.headers })).json() as { id: number }[];
      assert.equal(stored.length, 2);

      // Each socket gets each position exactly once: its own instance pushes, the other does not.
      for (const client of [remote, local]) {
        const received: number[] = [];
        while (received.length < stored.length) received.push(...((await client.nextOf('positions')).map((item) => item.id)));
        assert.deepEqual(received, stored.map((item) => item.id));
      }
    });

    it('a logout on one instance closes the session’s socket on the other with 4401', async () => {
      const user = await account(`live-multi-logout-${Date.now()}@example.com`);
      const remote = await connect(secondUrl, user);
      const logout = await first.app.inject({ method: 'DELETE', url: '/api/auth/logout', headers: user.headers });
      assert.equal(logout.statusCode, 204, logout.body);
      assert.deepEqual(await remote.waitClosed(), { code: 4401, reason: 'session revoked' });
    });

    it('a share made on one instance reaches the sharee’s socket on the other', async () => {
      const owner = await account(`live-multi-owner-${Date.now()}@example.com`);
      const sharee = await account(`live-multi-sharee-${Date.now()}@example.com`);
      const deviceId = await device(owner, `live-multi-shared-${Date.now()}`);
      const remote = await connect(secondUrl, sharee);
      const shared = await first.app.inject({
        method: 'POST',
        url: `/api/devices/${deviceId}/shares`,
        headers: owner.headers,
        payload: { email: sharee.email, permissions: { position: true, events: false, geofences: false, notifications: false, commands: false } },
      });
      assert.equal(shared.statusCode, 201, shared.body);
      const devices = await remote.nextOf('devices');
      assert.deepEqual(
        devices.map((item) => [item.id, item.isOwner]),
        [[deviceId, false]],
      );
    });
  });
}
