import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { signIn } from '../../support/api.ts';
import { Client, snapshot, uniqueId } from './helpers.ts';
import type { Reply } from './helpers.ts';

function assertLimitReached(reply: Reply, limit: string, max: number, usage: number): void {
  assert.equal(reply.status, 409, JSON.stringify(reply.body));
  assert.equal(reply.body.code, 'LIMIT_REACHED');
  assert.deepEqual(reply.body.details, [{ path: '/body', message: reply.body.message, limit, max, usage }]);
}

describeEachEngine('server limits on devices and shares', (engine) => {
  let server: TestServer;
  let admin: Client;

  before(async () => {
    server = await startTestServer(engine, { RATE_LIMITS: 'off', MAX_DEVICES_PER_USER: '2', MAX_SHARES_PER_DEVICE: '2' });
    admin = new Client(server, await signIn(server, 'limits-admin@example.com', { administrator: true }));
  });
  after(() => server.dispose());

  const create = (client: Client, fields: Record<string, unknown> = {}) => client.post('/api/devices', { name: 'Tracker', uniqueId: uniqueId('limit'), ...fields });
  const provision = async () => (await admin.post('/api/devices/claim-tokens', { uniqueId: uniqueId('limit-token'), modelCode: 'PT-1' })).body as { token: string; uniqueId: string };

  it('MAX_DEVICES_PER_USER: creating, creating with a token and claiming stop at the cap, changing nothing', async () => {
    const user = new Client(server, await signIn(server, 'limits-devices@example.com'));
    assert.equal((await create(user)).status, 201, 'under the cap');
    const second = await create(user);
    assert.equal(second.status, 201, 'up to the cap');
    const token = await provision();
    const before = await snapshot(server);
    assertLimitReached(await create(user), 'devices', 2, 2);
    assertLimitReached(await create(user, { uniqueId: token.uniqueId, deviceToken: token.token }), 'devices', 2, 2);
    assertLimitReached(await user.post('/api/devices/claim', { token: token.token }), 'devices', 2, 2);
    assert.deepEqual(await snapshot(server), before);
    assert.equal((await user.get('/api/devices')).body.length, 2);

    assert.equal((await user.delete(`/api/devices/${second.body.id}`)).status, 204);
    const claimed = await user.post('/api/devices/claim', { token: token.token });
    assert.equal(claimed.status, 200, 'a freed place can be used again');
    const again = await user.post('/api/devices/claim', { token: token.token });
    assert.equal(again.status, 200, 'claiming again at the cap adds nothing, so it still answers');
    assert.equal(again.body.alreadyClaimed, true);
  });

  it('MAX_DEVICES_PER_USER: administrators are exempt', async () => {
    for (let count = 0; count < 3; count++) assert.equal((await create(admin)).status, 201);
  });

  it('MAX_SHARES_PER_DEVICE: a third share of a device, pending ones counted, is refused, changing nothing; administrators are exempt', async () => {
    const owner = new Client(server, await signIn(server, 'limits-sharer@example.com'));
    const friends = await Promise.all(['one', 'three'].map(async (name) => new Client(server, await signIn(server, `limits-friend-${name}@example.com`))));
    const device = (await create(owner)).body as { id: number };
    const share = (by: Client, email: string) => by.post(`/api/devices/${device.id}/shares`, { email, permissions: { position: true } });
    assert.equal((await share(owner, 'limits-friend-one@example.com')).status, 201, 'under the cap');
    assert.equal((await share(owner, 'limits-no-account-yet@example.com')).status, 201, 'up to the cap, with a pending share');
    const before = await snapshot(server);
    assertLimitReached(await share(owner, 'limits-friend-three@example.com'), 'sharesPerDevice', 2, 2);
    assert.deepEqual(await snapshot(server), before);
    assert.equal((await friends[1]!.get(`/api/devices/${device.id}`)).status, 403);

    assert.equal((await share(admin, 'limits-friend-three@example.com')).status, 201);
    assert.equal((await friends[1]!.get(`/api/devices/${device.id}`)).status, 200);
  });
});
