import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../support/engines.ts';
import { eventually } from '../../support/eventually.ts';
import { startWebPushService } from '../../support/push-providers.ts';
import type { WebPushService } from '../../support/push-providers.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { Client } from '../devices/helpers.ts';
import type { Reply } from '../devices/helpers.ts';
import { countRows, raiseEvents } from './helpers.ts';

// A plan without webhooks and with one rule, beside the default plan that limits nothing.
const PLANS = [
  { id: 'free', name: 'Free', default: true, products: {}, limits: {}, features: {} },
  { id: 'basic', name: 'Basic', products: {}, limits: { notificationRules: 1 }, features: { channels: ['web', 'mail', 'webpush'] } },
];

function assertRefused(reply: Reply, status: number, code: string): void {
  assert.deepEqual([reply.status, reply.body.code], [status, code], JSON.stringify(reply.body));
}

describeEachEngine('notifications as the server configures them', (engine) => {
  let server: TestServer;
  let pushService: WebPushService;
  let owner: Client;
  let ownerId: number;
  let admin: Client;
  let device: number;

  before(async () => {
    pushService = await startWebPushService();
    const plansFile = path.join(tmpdir(), `trackstack-plans-${process.pid}-${engine}.json`);
    writeFileSync(plansFile, JSON.stringify(PLANS));
    server = await startTestServer(engine, { NOTIFY_ALLOW_PRIVATE_URLS: 'true', PLANS_FILE: plansFile });
    const signedIn = await server.login({ email: 'configured-owner@example.com' });
    ownerId = signedIn.userId;
    owner = new Client(server, signedIn);
    admin = new Client(server, await server.login({ email: 'configured-admin@example.com', administrator: true }));
    device = (await owner.post('/api/devices/', { name: 'Van', uniqueId: 'configured-van' })).body.id;
  });
  after(async () => {
    await server.dispose();
    await pushService.close();
  });

  it('offers Web Push with its VAPID key, and delivers through a push service that decrypts the message', async () => {
    assert.ok((await owner.get('/api/notifications/channels')).body.some((channel: { name: string }) => channel.name === 'webpush'));
    const key = await owner.get('/api/notifications/targets/webpush-key');
    assert.equal(key.status, 200);
    assert.match(key.body.publicKey, /^[A-Za-z0-9_-]{87}$/);
    assert.equal((await server.app.inject({ url: '/api/notifications/targets/webpush-key' })).statusCode, 401);

    const subscription = pushService.subscribe(key.body.publicKey);
    assert.equal((await owner.post('/api/notifications/targets', { kind: 'webpush', subscription, name: 'Laptop' })).status, 201);
    assert.equal((await owner.post('/api/notifications', { type: 'alarm', deviceIds: [device], channels: ['webpush'] })).status, 201);
    await raiseEvents(server, [{ deviceId: device, alarm: 'sos' }]);
    await eventually(() => pushService.received.length === 1, 'the push received', 10_000);
    const [received] = pushService.received;
    assert.equal(received!.endpoint, subscription.endpoint);
    const payload = JSON.parse(received!.plaintext) as { title: string; url: string };
    assert.match(payload.title, /Van/);
    assert.match(payload.url, new RegExp(`/devices/${device}`));
    assert.deepEqual(pushService.refused, []);
  });

  it('holds rules to the plan: its rule limit and its channels answer 402, and nothing is created', async () => {
    for (const rule of (await owner.get('/api/notifications')).body) await owner.delete(`/api/notifications/${rule.id}`);
    assert.equal((await admin.put(`/api/subscriptions/${ownerId}/plan`, { planId: 'basic' })).status, 200);
    const before = await countRows(server, 'notification_rules');

    const webhook = await owner.post('/api/notifications', { type: 'alarm', always: true, channels: ['webhook'], attributes: { webhookUrl: 'http://127.0.0.1:9/hook' } });
    assertRefused(webhook, 402, 'FEATURE_NOT_IN_PLAN');
    assert.equal(await countRows(server, 'notification_rules'), before);

    const first = await owner.post('/api/notifications', { type: 'alarm', always: true, channels: ['mail'] });
    assert.equal(first.status, 201);
    const second = await owner.post('/api/notifications', { type: 'ignitionOn', always: true, channels: ['mail'] });
    assertRefused(second, 402, 'PLAN_LIMIT_REACHED');
    assert.equal(await countRows(server, 'notification_rules'), before + 1);

    const changed = await owner.put(`/api/notifications/${first.body.id}`, { type: 'alarm', always: true, channels: ['webhook'], attributes: { webhookUrl: 'http://127.0.0.1:9/hook' } });
    assertRefused(changed, 402, 'FEATURE_NOT_IN_PLAN');
    assert.deepEqual((await owner.get(`/api/notifications/${first.body.id}`)).body.channels, ['mail']);

    const usage = (await owner.get(`/api/subscriptions/${ownerId}`)).body.usage;
    assert.equal(usage.notificationRules, 1);

    assert.equal((await admin.delete(`/api/subscriptions/${ownerId}/plan`)).status, 204);
    assert.equal((await owner.post('/api/notifications', { type: 'ignitionOn', always: true, channels: ['webhook'], attributes: { webhookUrl: 'http://127.0.0.1:9/hook' } })).status, 201);
  });
});
