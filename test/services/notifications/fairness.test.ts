import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../support/engines.ts';
import { eventually } from '../../support/eventually.ts';
import { freePort } from '../../support/ports.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { Client } from '../devices/helpers.ts';
import { deliveries, deliverNow, WebhookReceiver } from './helpers.ts';

/** docs/notifications.md, Fairness: the defaults of NOTIFY_USER_CONCURRENCY and NOTIFY_HOST_CONCURRENCY. */
const PER_USER = 16;
const PER_HOST = 8;
const MINUTE = 60_000;

async function webhookRules(client: Client, deviceId: number, receiver: WebhookReceiver, count: number): Promise<void> {
  for (let index = 0; index < count; index++) {
    const rule = await client.post('/api/notifications', { type: 'alarm', deviceIds: [deviceId], channels: ['webhook'], attributes: { webhookUrl: `${receiver.url}?rule=${index}` } });
    assert.equal(rule.status, 201, JSON.stringify(rule.body));
    receiver.secret = rule.body.webhookSecret;
  }
}

describeEachEngine('webhook fairness', (engine) => {
  it("holds one user's slow receivers to their concurrency, per host and per user, and delivers another user's at once", async () => {
    const slow = await Promise.all([WebhookReceiver.start(), WebhookReceiver.start(), WebhookReceiver.start()]);
    const fast = await WebhookReceiver.start();
    const server = await startTestServer(engine, { NOTIFY_ALLOW_PRIVATE_URLS: 'true', NOTIFY_SEND_TIMEOUT: '30000', NOTIFY_DELIVERY_LEASE: '60000' });
    try {
      for (const receiver of slow) receiver.hold = true;
      const stuck = new Client(server, await server.login({ email: 'fair-slow@example.com' }));
      const other = new Client(server, await server.login({ email: 'fair-fast@example.com' }));
      const stuckDevice = (await stuck.post('/api/devices/', { name: 'Slow', uniqueId: 'fair-slow' })).body.id;
      const otherDevice = (await other.post('/api/devices/', { name: 'Fast', uniqueId: 'fair-fast' })).body.id;
      // Three hosts (a port each), ten rules on each: 30 webhooks per alarm, more than any limit.
      for (const receiver of slow) await webhookRules(stuck, stuckDevice, receiver, 10);
      await webhookRules(other, otherDevice, fast, 1);
      await server.tracking!.api.storeEvents(Array.from({ length: 10 }, () => ({ type: 'alarm' as const, eventTime: Date.now(), deviceId: stuckDevice, attributes: { alarm: 'sos' } })));
      const held = () => slow.reduce((sum, receiver) => sum + receiver.received.length, 0);
      await eventually(() => held() === PER_USER, `the slow user holds ${PER_USER} calls (${held()})`, 10_000);

      const raised = performance.now();
      await server.tracking!.api.storeEvents([{ type: 'alarm', eventTime: Date.now(), deviceId: otherDevice, attributes: { alarm: 'sos' } }]);
      await eventually(() => fast.deliveryIds().length === 1, 'the other user is notified while the slow receivers hold their calls', 5000);
      console.log(`another user's webhook while ${held()} calls hang: ${(performance.now() - raised).toFixed(0)} ms`);
      assert.ok(fast.received[0]?.verified);

      // Open connections seen by each receiver: calls are held, never answered, so each one still counts.
      assert.equal(held(), PER_USER, 'no more calls than the user may have in hand');
      const perHost = slow.map((receiver) => receiver.received.length);
      for (const calls of perHost) assert.ok(calls <= PER_HOST, `no more than ${PER_HOST} calls to one host (${perHost.join(', ')})`);
    } finally {
      // The receivers first: the calls they hold fail at once instead of waiting for the send timeout.
      for (const receiver of [...slow, fast]) await receiver.close();
      await server.dispose();
    }
  });
});

describeEachEngine('webhook rate per user', (engine) => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  let other: WebhookReceiver;
  let clock = Date.parse('2026-06-01T08:00:00Z');
  let chatty: Client;
  let chattyDevice: number;
  let quietDevice: number;
  const RATE = 5;

  before(async () => {
    receiver = await WebhookReceiver.start();
    other = await WebhookReceiver.start();
    // The limiter's windows, the worker and the prune run on this clock.
    server = await startTestServer(
      engine,
      { NOTIFY_ALLOW_PRIVATE_URLS: 'true', NOTIFY_WEBHOOK_RATE: String(RATE), NOTIFY_DELIVERY_RETENTION: String(MINUTE), METRICS_PORT: String(await freePort()) },
      { notificationsClock: () => clock },
    );
    await server.notifications?.worker.stop();
    chatty = new Client(server, await server.login({ email: 'rate-webhook-chatty@example.com' }));
    const quiet = new Client(server, await server.login({ email: 'rate-webhook-quiet@example.com' }));
    chattyDevice = (await chatty.post('/api/devices/', { name: 'Chatty', uniqueId: 'rate-webhook-chatty' })).body.id;
    quietDevice = (await quiet.post('/api/devices/', { name: 'Quiet', uniqueId: 'rate-webhook-quiet' })).body.id;
    await webhookRules(chatty, chattyDevice, receiver, 1);
    await webhookRules(quiet, quietDevice, other, 1);
  });
  after(async () => {
    await server.dispose();
    await receiver.close();
    await other.close();
  });

  const raise = async (deviceId: number, count: number) => {
    await server.tracking!.api.storeEvents(Array.from({ length: count }, () => ({ type: 'alarm' as const, eventTime: clock, deviceId, attributes: { alarm: 'sos' } })));
    await deliverNow(server);
  };
  const postponed = async () => {
    const text = await (await fetch(server.metricsUrl as string)).text();
    return Number(/trackstack_notification_deliveries_total\{channel="webhook",outcome="postponed"\} (\d+)/.exec(text)?.[1] ?? 0);
  };

  it('calls webhooks at the per-user rate, queues the rest for the next window without claiming them again, and lets other users through', async () => {
    const start = clock;
    await raise(chattyDevice, RATE + 3);
    assert.equal(receiver.deliveryIds().length, RATE, 'no more than the rate within the minute');
    let rows = await deliveries(server);
    assert.deepEqual(rows.map((row) => row.state).sort(), [...Array<string>(3).fill('pending'), ...Array<string>(RATE).fill('sent')]);
    for (const row of rows.filter((candidate) => candidate.state === 'pending')) assert.deepEqual([row.attempts, row.available_at, row.last_error], [0, start + MINUTE, null], 'deferred to the end of the window, no attempt spent');
    const heldBack = await postponed();

    // Within the window, more of the chatty user's wait for its end from the start, and are never claimed meanwhile.
    clock += 10_000;
    await raise(chattyDevice, 2);
    await raise(quietDevice, 1);
    assert.equal(other.deliveryIds().length, 1, 'another user is not held back');
    assert.equal(receiver.deliveryIds().length, RATE);
    assert.equal(await postponed(), heldBack, 'nothing held back is claimed and put back again');
    rows = (await deliveries(server)).filter((row) => row.state === 'pending');
    assert.deepEqual(rows.map((row) => row.available_at), Array<number>(5).fill(start + MINUTE));

    // The next window: the rate's worth goes.
    clock = start + MINUTE;
    await deliverNow(server);
    assert.equal(receiver.deliveryIds().length, 2 * RATE);
    assert.equal(new Set(receiver.deliveryIds()).size, 2 * RATE, 'each delivery once');
  });

  it('prunes sent deliveries after the retention and keeps failed ones for the failure list', async () => {
    clock += 2 * MINUTE;
    receiver.answers.push(410);
    await raise(chattyDevice, 1);
    clock += 2 * MINUTE;
    await deliverNow(server);
    const before = await deliveries(server);
    assert.ok(before.some((row) => row.state === 'sent'));
    const failed = before.filter((row) => row.state === 'failed');
    assert.equal(failed.length, 1);
    const deleted = await server.notifications!.worker.pruneNow();
    const after = await deliveries(server);
    assert.equal(deleted, before.length - after.length);
    assert.deepEqual(after.map((row) => row.id), failed.map((row) => row.id), 'only the failed delivery stays, for the failure list');
    assert.equal((await chatty.get('/api/notifications/deliveries?status=failed')).body.length, 1);
  });
});
