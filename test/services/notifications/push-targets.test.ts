import assert from 'node:assert/strict';
import { createECDH, randomBytes } from 'node:crypto';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import type { HostLookup } from '../../../src/services/notifications/module.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { Client } from '../devices/helpers.ts';
import { countRows, deliveries, raiseEvents } from './helpers.ts';

/** A browser's subscription keys: a real P-256 point (the sender encrypts to it) and a 16-byte secret. */
function browserKeys() {
  const ecdh = createECDH('prime256v1');
  return { p256dh: ecdh.generateKeys().toString('base64url'), auth: randomBytes(16).toString('base64url') };
}

// Private addresses are refused here (no NOTIFY_ALLOW_PRIVATE_URLS), as in production.
describeEachEngine('push targets', (engine) => {
  let server: TestServer;
  let owner: Client;
  let other: Client;
  let device: number;
  /** What each test host name resolves to now; the server's lookup reads it at every call. */
  const names = new Map<string, string>();
  const lookup: HostLookup = async (host) => {
    const address = names.get(host);
    if (!address) throw new Error(`getaddrinfo ENOTFOUND ${host}`);
    return [{ address, family: net.isIP(address) as 4 | 6 }];
  };

  before(async () => {
    server = await startTestServer(engine, { MAX_PUSH_TARGETS_PER_USER: '2' }, { notificationsLookup: lookup });
    await server.notifications?.worker.stop();
    owner = new Client(server, await server.login({ email: 'targets-owner@example.com' }));
    other = new Client(server, await server.login({ email: 'targets-other@example.com' }));
    device = (await owner.post('/api/devices/', { name: 'Van 7', uniqueId: 'targets-van-7' })).body.id;
  });
  after(async () => {
    await server.dispose();
  });

  async function targetIds(client: Client): Promise<number[]> {
    return (await client.get('/api/notifications/targets')).body.map((target: { id: number }) => target.id);
  }

  async function deleteTargets(): Promise<void> {
    for (const client of [owner, other]) for (const id of await targetIds(client)) await client.delete(`/api/notifications/targets/${id}`);
  }

  it('vets a Web Push endpoint again when it sends: a host that now resolves to 127.0.0.1 reaches nothing, and the error says nothing of the port', async () => {
    const listener = net.createServer((socket) => socket.destroy());
    let connections = 0;
    listener.on('connection', () => (connections += 1));
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    try {
      const port = (listener.address() as AddressInfo).port;
      names.set('push.rebind.test', '8.8.8.8');
      const registered = await owner.post('/api/notifications/targets', { kind: 'webpush', subscription: { endpoint: `https://push.rebind.test:${port}/push/sub-1`, keys: browserKeys() } });
      assert.equal(registered.status, 201, JSON.stringify(registered.body));
      const rule = await owner.post('/api/notifications', { type: 'alarm', deviceIds: [device], channels: ['webpush'] });
      assert.equal(rule.status, 201, JSON.stringify(rule.body));

      names.set('push.rebind.test', '127.0.0.1');
      await raiseEvents(server, [{ deviceId: device, alarm: 'sos' }]);
      assert.equal(connections, 0, 'the local listener was never connected to');
      const error = 'Web Push endpoint refused: the host resolves to a loopback, private, link-local or otherwise non-public address';
      const [stored] = (await deliveries(server)).filter((row) => row.channel === 'webpush');
      assert.equal(stored?.state, 'failed');
      assert.equal(stored?.last_error, error);
      const shown = await owner.get('/api/notifications/deliveries?status=failed');
      assert.deepEqual(shown.body.map((delivery: { lastError: string }) => delivery.lastError), [error]);
      assert.doesNotMatch(error, new RegExp(`${port}|127\\.0\\.0\\.1|ECONN|connect`, 'i'));
      assert.equal((await owner.delete(`/api/notifications/${rule.body.id}`)).status, 204);
    } finally {
      await new Promise<void>((resolve) => listener.close(() => resolve()));
      await deleteTargets();
    }
  });

  it('refuses a Web Push endpoint whose host resolves to a non-public address, storing nothing', async () => {
    names.set('push.internal.test', '10.0.0.7');
    names.set('push.nat64.test', '64:ff9b::a9fe:a9fe');
    const before = await countRows(server, 'notification_targets');
    for (const endpoint of ['https://push.internal.test/push/x', 'https://push.nat64.test/push/x', 'https://[2002:7f00:1::]/push/x', 'https://push.unknown.test/push/x']) {
      const refused = await owner.post('/api/notifications/targets', { kind: 'webpush', subscription: { endpoint, keys: browserKeys() } });
      assert.equal(refused.status, 400, endpoint);
      assert.equal(refused.body.code, 'INVALID_PUSH_TARGET', endpoint);
    }
    assert.equal(await countRows(server, 'notification_targets'), before);
  });

  it("refuses a registration past the caller's own limit without taking the endpoint from the account that holds it", async () => {
    names.set('push.example.test', '8.8.4.4');
    const endpoint = (name: string) => ({ kind: 'webpush', subscription: { endpoint: `https://push.example.test/push/${name}`, keys: browserKeys() } });
    const victims = endpoint('victim-browser');
    const held = await owner.post('/api/notifications/targets', victims);
    assert.equal(held.status, 201, JSON.stringify(held.body));
    for (const name of ['other-1', 'other-2']) assert.equal((await other.post('/api/notifications/targets', endpoint(name))).status, 201);
    const before = await countRows(server, 'notification_targets');
    const othersBefore = await targetIds(other);

    const refused = await other.post('/api/notifications/targets', victims);
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.equal(refused.body.code, 'LIMIT_REACHED');
    assert.deepEqual(await targetIds(owner), [held.body.id], "the victim's target is still theirs");
    assert.deepEqual(await targetIds(other), othersBefore);
    assert.equal(await countRows(server, 'notification_targets'), before);

    // Below the limit, the endpoint goes to the last account that registers it (docs/notifications.md).
    await other.delete(`/api/notifications/targets/${othersBefore[0]}`);
    assert.equal((await other.post('/api/notifications/targets', victims)).status, 201);
    assert.deepEqual(await targetIds(owner), []);
    await deleteTargets();
  });
});
