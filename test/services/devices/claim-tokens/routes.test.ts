import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../../support/engines.ts';
import { startTestServer } from '../../../support/server.ts';
import type { TestServer } from '../../../support/server.ts';
import { signIn } from '../../../support/api.ts';
import { Client, snapshot, uniqueId } from '../helpers.ts';

const GROUPED = /^[23456789ABCDEFGHJKLMNPQRSTUVWXYZ]{4}-[23456789ABCDEFGHJKLMNPQRSTUVWXYZ]{4}-[23456789ABCDEFGHJKLMNPQRSTUVWXYZ]{4}$/;

describeEachEngine('claim-token administration', (engine) => {
  let server: TestServer;
  let admin: Client;
  let user: Client;

  before(async () => {
    server = await startTestServer(engine);
    admin = new Client(server, await signIn(server, 'tokens-admin@example.com', { administrator: true }));
    user = new Client(server, await signIn(server, 'tokens-user@example.com'));
  });
  after(() => server.dispose());

  it('provisions a token for a device and reads it back in any spelling', async () => {
    const id = uniqueId('prov');
    const created = await admin.post('/api/devices/claim-tokens', { uniqueId: id, modelCode: 'PT-1', modelName: 'Pet Tracker Mini' });
    assert.equal(created.status, 201);
    assert.match(created.body.token, GROUPED);
    assert.deepEqual(
      { ...created.body, token: undefined, createdAt: undefined },
      { token: undefined, uniqueId: id, modelCode: 'PT-1', model: 'Pet Tracker Mini', status: 'unclaimed', claimedBy: null, claimedAt: null, createdAt: undefined },
    );
    assert.ok(Math.abs(Date.parse(created.body.createdAt) - Date.now()) < 60_000);
    for (const spelling of [created.body.token, created.body.token.toLowerCase(), created.body.token.replace(/-/g, '')]) {
      const read = await admin.get(`/api/devices/claim-tokens/${encodeURIComponent(spelling)}`);
      assert.equal(read.status, 200, spelling);
      assert.deepEqual(read.body, created.body);
    }
  });

  it('provisions a token printed before its device is known, configured later', async () => {
    const created = await admin.post('/api/devices/claim-tokens', { modelCode: 'PT-9' });
    assert.equal(created.status, 201);
    assert.equal(created.body.uniqueId, null);
    assert.equal(created.body.model, 'PT-9');
    const id = uniqueId('later');
    const configured = await admin.put(`/api/devices/claim-tokens/${created.body.token}`, { uniqueId: id, modelName: 'Pet Tracker 9' });
    assert.equal(configured.status, 200);
    assert.deepEqual(configured.body, { ...created.body, uniqueId: id, model: 'Pet Tracker 9' });
    assert.deepEqual((await admin.get(`/api/devices/claim-tokens/${created.body.token}`)).body, configured.body);
    const cleared = await admin.put(`/api/devices/claim-tokens/${created.body.token}`, { uniqueId: null, modelName: null, modelCode: 'PT-10' });
    assert.deepEqual(cleared.body, { ...created.body, modelCode: 'PT-10', model: 'PT-10' });
  });

  it('keeps one live token per uniqueId: 409 CLAIM_TOKEN_EXISTS until the first is revoked', async () => {
    const id = uniqueId('one');
    const first = await admin.post('/api/devices/claim-tokens', { uniqueId: id, modelCode: 'A' });
    const blank = await admin.post('/api/devices/claim-tokens', { modelCode: 'A' });
    const before = await snapshot(server);
    const second = await admin.post('/api/devices/claim-tokens', { uniqueId: id, modelCode: 'A' });
    assert.equal(second.status, 409);
    assert.equal(second.body.code, 'CLAIM_TOKEN_EXISTS');
    const moved = await admin.put(`/api/devices/claim-tokens/${blank.body.token}`, { uniqueId: id });
    assert.equal(moved.status, 409);
    assert.equal(moved.body.code, 'CLAIM_TOKEN_EXISTS');
    assert.deepEqual(await snapshot(server), before);
    assert.deepEqual((await admin.get(`/api/devices/claim-tokens?uniqueId=${id}`)).body, [first.body]);
    assert.equal((await admin.delete(`/api/devices/claim-tokens/${first.body.token}`)).status, 204);
    assert.equal((await admin.put(`/api/devices/claim-tokens/${blank.body.token}`, { uniqueId: id })).status, 200);
  });

  it('refuses a token for a uniqueId a user already owns with 409 DEVICE_ALREADY_OWNED, unless a transfer is asked for', async () => {
    const owned = (await user.post('/api/devices', { name: 'Owned', uniqueId: uniqueId('owned') })).body as { id: number; uniqueId: string };
    const blank = await admin.post('/api/devices/claim-tokens', { modelCode: 'A' });
    const before = await snapshot(server);
    for (const reply of [
      await admin.post('/api/devices/claim-tokens', { uniqueId: owned.uniqueId, modelCode: 'A' }),
      await admin.post('/api/devices/claim-tokens', { uniqueId: owned.uniqueId, modelCode: 'A', transfer: false }),
      await admin.put(`/api/devices/claim-tokens/${blank.body.token}`, { uniqueId: owned.uniqueId }),
    ]) {
      assert.equal(reply.status, 409);
      assert.equal(reply.body.code, 'DEVICE_ALREADY_OWNED');
    }
    assert.deepEqual(await snapshot(server), before);
    assert.equal((await user.get(`/api/devices/${owned.id}`)).body.isOwner, true);

    const configured = await admin.put(`/api/devices/claim-tokens/${blank.body.token}`, { uniqueId: owned.uniqueId, transfer: true });
    assert.equal(configured.status, 200);
    assert.equal(configured.body.uniqueId, owned.uniqueId);
    assert.equal(configured.body.transfer, undefined, 'the request flag is not part of the token');
    assert.equal((await admin.put(`/api/devices/claim-tokens/${blank.body.token}`, { modelName: 'Renamed' })).status, 200, 'other changes need no transfer');
    const other = (await user.post('/api/devices', { name: 'Other', uniqueId: uniqueId('owned') })).body as { uniqueId: string };
    const created = await admin.post('/api/devices/claim-tokens', { uniqueId: other.uniqueId, modelCode: 'A', transfer: true });
    assert.equal(created.status, 201);
  });

  it('lists tokens oldest first, by status and uniqueId, a page at a time', async () => {
    const model = `LIST-${process.pid}`;
    const made = [];
    for (let index = 0; index < 4; index++) made.push((await admin.post('/api/devices/claim-tokens', { uniqueId: uniqueId('list'), modelCode: model })).body);
    await admin.delete(`/api/devices/claim-tokens/${made[0].token}`);
    await user.post('/api/devices/claim', { token: made[1].token });
    const all = (await admin.get('/api/devices/claim-tokens?limit=1000')).body.filter((token: { modelCode: string }) => token.modelCode === model);
    assert.deepEqual(all.map((token: { token: string }) => token.token).sort(), made.map((token) => token.token).sort());
    const times = all.map((token: { createdAt: string }) => Date.parse(token.createdAt));
    assert.deepEqual(times, [...times].sort((a, b) => a - b), 'oldest first');
    const statuses = async (status: string) =>
      (await admin.get(`/api/devices/claim-tokens?status=${status}&limit=1000`)).body
        .filter((token: { modelCode: string }) => token.modelCode === model)
        .map((token: { token: string }) => token.token);
    assert.deepEqual(await statuses('revoked'), [made[0].token]);
    assert.deepEqual(await statuses('claimed'), [made[1].token]);
    assert.deepEqual((await statuses('unclaimed')).sort(), [made[2].token, made[3].token].sort());
    const byUniqueId = await admin.get(`/api/devices/claim-tokens?uniqueId=${made[3].uniqueId}`);
    assert.deepEqual(byUniqueId.body, [made[3]]);
    const everything = (await admin.get('/api/devices/claim-tokens?limit=1000')).body;
    const page = await admin.get('/api/devices/claim-tokens?limit=2&offset=1');
    assert.deepEqual(page.body, everything.slice(1, 3));
  });

  it('revokes for good: 204, again 204, and a revoked token cannot be changed', async () => {
    const token = (await admin.post('/api/devices/claim-tokens', { uniqueId: uniqueId(), modelCode: 'R' })).body;
    assert.equal((await admin.delete(`/api/devices/claim-tokens/${token.token}`)).status, 204);
    assert.equal((await admin.delete(`/api/devices/claim-tokens/${token.token.toLowerCase()}`)).status, 204);
    assert.equal((await admin.get(`/api/devices/claim-tokens/${token.token}`)).body.status, 'revoked');
    const before = await snapshot(server);
    const changed = await admin.put(`/api/devices/claim-tokens/${token.token}`, { modelName: 'New' });
    assert.equal(changed.status, 409);
    assert.equal(changed.body.code, 'CLAIM_TOKEN_REVOKED');
    assert.deepEqual(await snapshot(server), before);
  });

  it('refuses to change a claimed token', async () => {
    const token = (await admin.post('/api/devices/claim-tokens', { uniqueId: uniqueId(), modelCode: 'C' })).body;
    await user.post('/api/devices/claim', { token: token.token });
    const before = await snapshot(server);
    const changed = await admin.put(`/api/devices/claim-tokens/${token.token}`, { uniqueId: uniqueId() });
    assert.equal(changed.status, 409);
    assert.equal(changed.body.code, 'CLAIM_TOKEN_ALREADY_CLAIMED');
    assert.deepEqual(await snapshot(server), before);
  });

  it('answers 404 CLAIM_TOKEN_NOT_FOUND for unknown or malformed tokens', async () => {
    for (const token of ['ZZZZ-ZZZZ-ZZZZ', 'nonsense', 'OOOO-0000-IIII']) {
      for (const [method, payload] of [
        ['GET', undefined],
        ['PUT', { modelName: 'x' }],
        ['DELETE', undefined],
      ] as const) {
        const reply = await admin.request(method, `/api/devices/claim-tokens/${token}`, payload);
        assert.equal(reply.status, 404, `${method} ${token}`);
        assert.equal(reply.body.code, 'CLAIM_TOKEN_NOT_FOUND');
      }
    }
  });

  it('refuses bad input with 400 and changes nothing', async () => {
    const token = (await admin.post('/api/devices/claim-tokens', { modelCode: 'B' })).body;
    const before = await snapshot(server);
    const badCreates: unknown[] = [
      {},
      { uniqueId: uniqueId() },
      { modelCode: '' },
      { modelCode: 'has space' },
      { modelCode: 12 },
      { modelCode: 'M'.repeat(65) },
      { modelCode: 'M', modelName: '' },
      { modelCode: 'M', modelName: 'N'.repeat(129) },
      { modelCode: 'M', modelName: 5 },
      { modelCode: 'M', uniqueId: '' },
      { modelCode: 'M', uniqueId: 'u'.repeat(129) },
      { modelCode: 'M', uniqueId: 42 },
      { modelCode: 'M', status: 'claimed' },
      { modelCode: 'M', token: 'AAAA-AAAA-AAAA' },
    ];
    for (const payload of badCreates) {
      const reply = await admin.post('/api/devices/claim-tokens', payload);
      assert.equal(reply.status, 400, JSON.stringify(payload));
      assert.equal(reply.body.code, 'VALIDATION_FAILED', JSON.stringify(payload));
    }
    for (const payload of [{}, { modelCode: '' }, { uniqueId: 1 }, { status: 'revoked' }, { modelName: 'x', claimedBy: 1 }]) {
      const reply = await admin.put(`/api/devices/claim-tokens/${token.token}`, payload);
      assert.equal(reply.status, 400, JSON.stringify(payload));
      assert.equal(reply.body.code, 'VALIDATION_FAILED', JSON.stringify(payload));
    }
    for (const query of ['status=lost', 'limit=0', 'limit=1001', 'offset=-1', 'limit=x']) {
      const reply = await admin.get(`/api/devices/claim-tokens?${query}`);
      assert.equal(reply.status, 400, query);
      assert.equal(reply.body.code, 'VALIDATION_FAILED');
    }
    const long = await admin.get(`/api/devices/claim-tokens/${'A'.repeat(65)}`);
    assert.equal(long.status, 400);
    assert.equal(long.body.code, 'VALIDATION_FAILED');
    assert.deepEqual(await snapshot(server), before);
  });
});
