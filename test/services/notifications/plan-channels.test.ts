import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { writeTestPlans } from '../billing/support/plans.ts';
import { Client } from '../devices/helpers.ts';
import { deliveries, raiseEvents, WebhookReceiver } from './helpers.ts';

const NOT_IN_PLAN = "the owner's plan does not include the webhook channel";

/** Free has only web and mail, pro every channel (test/services/billing/support/plans.ts). */
describeEachEngine('notification channels within the owner’s plan at delivery', (engine) => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  let owner: Client;
  let admin: Client;
  let device: number;

  before(async () => {
    receiver = await WebhookReceiver.start();
    server = await startTestServer(engine, { NOTIFY_ALLOW_PRIVATE_URLS: 'true', RATE_LIMITS: 'off', PLANS_FILE: writeTestPlans() });
    await server.notifications?.worker.stop();
    owner = new Client(server, await server.login({ email: 'plan-channels-owner@example.com' }));
    admin = new Client(server, await server.login({ email: 'plan-channels-admin@example.com', administrator: true }));
    device = (await owner.post('/api/devices/', { name: 'Van', uniqueId: 'plan-channels-van' })).body.id;
  });
  after(async () => {
    await server.dispose();
    await receiver.close();
  });

  const setPlan = async (planId: string) => {
    const response = await admin.put(`/api/subscriptions/${owner.userId}/plan`, { planId });
    assert.equal(response.status, 200, JSON.stringify(response.body));
  };
  const rowsOf = async (channel: string) => (await deliveries(server)).filter((row) => row.channel === channel);

  it('stops a channel the new plan lacks, queued deliveries included, while web goes on; an upgrade brings it back', async () => {
    await setPlan('pro');
    const rule = await owner.post('/api/notifications', { type: 'alarm', deviceIds: [device], channels: ['web', 'webhook'], attributes: { webhookUrl: receiver.url } });
    assert.equal(rule.status, 201, JSON.stringify(rule.body));
    receiver.secret = rule.body.webhookSecret;
    await raiseEvents(server, [{ deviceId: device, alarm: 'sos' }]);
    assert.equal(receiver.deliveryIds().length, 1);

    // Queued under pro, sent after the downgrade: not sent.
    await server.tracking!.api.storeEvents([{ type: 'alarm', eventTime: Date.now(), deviceId: device, attributes: { alarm: 'sos' } }]);
    await server.outbox?.drainNow();
    assert.equal((await rowsOf('webhook')).at(-1)?.state, 'pending');
    await setPlan('free');
    await server.notifications?.worker.drainNow();
    assert.equal(receiver.received.length, 1, 'a queued delivery on a channel the plan lost is not sent');
    assert.deepEqual((await rowsOf('webhook')).map((row) => [row.state, row.attempts, row.last_error]), [
      ['sent', 0, null],
      ['dropped', 0, NOT_IN_PLAN],
    ]);

    // Planned after the downgrade: recorded as dropped when queued, with its reason; the web channel still delivers.
    await server.tracking!.api.storeEvents([{ type: 'alarm', eventTime: Date.now(), deviceId: device, attributes: { alarm: 'sos' } }]);
    await server.outbox?.drainNow();
    assert.deepEqual((await rowsOf('webhook')).map((row) => row.state), ['sent', 'dropped', 'dropped'], 'dropped before any worker sees it');
    await server.notifications?.worker.drainNow();
    assert.equal(receiver.received.length, 1);
    assert.equal((await rowsOf('webhook')).at(-1)?.last_error, NOT_IN_PLAN);
    assert.deepEqual((await rowsOf('web')).map((row) => row.state), ['sent', 'sent', 'sent'], 'web is in the free plan');
    const dropped = await owner.get('/api/notifications/deliveries?status=dropped');
    assert.deepEqual(dropped.body.map((delivery: { channel: string; lastError: string }) => [delivery.channel, delivery.lastError]), [
      ['webhook', NOT_IN_PLAN],
      ['webhook', NOT_IN_PLAN],
    ]);

    // Skipped for good: neither retried by the worker nor on request.
    await server.notifications?.worker.drainNow();
    assert.equal(receiver.received.length, 1);
    const retried = await owner.post(`/api/notifications/deliveries/${dropped.body[0].id}/retry`);
    assert.equal(retried.status, 409);
    assert.equal(retried.body.code, 'DELIVERY_NOT_FAILED');

    // A test notification goes only where the plan allows.
    const refusedTest = await owner.post('/api/notifications/test', { channel: 'webhook' });
    assert.equal(refusedTest.status, 402, JSON.stringify(refusedTest.body));
    assert.equal(refusedTest.body.code, 'FEATURE_NOT_IN_PLAN');
    const everyChannel = await owner.post('/api/notifications/test', {});
    assert.equal(everyChannel.status, 200, JSON.stringify(everyChannel.body));
    assert.deepEqual(
      everyChannel.body.results.filter((result: { channel: string }) => result.channel === 'web' || result.channel === 'webhook'),
      [{ channel: 'web', outcome: 'sent' }, { channel: 'webhook', outcome: 'failed', error: 'your plan does not include the webhook channel' }],
    );
    assert.equal(receiver.received.length, 1, 'no test call reached the webhook');

    // The rule itself is kept; an upgrade makes it deliver again.
    await setPlan('pro');
    await raiseEvents(server, [{ deviceId: device, alarm: 'sos' }]);
    assert.equal(receiver.deliveryIds().length, 2);
    assert.equal((await rowsOf('webhook')).at(-1)?.state, 'sent');
  });
});
