import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { loadConfig } from '../../../src/config.ts';
import { createServer } from '../../../src/server.ts';
import type { Server } from '../../../src/server.ts';
import type { DeviceAccessApi } from '../../../src/services/devices/access.ts';
import type { DevicesModule } from '../../../src/services/devices/module.ts';
import { signIn } from '../../support/api.ts';
import { createSharedDatabase, describeEachEngine, testEngines } from '../../support/engines.ts';
import type { SharedTestDatabase } from '../../support/engines.ts';
import { eventually } from '../../support/eventually.ts';
import { sampleOf } from '../../support/metrics.ts';
import { freePort } from '../../support/ports.ts';
import { scaledOutEnv, startTestServer } from '../../support/server.ts';
import type { TestLogin, TestServer } from '../../support/server.ts';
import { Client } from '../devices/helpers.ts';
import { WebhookReceiver } from './helpers.ts';

const HANDLER_TIMEOUT_MS = 1000;

/** Makes the devices interface the notifications worker asks misbehave for one device: hang (never answer) or throw. */
function misbehave(api: DeviceAccessApi, deviceId: number, how: 'hang' | 'throw'): () => void {
  const getDevices = api.getDevices;
  api.getDevices = async (ids) => {
    if (!ids.includes(deviceId)) return getDevices(ids);
    if (how === 'throw') throw new Error(`devices broke on ${deviceId}`);
    return new Promise(() => undefined);
  };
  return () => {
    api.getDevices = getDevices;
  };
}

/** docs/architecture.md, "Durable work": the deliveries run on the platform's handler timeout, attempt cap, dead letters and queue metrics. */
describeEachEngine('notification deliveries on the durable-work rules', (engine) => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  let admin: TestLogin;
  let owner: Client;
  let ownerId: number;
  let other: Client;
  let ownerDevice: number;
  let otherDevice: number;

  const api = () => (server.devices as DevicesModule).api;
  const scrape = async () => (await request(server.metricsUrl as string)).body.text();
  const queueSample = (text: string, name: string) => sampleOf(text, name, { queue: 'deliveries', consumer: 'webhook' });
  const letters = () => server.app.inject({ method: 'GET', url: '/api/admin/dead-letters?queue=deliveries', headers: admin.authorization });
  const raise = async (deviceId: number) => {
    await server.tracking!.api.storeEvents([{ type: 'alarm', eventTime: Date.now(), deviceId, attributes: { alarm: 'sos' } }]);
    await server.outbox!.drainNow();
  };
  const rowOf = async (deviceId: number) => {
    const rows = await server.database!.db.selectFrom('notification_deliveries').select(['id', 'state', 'claims', 'attempts', 'last_error', 'available_at']).where('device_id', '=', deviceId).execute();
    assert.equal(rows.length, 1);
    return rows[0]!;
  };

  before(async () => {
    receiver = await WebhookReceiver.start();
    server = await startTestServer(engine, {
      NOTIFY_ALLOW_PRIVATE_URLS: 'true',
      NOTIFY_RETRY_DELAY: '1',
      QUEUE_MAX_ATTEMPTS: '2',
      QUEUE_HANDLER_TIMEOUT: String(HANDLER_TIMEOUT_MS),
      METRICS_PORT: String(await freePort()),
    });
    // Only the test drives the worker: each pass is drainNow.
    await server.notifications?.worker.stop();
    admin = await server.login({ email: 'deliveries-admin@example.com', administrator: true });
    const ownerLogin = await server.login({ email: 'deliveries-owner@example.com' });
    ownerId = ownerLogin.userId;
    owner = new Client(server, ownerLogin);
    other = new Client(server, await server.login({ email: 'deliveries-other@example.com' }));
    ownerDevice = (await owner.post('/api/devices/', { name: 'Owner', uniqueId: 'deliveries-owner' })).body.id;
    otherDevice = (await other.post('/api/devices/', { name: 'Other', uniqueId: 'deliveries-other' })).body.id;
    for (const [client, deviceId] of [[owner, ownerDevice], [other, otherDevice]] as const) {
      const rule = await client.post('/api/notifications', { type: 'alarm', deviceIds: [deviceId], channels: ['webhook'], attributes: { webhookUrl: receiver.url } });
      assert.equal(rule.status, 201, JSON.stringify(rule.body));
      receiver.secret = rule.body.webhookSecret;
    }
  });
  after(async () => {
    await server.dispose();
    await receiver.close();
  });

  it('times out a delivery whose handling hangs, goes on with the others, and reports the queue depth and age until it is sent', async () => {
    const restore = misbehave(api(), ownerDevice, 'hang');
    try {
      await raise(ownerDevice);
      await raise(otherDevice);
      await server.notifications!.worker.drainNow();
      assert.equal(receiver.deliveryIds().length, 1, "the other user's delivery was sent");
      const hung = await rowOf(ownerDevice);
      assert.deepEqual([hung.state, Number(hung.claims), Number(hung.attempts), hung.last_error], ['pending', 1, 0, `the handler did not finish within ${HANDLER_TIMEOUT_MS} ms`]);
      assert.equal((await rowOf(otherDevice)).state, 'sent');

      const text = await scrape();
      assert.equal(queueSample(text, 'trackstack_queue_depth'), 1);
      assert.ok(queueSample(text, 'trackstack_queue_oldest_age_seconds') > 0, 'the waiting delivery has an age');
      assert.equal(sampleOf(text, 'trackstack_queue_failures_total', { queue: 'deliveries', consumer: 'webhook', outcome: 'timeout' }), 1);
    } finally {
      restore();
    }
    await sleep(5);
    await server.notifications!.worker.drainNow();
    assert.equal((await rowOf(ownerDevice)).state, 'sent');
    assert.equal(receiver.deliveryIds().length, 2);
    const text = await scrape();
    assert.equal(queueSample(text, 'trackstack_queue_depth'), 0);
    assert.equal(queueSample(text, 'trackstack_queue_oldest_age_seconds'), 0);
  });

  it('dead-letters a delivery whose handling crashes every time, lists it for administrators, and sends it once retried', async () => {
    await server.database!.db.deleteFrom('notification_deliveries').execute();
    const sentBefore = receiver.deliveryIds().length;
    const restore = misbehave(api(), ownerDevice, 'throw');
    try {
      await raise(ownerDevice);
      for (let pass = 0; pass < 2; pass++) {
        await sleep(5);
        await server.notifications!.worker.drainNow();
      }
      const failed = await rowOf(ownerDevice);
      assert.deepEqual([failed.state, Number(failed.claims), failed.last_error], ['failed', 2, `devices broke on ${ownerDevice}`]);

      const listed = await letters();
      assert.equal(listed.statusCode, 200, listed.body);
      assert.equal(listed.json().total, 1);
      const [letter] = listed.json().deadLetters;
      assert.deepEqual([letter.queue, letter.consumer, letter.topic, letter.attempts, letter.lastError], ['deliveries', 'webhook', 'notification', 2, `devices broke on ${ownerDevice}`]);
      assert.equal(JSON.parse(letter.payload).userId, ownerId);
      // Its owner sees it failed as well; nobody else does.
      assert.equal((await owner.get('/api/notifications/deliveries?status=failed')).body.length, 1);
      assert.deepEqual((await other.get('/api/notifications/deliveries?status=failed')).body, []);
      assert.equal(sampleOf(await scrape(), 'trackstack_queue_dead_letters', { queue: 'deliveries', consumer: 'webhook' }), 1);

      restore();
      const retried = await server.app.inject({ method: 'POST', url: `/api/admin/dead-letters/${letter.id}/retry`, headers: admin.authorization });
      assert.equal(retried.statusCode, 202, retried.body);
      await server.notifications!.worker.drainNow();
      assert.equal((await rowOf(ownerDevice)).state, 'sent');
      assert.equal(receiver.deliveryIds().length, sentBefore + 1);
      assert.equal((await letters()).json().total, 0, 'the letter is gone once the delivery is back');
    } finally {
      restore();
    }
  });

  it("takes a dead letter off the administrators' list when its owner retries the delivery", async () => {
    await server.database!.db.deleteFrom('notification_deliveries').execute();
    const restore = misbehave(api(), ownerDevice, 'throw');
    try {
      await raise(ownerDevice);
      for (let pass = 0; pass < 2; pass++) {
        await sleep(5);
        await server.notifications!.worker.drainNow();
      }
    } finally {
      restore();
    }
    assert.equal((await letters()).json().total, 1);
    const [failed] = (await owner.get('/api/notifications/deliveries?status=failed')).body;
    assert.equal((await owner.post(`/api/notifications/deliveries/${failed.id}/retry`)).status, 200);
    assert.equal((await letters()).json().total, 0);
    await server.notifications!.worker.drainNow();
    assert.equal((await rowOf(ownerDevice)).state, 'sent');
  });
});

/**
 * A handler slower than the lease keeps its delivery while it runs: no other instance (PostgreSQL),
 * nor the same worker's next claims (SQLite serves one process), take and send it meanwhile.
 */
for (const engine of testEngines()) {
  const instances = engine.name === 'postgres' ? 'two instances' : 'one instance';
  describe(`a slow delivery renews its lease on ${instances} [${engine.name}]`, () => {
    let shared: SharedTestDatabase | undefined;
    let first: Server;
    let second: Server | undefined;
    let receiver: WebhookReceiver;

    before(async () => {
      shared = await createSharedDatabase(engine, 'trackstack-notify-lease-');
      receiver = await WebhookReceiver.start();
      const env = {
        ...Object.fromEntries(Object.entries(scaledOutEnv(shared, 'unused')).filter(([name]) => name !== 'REDIS_URL')),
        NOTIFY_ALLOW_PRIVATE_URLS: 'true',
        NOTIFY_DELIVERY_LEASE: '600',
        NOTIFY_SEND_TIMEOUT: '500',
      };
      first = await createServer(loadConfig(env));
      if (engine.name === 'postgres') second = await createServer(loadConfig(env));
    });
    after(async () => {
      await first?.close();
      await second?.close();
      await receiver.close();
      await shared?.dispose();
    });

    it('sends it once, from the instance that claimed it', async () => {
      const { authorization: headers } = await signIn(first, 'notify-lease@example.com');
      const device = (await first.app.inject({ method: 'POST', url: '/api/devices/', headers, payload: { name: 'Slow', uniqueId: 'notify-lease' } })).json().id;
      const rule = await first.app.inject({ method: 'POST', url: '/api/notifications', headers, payload: { type: 'alarm', deviceIds: [device], channels: ['webhook'], attributes: { webhookUrl: receiver.url } } });
      assert.equal(rule.statusCode, 201, rule.body);
      receiver.secret = rule.json().webhookSecret;

      // The first instance's handling takes four leases before it sends; every worker polls meanwhile.
      await second?.notifications!.worker.stop();
      // Every handling of the delivery asks for its device: counted on both instances.
      let handlings = 0;
      const secondApi = second && (second.devices as DevicesModule).api;
      const secondGetDevices = secondApi?.getDevices;
      if (secondApi && secondGetDevices) {
        secondApi.getDevices = async (ids) => {
          handlings += 1;
          return secondGetDevices(ids);
        };
      }
      const api = (first.devices as DevicesModule).api;
      const getDevices = api.getDevices;
      api.getDevices = async (ids) => {
        handlings += 1;
        await sleep(2400);
        return getDevices(ids);
      };
      try {
        await first.tracking!.api.storeEvents([{ type: 'alarm', eventTime: Date.now(), deviceId: device, attributes: { alarm: 'sos' } }]);
        await first.outbox!.drainNow();
        const claimedAt = async () => (await first.database!.db.selectFrom('notification_deliveries').select('claimed_at').executeTakeFirst())?.claimed_at ?? null;
        await eventually(async () => (await claimedAt()) !== null, 'the first instance claimed it', 10_000);
        second?.notifications!.worker.start();
        await eventually(() => receiver.deliveryIds().length === 1, 'sent', 20_000);
        // The workers keep polling: a lapsed lease would have let one send the delivery again by now.
        await sleep(1500);
      } finally {
        api.getDevices = getDevices;
        if (secondApi && secondGetDevices) secondApi.getDevices = secondGetDevices;
      }
      assert.equal(receiver.received.length, 1, 'one call');
      assert.equal(handlings, 1, 'handled once, by the instance that claimed it: its lease never lapsed');
      const row = await first.database!.db.selectFrom('notification_deliveries').select(['state', 'claims']).executeTakeFirstOrThrow();
      assert.deepEqual([row.state, Number(row.claims)], ['sent', 0]);
    });
  });
}
