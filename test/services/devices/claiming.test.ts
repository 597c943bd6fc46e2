import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { describeEachEngine, testEngines } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { signIn } from '../../support/api.ts';
import { Client, setUserFlags, snapshot, uniqueId } from './helpers.ts';

interface Token {
  token: string;
  uniqueId: string | null;
  status: string;
}

describeEachEngine('claiming devices', (engine) => {
  let server: TestServer;
  let admin: Client;
  let buyer: Client;
  let rival: Client;
  let anonymous: Client;

  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off' });
    admin = new Client(server, await signIn(server, 'claim-admin@example.com', { administrator: true }));
    buyer = new Client(server, await signIn(server, 'buyer@example.com'));
    rival = new Client(server, await signIn(server, 'rival@example.com'));
    anonymous = new Client(server);
  });
  after(() => server.dispose());

  async function provision(fields: { uniqueId?: string | null; modelCode?: string; modelName?: string; transfer?: boolean } = {}): Promise<Token> {
    const body = { uniqueId: uniqueId('claim'), modelCode: 'PT-1', modelName: 'Pet Tracker Mini', ...fields };
    if (body.uniqueId === null) delete (body as { uniqueId?: unknown }).uniqueId;
    const reply = await admin.post('/api/devices/claim-tokens', body);
    assert.equal(reply.status, 201);
    return reply.body;
  }

  const validate = (client: Client, token: unknown) => client.post('/api/devices/validate-token', token === undefined ? {} : { token });

  describe('validate-token', () => {
    it('previews an unclaimed token, whatever its case, dashes or spaces', async () => {
      const token = await provision({ modelCode: 'PT-2', modelName: 'Pet Tracker Max' });
      const plain = token.token.replace(/-/g, '');
      for (const typed of [token.token, plain, plain.toLowerCase(), ` ${token.token.toLowerCase()} `, plain.split('').join('-')]) {
        const reply = await validate(anonymous, typed);
        assert.equal(reply.status, 200, typed);
        assert.deepEqual(reply.body, { success: true, uniqueId: token.uniqueId, model: 'Pet Tracker Max', modelCode: 'PT-2' }, typed);
      }
    });

    it('uses modelCode as the display name when no modelName was given', async () => {
      const reply = await admin.post('/api/devices/claim-tokens', { uniqueId: uniqueId(), modelCode: 'BARE-1' });
      const preview = await validate(anonymous, reply.body.token);
      assert.deepEqual(preview.body, { success: true, uniqueId: reply.body.uniqueId, model: 'BARE-1', modelCode: 'BARE-1' });
    });

    it('answers TOKEN_REQUIRED for a missing, empty or blank token, with 200', async () => {
      for (const payload of [{}, { token: '' }, { token: '   ' }]) {
        const reply = await anonymous.post('/api/devices/validate-token', payload);
        assert.equal(reply.status, 200);
        assert.equal(reply.body.success, false);
        assert.equal(reply.body.errorCode, 'TOKEN_REQUIRED');
        assert.equal(typeof reply.body.errorMessage, 'string');
      }
      const noBody = await server.app.inject({ method: 'POST', url: '/api/devices/validate-token' });
      assert.equal(noBody.statusCode, 200);
      assert.equal(noBody.json().errorCode, 'TOKEN_REQUIRED');
    });

    it('answers TOKEN_INVALID for unknown, malformed, revoked and unconfigured tokens', async () => {
      const revoked = await provision();
      assert.equal((await admin.delete(`/api/devices/claim-tokens/${revoked.token}`)).status, 204);
      const unconfigured = await provision({ uniqueId: null });
      for (const token of ['ZZZZ-ZZZZ-ZZZZ', 'short', 'OOOO-OOOO-OOOO', '1111-1111-1111', 'AAAA-AAAA-AAAA-A', '!@#$', revoked.token, unconfigured.token]) {
        const reply = await validate(anonymous, token);
        assert.equal(reply.status, 200, token);
        assert.equal(reply.body.success, false, token);
        assert.equal(reply.body.errorCode, 'TOKEN_INVALID', token);
      }
    });

    it('answers TOKEN_ALREADY_CLAIMED to everyone but the user who claimed it', async () => {
      const token = await provision();
      assert.equal((await buyer.post('/api/devices/claim', { token: token.token })).status, 200);
      for (const client of [anonymous, rival, admin]) {
        const reply = await validate(client, token.token);
        assert.equal(reply.body.success, false);
        assert.equal(reply.body.errorCode, 'TOKEN_ALREADY_CLAIMED');
      }
      const own = await validate(buyer, token.token);
      assert.deepEqual(own.body, { success: true, uniqueId: token.uniqueId, model: 'Pet Tracker Mini', modelCode: 'PT-1' });
    });

    it('refuses wrong types, oversized tokens and unknown fields with 400', async () => {
      for (const payload of [{ token: 123 }, { token: null }, { token: ['A'] }, { token: 'A'.repeat(65) }, { token: 'AAAA', extra: true }, [], JSON.stringify('text')]) {
        const reply = await anonymous.post('/api/devices/validate-token', payload);
        assert.equal(reply.status, 400, JSON.stringify(payload));
        assert.equal(reply.body.code, 'VALIDATION_FAILED');
      }
    });
  });

  describe('claim', () => {
    it('claims an unclaimed token: creates the device for the caller and marks the token claimed', async () => {
      const token = await provision();
      const claimed = await buyer.post('/api/devices/claim', { token: token.token.toLowerCase() });
      assert.equal(claimed.status, 200);
      assert.equal(claimed.body.success, true);
      assert.equal(claimed.body.alreadyClaimed, false);
      const device = claimed.body.device;
      assert.equal(device.uniqueId, token.uniqueId);
      assert.equal(device.name, 'Pet Tracker Mini');
      assert.equal(device.model, 'Pet Tracker Mini');
      assert.equal(device.status, 'offline');
      assert.equal(device.isOwner, true);
      assert.equal(device.claimToken, token.token);
      assert.deepEqual((await buyer.get(`/api/devices/${device.id}`)).body, device);
      const stored = await admin.get(`/api/devices/claim-tokens/${token.token}`);
      assert.equal(stored.body.status, 'claimed');
      assert.equal(stored.body.claimedBy, buyer.userId);
      assert.ok(Date.parse(stored.body.claimedAt) <= Date.now());
    });

    it('answers alreadyClaimed: true to the same user, with the device, and changes nothing', async () => {
      const token = await provision();
      const first = await buyer.post('/api/devices/claim', { token: token.token });
      const before = await snapshot(server);
      const again = await buyer.post('/api/devices/claim', { token: token.token.replace(/-/g, '') });
      assert.equal(again.status, 200);
      assert.deepEqual(again.body, { success: true, alreadyClaimed: true, device: first.body.device });
      assert.deepEqual(await snapshot(server), before);
    });

    it('answers each error with its status and code, changing nothing', async () => {
      const claimedByRival = await provision();
      assert.equal((await rival.post('/api/devices/claim', { token: claimedByRival.token })).status, 200);
      const revoked = await provision();
      await admin.delete(`/api/devices/claim-tokens/${revoked.token}`);
      const unconfigured = await provision({ uniqueId: null });
      const cases: [unknown, number, string][] = [
        [{}, 400, 'CLAIM_TOKEN_REQUIRED'],
        [undefined, 400, 'CLAIM_TOKEN_REQUIRED'],
        [{ token: '' }, 400, 'CLAIM_TOKEN_REQUIRED'],
        [{ token: '  ' }, 400, 'CLAIM_TOKEN_REQUIRED'],
        [{ token: 123 }, 400, 'VALIDATION_FAILED'],
        [{ token: 'A'.repeat(65) }, 400, 'VALIDATION_FAILED'],
        [{ token: claimedByRival.token, uniqueId: 'x' }, 400, 'VALIDATION_FAILED'],
        [{ token: 'ZZZZ-ZZZZ-ZZZZ' }, 404, 'CLAIM_TOKEN_NOT_FOUND'],
        [{ token: 'not a token' }, 404, 'CLAIM_TOKEN_NOT_FOUND'],
        [{ token: revoked.token }, 404, 'CLAIM_TOKEN_NOT_FOUND'],
        [{ token: unconfigured.token }, 400, 'DEVICE_NOT_CONFIGURED'],
        [{ token: claimedByRival.token }, 409, 'CLAIM_TOKEN_ALREADY_CLAIMED'],
      ];
      const before = await snapshot(server);
      for (const [payload, status, code] of cases) {
        const reply = await buyer.post('/api/devices/claim', payload);
        assert.equal(reply.status, status, JSON.stringify(payload));
        assert.equal(reply.body.code, code, JSON.stringify(payload));
      }
      assert.deepEqual(await snapshot(server), before);
    });

    it('lets exactly one of several concurrent claimers win; the others get 409', async () => {
      const claimers = [buyer, rival];
      for (let index = 0; index < 3; index++) claimers.push(new Client(server, await signIn(server, `racer-${index}@example.com`)));
      for (let round = 0; round < 10; round++) {
        const token = await provision();
        const replies = await Promise.all(claimers.map((client) => client.post('/api/devices/claim', { token: token.token })));
        const winners = replies.filter((reply) => reply.status === 200);
        assert.equal(winners.length, 1, `round ${round}: ${replies.map((reply) => reply.status).join(',')}`);
        for (const loser of replies.filter((reply) => reply.status !== 200)) {
          assert.equal(loser.status, 409);
          assert.equal(loser.body.code, 'CLAIM_TOKEN_ALREADY_CLAIMED');
        }
        const winner = claimers[replies.indexOf(winners[0]!)]!;
        const stored = await admin.get(`/api/devices/claim-tokens/${token.token}`);
        assert.equal(stored.body.claimedBy, winner.userId);
        const devices = await admin.get(`/api/devices?userId=${winner.userId}&uniqueId=${token.uniqueId}`);
        assert.equal(devices.body.length, 1);
        assert.equal(devices.body[0].id, winners[0]!.body.device.id);
      }
    });

    it('gives one device when the same user claims twice at the same moment', async () => {
      const token = await provision();
      const replies = await Promise.all([0, 1, 2].map(() => buyer.post('/api/devices/claim', { token: token.token })));
      assert.deepEqual(
        replies.map((reply) => reply.status),
        [200, 200, 200],
      );
      assert.deepEqual(replies.map((reply) => reply.body.alreadyClaimed).sort(), [false, true, true]);
      assert.equal(new Set(replies.map((reply) => reply.body.device.id)).size, 1);
    });

    it('takes over a device registered before the claim (stock), ending its shares', async () => {
      const id = uniqueId('stock');
      const stock = await admin.post('/api/devices', { name: 'Stock', uniqueId: id });
      assert.equal(stock.status, 201);
      assert.equal((await admin.post(`/api/devices/${stock.body.id}/shares`, { email: 'rival@example.com', permissions: { position: true } })).status, 201);
      assert.equal((await admin.post(`/api/devices/${stock.body.id}/shares`, { email: 'stock-pending@example.com', permissions: { position: true } })).status, 201);
      const token = await provision({ uniqueId: id, transfer: true });
      const claimed = await buyer.post('/api/devices/claim', { token: token.token });
      assert.equal(claimed.status, 200);
      assert.equal(claimed.body.device.id, stock.body.id);
      assert.equal(claimed.body.device.name, 'Stock');
      assert.equal(claimed.body.device.isOwner, true);
      assert.equal((await rival.get(`/api/devices/${stock.body.id}`)).status, 403);
      assert.deepEqual((await admin.get(`/api/devices?id=${stock.body.id}`)).body, []);
      assert.deepEqual((await buyer.get(`/api/devices/${stock.body.id}/shares`)).body, [], 'pending shares end too');
    });

    it('refuses claims from readonly accounts', async () => {
      const token = await provision();
      const restricted = new Client(server, await signIn(server, 'claim-readonly@example.com'));
      await setUserFlags(server, restricted.userId, { deviceReadonly: true });
      const before = await snapshot(server);
      const reply = await restricted.post('/api/devices/claim', { token: token.token });
      assert.equal(reply.status, 403);
      assert.equal(reply.body.code, 'USER_DEVICE_READONLY');
      assert.deepEqual(await snapshot(server), before);
    });
  });

  describe('create with deviceToken', () => {
    it('creates the device claimed with the token', async () => {
      const token = await provision();
      const created = await buyer.post('/api/devices', { name: 'My tracker', uniqueId: token.uniqueId, deviceToken: token.token.toLowerCase() });
      assert.equal(created.status, 201);
      assert.equal(created.body.name, 'My tracker');
      assert.equal(created.body.claimToken, token.token);
      const stored = await admin.get(`/api/devices/claim-tokens/${token.token}`);
      assert.equal(stored.body.status, 'claimed');
      assert.equal(stored.body.claimedBy, buyer.userId);
      const again = await buyer.post('/api/devices/claim', { token: token.token });
      assert.equal(again.body.alreadyClaimed, true);
      assert.equal(again.body.device.id, created.body.id);
    });

    it('refuses a token that is unknown, revoked, unconfigured, for another device or claimed, changing nothing', async () => {
      const revoked = await provision();
      await admin.delete(`/api/devices/claim-tokens/${revoked.token}`);
      const unconfigured = await provision({ uniqueId: null });
      const other = await provision();
      const rivals = await provision();
      await rival.post('/api/devices/claim', { token: rivals.token });
      const mine = await provision();
      await buyer.post('/api/devices/claim', { token: mine.token });
      const cases: [string, string, number, string][] = [
        ['ZZZZ-ZZZZ-ZZZZ', uniqueId(), 404, 'CLAIM_TOKEN_NOT_FOUND'],
        [revoked.token, revoked.uniqueId as string, 404, 'CLAIM_TOKEN_NOT_FOUND'],
        [unconfigured.token, uniqueId(), 400, 'DEVICE_NOT_CONFIGURED'],
        [other.token, uniqueId(), 400, 'CLAIM_TOKEN_MISMATCH'],
        [rivals.token, rivals.uniqueId as string, 409, 'CLAIM_TOKEN_ALREADY_CLAIMED'],
        [mine.token, mine.uniqueId as string, 409, 'DEVICE_EXISTS'],
      ];
      const before = await snapshot(server);
      for (const [deviceToken, id, status, code] of cases) {
        const reply = await buyer.post('/api/devices', { name: 'X', uniqueId: id, deviceToken });
        assert.equal(reply.status, status, code);
        assert.equal(reply.body.code, code);
      }
      assert.deepEqual(await snapshot(server), before);
    });

    it('asks for the token when a user registers a device that has one; administrators may', async () => {
      const token = await provision();
      const before = await snapshot(server);
      const refused = await buyer.post('/api/devices', { name: 'Squatter', uniqueId: token.uniqueId });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.code, 'CLAIM_TOKEN_REQUIRED');
      assert.deepEqual(await snapshot(server), before);
      const stock = await admin.post('/api/devices', { name: 'Stock', uniqueId: token.uniqueId });
      assert.equal(stock.status, 201);
      assert.equal(stock.body.claimToken, undefined, 'the token stays unclaimed');
    });
  });

  describe('token life cycle', () => {
    it('unclaimed → claimed → unclaimed when the device is deleted → claimed by another user', async () => {
      const token = await provision();
      const first = await buyer.post('/api/devices/claim', { token: token.token });
      assert.equal((await buyer.delete(`/api/devices/${first.body.device.id}`)).status, 204);
      const released = await admin.get(`/api/devices/claim-tokens/${token.token}`);
      assert.equal(released.body.status, 'unclaimed');
      assert.equal(released.body.claimedBy, null);
      assert.equal(released.body.claimedAt, null);
      assert.equal((await validate(rival, token.token)).body.success, true);
      const second = await rival.post('/api/devices/claim', { token: token.token });
      assert.equal(second.status, 200);
      assert.equal(second.body.alreadyClaimed, false);
      assert.notEqual(second.body.device.id, first.body.device.id);
    });

    it('unconfigured → configured with PUT → claimable', async () => {
      const token = await provision({ uniqueId: null });
      assert.equal(token.uniqueId, null);
      assert.equal((await buyer.post('/api/devices/claim', { token: token.token })).body.code, 'DEVICE_NOT_CONFIGURED');
      const id = uniqueId('late');
      const configured = await admin.put(`/api/devices/claim-tokens/${token.token}`, { uniqueId: id });
      assert.equal(configured.status, 200);
      assert.equal(configured.body.uniqueId, id);
      const claimed = await buyer.post('/api/devices/claim', { token: token.token });
      assert.equal(claimed.status, 200);
      assert.equal(claimed.body.device.uniqueId, id);
    });

    it('claimed → revoked: the device stays with its owner, the token no longer shows or claims', async () => {
      const token = await provision();
      const claimed = await buyer.post('/api/devices/claim', { token: token.token });
      assert.equal((await admin.delete(`/api/devices/claim-tokens/${token.token}`)).status, 204);
      const device = await buyer.get(`/api/devices/${claimed.body.device.id}`);
      assert.equal(device.status, 200);
      assert.equal(device.body.claimToken, undefined);
      assert.equal((await buyer.post('/api/devices/claim', { token: token.token })).status, 404);
      assert.equal((await validate(buyer, token.token)).body.errorCode, 'TOKEN_INVALID');
      assert.equal((await buyer.delete(`/api/devices/${claimed.body.device.id}`)).status, 204);
      assert.equal((await admin.get(`/api/devices/claim-tokens/${token.token}`)).body.status, 'revoked', 'revoked is final');
    });

    it('a deleted user’s devices go, shares to them go, and their tokens become claimable', async () => {
      const leaving = new Client(server, await signIn(server, 'leaving@example.com'));
      const token = await provision();
      const claimed = (await leaving.post('/api/devices/claim', { token: token.token })).body.device;
      const own = (await leaving.post('/api/devices', { name: 'Own', uniqueId: uniqueId() })).body;
      const friends = (await buyer.post('/api/devices', { name: 'Friend’s', uniqueId: uniqueId() })).body;
      await buyer.post(`/api/devices/${friends.id}/shares`, { email: 'leaving@example.com', permissions: { position: true } });
      await leaving.post(`/api/devices/${own.id}/shares`, { email: 'buyer@example.com', permissions: { events: true } });
      const deleted: number[] = [];
      server.bus.on('devices.device.deleted', ({ deviceId }) => {
        deleted.push(deviceId);
      });

      await server.auth!.api.accounts.delete(leaving.userId);
      await server.outbox!.drainNow();

      assert.deepEqual(deleted.sort(), [claimed.id, own.id].sort());
      for (const id of [claimed.id, own.id]) assert.equal((await admin.get(`/api/devices/${id}`)).status, 404);
      assert.equal((await buyer.get(`/api/devices/${friends.id}`)).status, 200, 'devices of others stay');
      const db = server.database!.db;
      assert.deepEqual(await db.selectFrom('device_shares').selectAll().where('user_id', '=', leaving.userId).execute(), []);
      assert.deepEqual(await db.selectFrom('devices').selectAll().where('owner_id', '=', leaving.userId).execute(), []);
      const released = await admin.get(`/api/devices/claim-tokens/${token.token}`);
      assert.equal(released.body.status, 'unclaimed');
      assert.equal(released.body.claimedBy, null);
      assert.equal((await buyer.post('/api/devices/claim', { token: token.token })).status, 200);
      await server.outbox!.record(server.database!.db, 'auth.user.deleted', { userId: leaving.userId });
      await server.outbox!.drainNow();
      assert.equal((await buyer.get(`/api/devices/${friends.id}`)).status, 200, 'the handler is idempotent');
      assert.equal((await admin.get(`/api/devices/claim-tokens/${token.token}`)).body.claimedBy, buyer.userId, 'and leaves the new claim alone');
    });
  });
});

describeEachEngine('validate-token rate limit', (engine) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(engine);
  });
  after(() => server.dispose());

  it('allows 30 previews a minute per IP, then answers 429 with Retry-After', async () => {
    const client = new Client(server, undefined, '203.0.113.7');
    for (let index = 0; index < 30; index++) assert.equal((await client.post('/api/devices/validate-token', { token: 'ZZZZ-ZZZZ-ZZZZ' })).status, 200);
    const limited = await client.post('/api/devices/validate-token', { token: 'ZZZZ-ZZZZ-ZZZZ' });
    assert.equal(limited.status, 429);
    assert.equal(limited.body.code, 'RATE_LIMITED');
    const retryAfter = Number(limited.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 60, String(retryAfter));
    const elsewhere = new Client(server, undefined, '203.0.113.8');
    assert.equal((await elsewhere.post('/api/devices/validate-token', { token: 'ZZZZ-ZZZZ-ZZZZ' })).status, 200);
  });
});

const redisUrl = process.env.TEST_REDIS_URL;
if (redisUrl) {
  describe('validate-token rate limit across instances (Redis)', () => {
    const [engine] = testEngines();
    let first: TestServer;
    let second: TestServer;
    before(async () => {
      first = await startTestServer(engine!, { REDIS_URL: redisUrl });
      second = await startTestServer(engine!, { REDIS_URL: redisUrl });
    });
    after(async () => {
      await first.dispose();
      await second.dispose();
    });

    it('shares the per-IP counter between instances', async () => {
      // A fresh address per run: the counters outlive the test in Redis for a minute.
      const address = `2001:db8::${randomInt(0, 0xffff).toString(16)}:${randomInt(0, 0xffff).toString(16)}`;
      const firstClient = new Client(first, undefined, address);
      const secondClient = new Client(second, undefined, address);
      for (let index = 0; index < 30; index++) {
        const client = index % 2 === 0 ? firstClient : secondClient;
        assert.equal((await client.post('/api/devices/validate-token', { token: `run-${process.pid}-${Date.now()}` })).status, 200);
      }
      const limited = await secondClient.post('/api/devices/validate-token', { token: 'ZZZZ-ZZZZ-ZZZZ' });
      assert.equal(limited.status, 429);
      assert.equal((await firstClient.post('/api/devices/validate-token', { token: 'ZZZZ-ZZZZ-ZZZZ' })).status, 429);
    });
  });
}
