import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { Client } from '../devices/helpers.ts';
import { deliveries, deliverNow, WebhookReceiver } from './helpers.ts';

/** docs/notifications.md, Isolation: five retryable failures in a row open a target's circuit for 30 s. */
const FAILURES_TO_OPEN = 5;
const OPEN_MS = 30_000;

describeEachEngine('notification circuit breaker', (engine) => {
  let server: TestServer;
  let dead: WebhookReceiver;
  let healthy: WebhookReceiver;
  let clock = Date.parse('2026-05-01T08:00:00Z');
  let owner: Client;
  let other: Client;
  let ownerDevice: number;
  let otherDevice: number;

  before(async () => {
    dead = await WebhookReceiver.start();
    healthy = await WebhookReceiver.start();
    // Retries, the circuit and the queue run on this clock: the cool-down is moved through, not waited for.
    server = await startTestServer(engine, { NOTIFY_ALLOW_PRIVATE_URLS: 'true', NOTIFY_RETRY_DELAY: '1' }, { notificationsClock: () => clock });
    await server.notifications?.worker.stop();
    owner = new Client(server, await server.login({ email: 'circuit-owner@example.com' }));
    other = new Client(server, await server.login({ email: 'circuit-other@example.com' }));
    ownerDevice = (await owner.post('/api/devices/', { name: 'Owner', uniqueId: 'circuit-owner' })).body.id;
    otherDevice = (await other.post('/api/devices/', { name: 'Other', uniqueId: 'circuit-other' })).body.id;
    for (const [client, deviceId, receiver] of [[owner, ownerDevice, dead], [other, otherDevice, healthy]] as const) {
      const rule = await client.post('/api/notifications', { type: 'alarm', deviceIds: [deviceId], channels: ['webhook'], attributes: { webhookUrl: receiver.url } });
      assert.equal(rule.status, 201, JSON.stringify(rule.body));
      receiver.secret = rule.body.webhookSecret;
    }
  });
  after(async () => {
    await server.dispose();
    await dead.close();
    await healthy.close();
  });

  const raise = async (deviceId: number, count: number) => {
    await server.tracking!.api.storeEvents(Array.from({ length: count }, () => ({ type: 'alarm' as const, eventTime: clock, deviceId, attributes: { alarm: 'sos' } })));
    await deliverNow(server);
  };
  const webhookRows = async () => (await deliveries(server)).filter((row) => row.channel === 'webhook');

  it('opens on a failing endpoint, stops calling it while open, lets others through, and probes once after the cool-down', async () => {
    const start = clock;
    dead.answers.push(...Array<number>(FAILURES_TO_OPEN).fill(503));
    await raise(ownerDevice, FAILURES_TO_OPEN);
    assert.equal(dead.received.length, FAILURES_TO_OPEN);
    let rows = await webhookRows();
    assert.deepEqual(rows.map((row) => [row.state, row.attempts, row.last_error]), Array(FAILURES_TO_OPEN).fill(['pending', 1, 'HTTP 503']));

    // Open: the failed ones' retries and new deliveries to the endpoint wait for the cool-down, without spending attempts.
    clock += 1000;
    await raise(ownerDevice, 3);
    await raise(otherDevice, 1);
    assert.equal(dead.received.length, FAILURES_TO_OPEN, 'no call to an endpoint whose circuit is open');
    assert.equal(healthy.deliveryIds().length, 1, "another user's endpoint is called as usual");
    rows = await webhookRows();
    const ownerRows = rows.filter((row) => row.delivery_id !== healthy.received[0]?.deliveryId);
    assert.equal(ownerRows.length, FAILURES_TO_OPEN + 3);
    assert.deepEqual(
      ownerRows.map((row) => [row.state, row.attempts, row.available_at]),
      [...Array(FAILURES_TO_OPEN).fill(['pending', 1, start + OPEN_MS]), ...Array(3).fill(['pending', 0, start + OPEN_MS])],
    );
    assert.equal(rows.find((row) => row.delivery_id === healthy.received[0]?.deliveryId)?.state, 'sent');

    // Half open: one probe; it fails, so the circuit opens again and the rest wait another cool-down.
    clock = start + OPEN_MS;
    dead.answers.push(503);
    await deliverNow(server);
    assert.equal(dead.received.length, FAILURES_TO_OPEN + 1, 'one probe, not the whole backlog');
    rows = (await webhookRows()).filter((row) => row.delivery_id !== healthy.received[0]?.deliveryId);
    const probe = rows.find((row) => row.delivery_id === dead.received.at(-1)?.deliveryId);
    const probed = ownerRows.find((row) => row.delivery_id === probe?.delivery_id);
    assert.deepEqual([probe?.state, probe?.attempts, probe?.last_error], ['pending', (probed?.attempts ?? 0) + 1, 'HTTP 503'], 'the probe counts as an attempt');
    assert.deepEqual(
      rows.filter((row) => row !== probe).map((row) => [row.state, row.attempts, row.available_at]),
      ownerRows.filter((row) => row !== probed).map((row) => ['pending', row.attempts, start + 2 * OPEN_MS]),
    );

    // The next probe succeeds: the circuit closes and the backlog goes, each delivery once.
    clock = start + 2 * OPEN_MS;
    await deliverNow(server);
    rows = await webhookRows();
    assert.deepEqual(rows.map((row) => row.state), Array(FAILURES_TO_OPEN + 4).fill('sent'));
    const delivered = dead.deliveryIds();
    assert.equal(delivered.length, FAILURES_TO_OPEN + 3);
    assert.equal(new Set(delivered).size, delivered.length);
    assert.ok(dead.received.every((call) => call.verified));
  });
});
