import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../support/engines.ts';
import { eventually } from '../../support/eventually.ts';
import { freePort } from '../../support/ports.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { Mailbox } from '../auth/support/mailbox.ts';
import { Client } from '../devices/helpers.ts';
import { countRows, deliveries, deliverNow, raiseEvents, RecordingPushSender, WebhookReceiver } from './helpers.ts';

const P256DH = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 7)]).toString('base64url');
const AUTH = Buffer.alloc(16, 3).toString('base64url');

describeEachEngine('notification delivery', (engine) => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  let mailbox: Mailbox;
  let push: RecordingPushSender;
  let owner: Client;
  let friend: Client;
  let device: number;
  let metricsUrl: string;

  before(async () => {
    receiver = await WebhookReceiver.start();
    mailbox = await Mailbox.start();
    push = new RecordingPushSender();
    const metricsPort = await freePort();
    server = await startTestServer(
      engine,
      { NOTIFY_ALLOW_PRIVATE_URLS: 'true', NOTIFY_RETRY_DELAY: '1', SMTP_URL: mailbox.url, WEB_URL: 'https://app.fleet.example', METRICS_PORT: String(metricsPort) },
      { pushSenders: new Map([['fcm', push]]) },
    );
    metricsUrl = server.metricsUrl as string;
    // The worker runs when the test says so.
    await server.notifications?.worker.stop();
    owner = new Client(server, await server.login({ email: 'delivery-owner@example.com' }));
    friend = new Client(server, await server.login({ email: 'delivery-friend@example.com' }));
    device = (await owner.post('/api/devices/', { name: 'Garden dog', uniqueId: 'delivery-dog' })).body.id;
  });
  after(async () => {
    await server.dispose();
    await receiver.close();
    await mailbox.close();
  });

  async function webhookRule(client: Client, body: Record<string, unknown> = {}): Promise<number> {
    const created = await client.post('/api/notifications', { type: 'alarm', deviceIds: [device], channels: ['webhook'], ...body, attributes: { webhookUrl: receiver.url, ...((body.attributes as object) ?? {}) } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    receiver.secret = created.body.webhookSecret;
    return created.body.id;
  }

  async function clearRules(): Promise<void> {
    for (const client of [owner, friend]) for (const rule of (await client.get('/api/notifications')).body) await client.delete(`/api/notifications/${rule.id}`);
    receiver.received.length = 0;
    receiver.answers.length = 0;
  }

  it('posts a signed webhook with a delivery id, once', async () => {
    const rule = await webhookRule(owner);
    const [position] = await server.tracking!.api.storePositions([
      { deviceId: device, protocol: 'osmand', serverTime: Date.now(), deviceTime: Date.now(), fixTime: Date.now(), valid: true, latitude: 52.5, longitude: 13.4 },
    ]);
    const [eventId] = await server.tracking!.api.storeEvents([{ type: 'alarm', eventTime: Date.parse('2026-01-02T03:04:05Z'), deviceId: device, positionId: position, attributes: { alarm: 'sos' } }]);
    await deliverNow(server);
    assert.equal(receiver.received.length, 1);
    const [call] = receiver.received;
    assert.ok(call?.verified, 'the signature checks out with the secret');
    assert.match(call.deliveryId, /^[0-9a-f-]{36}$/);
    assert.deepEqual(call.body.device, { id: device, name: 'Garden dog', uniqueId: 'delivery-dog' });
    assert.equal(call.body.id, eventId);
    assert.equal(call.body.type, 'alarm');
    assert.equal(call.body.eventTime, '2026-01-02T03:04:05.000Z');
    assert.deepEqual(call.body.event.attributes, { alarm: 'sos' });
    assert.equal(call.body.event.positionId, position);
    assert.equal(call.body.position.id, position, 'the owner may see positions');
    assert.equal(call.body.position.latitude, 52.5);
    const [stored] = await deliveries(server);
    assert.equal(stored?.state, 'sent');
    assert.equal(stored?.delivery_id, call.deliveryId);

    await deliverNow(server);
    assert.equal(receiver.received.length, 1, 'a sent delivery is not sent again');
    assert.ok(rule > 0);
    await clearRules();
  });

  it('narrows alarm rules to the alarms they name', async () => {
    await webhookRule(owner, { attributes: { alarms: 'sos, powerCut' } });
    await raiseEvents(server, [{ deviceId: device, alarm: 'tow' }, { deviceId: device, alarm: 'powerCut' }, { deviceId: device, alarm: 'general,sos' }]);
    // Sent side by side: in any order.
    assert.deepEqual(receiver.received.map((call) => call.body.event.attributes.alarm).sort(), ['general,sos', 'powerCut']);
    await clearRules();
  });

  it('resolves recipients when it sends: a share without notifications, or withdrawn, stops them at once', async () => {
    const share = await owner.post(`/api/devices/${device}/shares`, { email: 'delivery-friend@example.com', permissions: { events: true, notifications: true } });
    assert.equal(share.status, 201, JSON.stringify(share.body));
    await webhookRule(friend);
    await raiseEvents(server, [{ deviceId: device, alarm: 'sos' }]);
    assert.equal(receiver.received.length, 1, 'the friend with the permission is notified');
    assert.equal(receiver.received[0]?.body.position, undefined, 'without the position permission, no position');

    // Queued while the friend may be notified, sent after the permission went: not sent.
    await server.tracking!.api.storeEvents([{ type: 'alarm', eventTime: Date.now(), deviceId: device, attributes: { alarm: 'sos' } }]);
    await server.outbox?.drainNow();
    const updated = await owner.put(`/api/devices/${device}/shares/${friend.userId}`, { permissions: { events: true, notifications: false } });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    await server.notifications?.worker.drainNow();
    assert.equal(receiver.received.length, 1);
    assert.equal((await deliveries(server)).at(-1)?.state, 'dropped');

    await raiseEvents(server, [{ deviceId: device, alarm: 'sos' }]);
    assert.equal(receiver.received.length, 1, 'nothing is queued for the friend any more');

    await owner.put(`/api/devices/${device}/shares/${friend.userId}`, { permissions: { events: true, notifications: true } });
    await raiseEvents(server, [{ deviceId: device, alarm: 'sos' }]);
    assert.equal(receiver.received.length, 2, 'the permission back, the messages are back');
    assert.equal((await owner.delete(`/api/devices/${device}/shares/${friend.userId}`)).status, 204);
    await raiseEvents(server, [{ deviceId: device, alarm: 'sos' }]);
    assert.equal(receiver.received.length, 2, 'a withdrawn share stops them');
    await clearRules();
  });

  it('retries 5xx, 408, 429 and network errors with backoff, under the same delivery id', async () => {
    await webhookRule(owner);
    receiver.answers.push(500, 408, 429);
    await raiseEvents(server, [{ deviceId: device, alarm: 'sos' }]);
    let [stored] = (await deliveries(server)).slice(-1);
    assert.equal(stored?.state, 'pending');
    assert.equal(stored?.attempts, 1);
    assert.equal(stored?.last_error, 'HTTP 500');
    await eventually(async () => {
      await server.notifications?.worker.drainNow();
      return receiver.deliveryIds().length === 1;
    }, 'sent after its retries');
    assert.deepEqual(receiver.received.map((call) => call.status), [500, 408, 429, 200]);
    assert.equal(new Set(receiver.received.map((call) => call.deliveryId)).size, 1, 'one delivery id across retries');
    [stored] = (await deliveries(server)).slice(-1);
    assert.equal(stored?.state, 'sent');
    assert.equal(stored?.attempts, 3);
    await clearRules();
  });

  it('retries when the receiver cannot be reached', async () => {
    const closed = `http://127.0.0.1:${await freePort()}/hook`;
    const rule = await owner.post('/api/notifications', { type: 'alarm', deviceIds: [device], channels: ['webhook'], attributes: { webhookUrl: closed } });
    assert.equal(rule.status, 201, JSON.stringify(rule.body));
    await raiseEvents(server, [{ deviceId: device, alarm: 'sos' }]);
    const [stored] = (await deliveries(server)).slice(-1);
    assert.equal(stored?.state, 'pending');
    assert.equal(stored?.attempts, 1);
    assert.match(stored?.last_error ?? '', /^network: /);
    await clearRules();
  });

  it('schedules the first retry 5 to 10 s out by default, and gives up after the retry window', async () => {
    const slow = await startTestServer(engine, { NOTIFY_ALLOW_PRIVATE_URLS: 'true' });
    const dead = await startTestServer(engine, { NOTIFY_ALLOW_PRIVATE_URLS: 'true', NOTIFY_RETRY_WINDOW: '1' });
    try {
      for (const [instance, expected] of [[slow, 'pending'], [dead, 'failed']] as const) {
        await instance.notifications?.worker.stop();
        const user = new Client(instance, await instance.login({ email: 'retry@example.com' }));
        const own = (await user.post('/api/devices/', { name: 'Retry', uniqueId: 'retry-1' })).body.id;
        const rule = await user.post('/api/notifications', { type: 'alarm', deviceIds: [own], channels: ['webhook'], attributes: { webhookUrl: receiver.url } });
        receiver.secret = rule.body.webhookSecret;
        receiver.answers.push(503);
        const started = Date.now();
        await raiseEvents(instance, [{ deviceId: own, alarm: 'sos' }]);
        const finished = Date.now();
        const [stored] = await deliveries(instance);
        assert.equal(stored?.state, expected);
        assert.equal(stored?.last_error, 'HTTP 503');
        if (expected === 'pending') {
          assert.ok(stored.available_at >= started + 5000 && stored.available_at <= finished + 10_000, `first retry at +${stored.available_at - started} ms`);
        }
      }
    } finally {
      await slow.dispose();
      await dead.dispose();
      await clearRules();
    }
  });

  it('fails for good on another 4xx, shows the failure to its owner only, and retries it on request', async () => {
    await webhookRule(owner);
    receiver.answers.push(410);
    await raiseEvents(server, [{ deviceId: device, alarm: 'sos' }]);
    const failed = await owner.get('/api/notifications/deliveries?status=failed');
    assert.equal(failed.status, 200);
    assert.equal(failed.body.length, 1);
    const [delivery] = failed.body;
    assert.equal(delivery.channel, 'webhook');
    assert.equal(delivery.status, 'failed');
    assert.equal(delivery.lastError, 'HTTP 410');
    assert.equal(delivery.attempts, 1);
    assert.deepEqual((await friend.get('/api/notifications/deliveries?status=failed')).body, []);
    assert.equal((await friend.post(`/api/notifications/deliveries/${delivery.id}/retry`)).body.code, 'NOT_FOUND');
    assert.equal((await owner.get('/api/notifications/deliveries?status=lost')).body.code, 'VALIDATION_FAILED');
    assert.equal((await owner.post('/api/notifications/deliveries/0/retry')).body.code, 'VALIDATION_FAILED');
    assert.equal((await owner.post('/api/notifications/deliveries/999999/retry')).body.code, 'NOT_FOUND');

    const retried = await owner.post(`/api/notifications/deliveries/${delivery.id}/retry`);
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
    assert.equal(retried.body.status, 'pending');
    await server.notifications?.worker.drainNow();
    assert.deepEqual(receiver.received.map((call) => [call.status, call.deliveryId]), [
      [410, delivery.deliveryId],
      [200, delivery.deliveryId],
    ]);
    assert.deepEqual((await owner.get('/api/notifications/deliveries?status=failed')).body, []);
    const again = await owner.post(`/api/notifications/deliveries/${delivery.id}/retry`);
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'DELIVERY_NOT_FAILED');
    await clearRules();
  });

  it('mails in the user’s timezone with a link into the web app, folding repeats within a minute', async () => {
    const profile = await owner.put('/api/auth/profile', { timezone: 'Asia/Tokyo', language: 'en-GB' });
    assert.equal(profile.status, 200, JSON.stringify(profile.body));
    const rule = await owner.post('/api/notifications', { type: 'alarm', deviceIds: [device], channels: ['mail'] });
    const eventTime = Date.parse('2026-03-04T05:06:07Z');
    const [eventId] = await server.tracking!.api.storeEvents([{ type: 'alarm', eventTime, deviceId: device, attributes: { alarm: 'sos' } }]);
    await deliverNow(server);
    const mail = await mailbox.waitFor('delivery-owner@example.com');
    assert.equal(mail.subject, 'Trackstack: Garden dog: sos alarm');
    const local = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'long', timeZone: 'Asia/Tokyo' }).format(eventTime);
    assert.ok(mail.text.includes(`Garden dog raised the sos alarm at ${local}.`), mail.text);
    assert.ok(local.includes('14:06'), local);
    assert.ok(mail.text.includes(`https://app.fleet.example/devices/${device}?event=${eventId}`), mail.text);
    assert.ok(mail.html.includes(`href="https://app.fleet.example/devices/${device}?event=${eventId}"`));

    // Two more within the minute: the first waits for the window, the second folds into it.
    await raiseEvents(server, [{ deviceId: device, alarm: 'sos' }]);
    await raiseEvents(server, [{ deviceId: device, alarm: 'sos' }]);
    assert.equal(mailbox.to('delivery-owner@example.com').length, 1, 'repeats wait for the window');
    const rows = (await deliveries(server)).filter((row) => row.channel === 'mail');
    assert.deepEqual(rows.map((row) => row.state), ['sent', 'pending', 'collapsed']);
    assert.equal(rows[2]?.collapsed_into, rows[1]?.id);
    // The window ends (moved here rather than waited for).
    await server.database!.db.updateTable('notification_deliveries' as never).set({ available_at: Date.now() } as never).where('id' as never, '=', rows[1]?.id as never).execute();
    await server.notifications?.worker.drainNow();
    const folded = await mailbox.waitFor('delivery-owner@example.com', 2);
    assert.equal(folded.subject, 'Trackstack: Garden dog: sos alarm (2 times in the last minute)');
    assert.equal(mailbox.to('delivery-owner@example.com').length, 2);
    assert.ok(rule.body.id > 0);
    await clearRules();
  });

  it('registers push targets, sends through the provider, and deletes a target the provider calls gone', async () => {
    const before = await countRows(server, 'notification_targets');
    const bad: [unknown, string][] = [
      [{ kind: 'fcm' }, 'INVALID_PUSH_TARGET'],
      [{ kind: 'fcm', token: 'abc', subscription: { endpoint: 'https://push.example/x', keys: { p256dh: P256DH, auth: AUTH } } }, 'INVALID_PUSH_TARGET'],
      [{ kind: 'fcm', token: '' }, 'VALIDATION_FAILED'],
      [{ kind: 'fcm', token: 'has space' }, 'VALIDATION_FAILED'],
      [{ kind: 'sms', token: 'abc' }, 'VALIDATION_FAILED'],
      [{ kind: 'fcm', token: 'abc', extra: true }, 'VALIDATION_FAILED'],
      [{ kind: 'fcm', token: 'abc', name: 'x'.repeat(129) }, 'VALIDATION_FAILED'],
      [{ kind: 'apns', token: 'a'.repeat(64) }, 'CHANNEL_NOT_AVAILABLE'],
      [{ kind: 'webpush', subscription: { endpoint: 'https://push.example/x', keys: { p256dh: P256DH, auth: AUTH } } }, 'CHANNEL_NOT_AVAILABLE'],
    ];
    for (const [body, code] of bad) {
      const response = await owner.post('/api/notifications/targets', body);
      assert.equal(response.body.code, code, `${JSON.stringify(body)}: ${JSON.stringify(response.body)}`);
    }
    assert.equal(await countRows(server, 'notification_targets'), before);

    const phone = await owner.post('/api/notifications/targets', { kind: 'fcm', token: 'fcm-token-0001', name: 'Pixel' });
    assert.equal(phone.status, 201, JSON.stringify(phone.body));
    assert.deepEqual({ ...phone.body, createdAt: undefined }, { id: phone.body.id, kind: 'fcm', name: 'Pixel', hint: '…n-0001', createdAt: undefined });
    const again = await owner.post('/api/notifications/targets', { kind: 'fcm', token: 'fcm-token-0001' });
    assert.equal(again.status, 200, 'the same token again is the same target');
    assert.equal(again.body.id, phone.body.id);
    assert.deepEqual((await owner.get('/api/notifications/targets')).body.map((target: { id: number }) => target.id), [phone.body.id]);
    assert.deepEqual((await friend.get('/api/notifications/targets')).body, []);
    assert.equal((await friend.delete(`/api/notifications/targets/${phone.body.id}`)).status, 404);
    assert.deepEqual((await owner.get('/api/notifications/channels')).body.map((channel: { name: string }) => channel.name), ['web', 'mail', 'webhook', 'fcm']);

    await owner.post('/api/notifications', { type: 'ignitionOn', deviceIds: [device], channels: ['fcm', 'web'] });
    await raiseEvents(server, [{ deviceId: device, type: 'ignitionOn' }]);
    assert.equal(push.sent.length, 1);
    assert.deepEqual(push.sent[0]?.target, { id: String(phone.body.id), kind: 'fcm', token: 'fcm-token-0001' });
    assert.equal(push.sent[0]?.message.title, 'Garden dog: ignition on');
    assert.equal(push.sent[0]?.message.data.deviceId, String(device));
    const web = (await deliveries(server)).filter((row) => row.channel === 'web');
    assert.equal(web.at(-1)?.state, 'sent', 'the web channel is recorded as delivered: the socket and the web app show it');

    push.outcomes.push({ kind: 'gone', error: 'UNREGISTERED' });
    await raiseEvents(server, [{ deviceId: device, type: 'ignitionOn' }]);
    // Within the collapse window: moved to now rather than waited for.
    await server.database!.db.updateTable('notification_deliveries' as never).set({ available_at: Date.now() } as never).where('state' as never, '=', 'pending' as never).execute();
    await server.notifications?.worker.drainNow();
    assert.equal(push.sent.length, 2);
    assert.deepEqual((await owner.get('/api/notifications/targets')).body, [], 'the gone target is deleted');
    assert.equal((await deliveries(server)).filter((row) => row.channel === 'fcm').at(-1)?.state, 'dropped');

    const removed = await owner.post('/api/notifications/targets', { kind: 'fcm', token: 'fcm-token-0002' });
    assert.equal((await owner.delete(`/api/notifications/targets/${removed.body.id}`)).status, 204);
    assert.equal((await owner.delete(`/api/notifications/targets/${removed.body.id}`)).status, 404);
    await clearRules();
  });

  it('gives a push token to the last account that registered it: a phone signed into another account stops getting the first one\'s pushes', async () => {
    const targetIds = async (client: Client) => (await client.get('/api/notifications/targets')).body.map((target: { id: number }) => target.id);
    const mine = await owner.post('/api/notifications/targets', { kind: 'fcm', token: 'fcm-token-shared-phone' });
    assert.equal(mine.status, 201);
    const theirs = await friend.post('/api/notifications/targets', { kind: 'fcm', token: 'fcm-token-shared-phone' });
    assert.equal(theirs.status, 201, 'registered anew for the second account');
    assert.notEqual(theirs.body.id, mine.body.id);
    assert.deepEqual(await targetIds(owner), [], 'the first account no longer has it');
    assert.deepEqual(await targetIds(friend), [theirs.body.id]);

    await owner.post('/api/notifications', { type: 'ignitionOn', deviceIds: [device], channels: ['fcm'] });
    const sent = push.sent.length;
    await raiseEvents(server, [{ deviceId: device, type: 'ignitionOn' }]);
    assert.equal(push.sent.length, sent, "nothing of the first account's goes to the phone");

    const back = await owner.post('/api/notifications/targets', { kind: 'fcm', token: 'fcm-token-shared-phone' });
    assert.equal(back.status, 201);
    assert.deepEqual(await targetIds(friend), []);
    assert.deepEqual(await targetIds(owner), [back.body.id]);
    assert.equal((await owner.delete(`/api/notifications/targets/${back.body.id}`)).status, 204);
    await clearRules();
  });

  it('sends a test notification to the caller on request', async () => {
    await webhookRule(owner);
    const sent = await owner.post('/api/notifications/test', { channel: 'webhook' });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    assert.deepEqual(sent.body.results, [{ channel: 'webhook', target: receiver.url, outcome: 'sent' }]);
    assert.equal(receiver.received.length, 1);
    assert.ok(receiver.received[0]?.verified);
    assert.equal(receiver.received[0]?.body.type, 'test');
    const mailed = await owner.post('/api/notifications/test', { channel: 'mail' });
    assert.deepEqual(mailed.body.results, [{ channel: 'mail', target: 'delivery-owner@example.com', outcome: 'sent' }]);
    assert.equal((await mailbox.waitFor('delivery-owner@example.com', mailbox.to('delivery-owner@example.com').length)).subject, 'Trackstack: Test notification');
    assert.equal((await owner.post('/api/notifications/test', { channel: 'apns' })).body.code, 'CHANNEL_NOT_AVAILABLE');
    assert.equal((await owner.post('/api/notifications/test', { channel: 'sms' })).body.code, 'VALIDATION_FAILED');
    const all = await owner.post('/api/notifications/test', {});
    assert.deepEqual(all.body.results.map((result: { channel: string }) => result.channel), ['web', 'mail', 'webhook', 'fcm']);
    await clearRules();
  });

  it("keeps a slow endpoint from delaying other users' deliveries", async () => {
    const slow = await WebhookReceiver.start();
    const fast = await WebhookReceiver.start();
    const instance = await startTestServer(engine, { NOTIFY_ALLOW_PRIVATE_URLS: 'true', NOTIFY_SEND_TIMEOUT: '30000', NOTIFY_DELIVERY_LEASE: '60000' });
    try {
      slow.hold = true;
      const stuck = new Client(instance, await instance.login({ email: 'slow@example.com' }));
      const other = new Client(instance, await instance.login({ email: 'fast@example.com' }));
      const stuckDevice = (await stuck.post('/api/devices/', { name: 'Slow', uniqueId: 'slow-1' })).body.id;
      const otherDevice = (await other.post('/api/devices/', { name: 'Fast', uniqueId: 'fast-1' })).body.id;
      await stuck.post('/api/notifications', { type: 'alarm', deviceIds: [stuckDevice], channels: ['webhook'], attributes: { webhookUrl: slow.url } });
      fast.secret = (await other.post('/api/notifications', { type: 'alarm', deviceIds: [otherDevice], channels: ['webhook'], attributes: { webhookUrl: fast.url } })).body.webhookSecret;
      // Far more stuck deliveries than one target may hold, queued ahead of the other user's.
      await instance.tracking!.api.storeEvents(Array.from({ length: 60 }, () => ({ type: 'alarm' as const, eventTime: Date.now(), deviceId: stuckDevice, attributes: { alarm: 'sos' } })));
      await instance.tracking!.api.storeEvents([{ type: 'alarm', eventTime: Date.now(), deviceId: otherDevice, attributes: { alarm: 'sos' } }]);
      await instance.outbox?.drainNow();
      await eventually(() => fast.deliveryIds().length === 1, 'the other user is notified while the slow endpoint holds its calls', 10_000);
      assert.ok(slow.received.length <= 4, `the slow endpoint holds no more than its own share of sends (${slow.received.length})`);
    } finally {
      await slow.close();
      await fast.close();
      await instance.dispose();
    }
  });

  it('reports queue depth, outcomes and latency on /metrics', async () => {
    const text = await (await fetch(metricsUrl)).text();
    assert.match(text, /trackstack_queue_depth\{queue="deliveries",consumer="webhook"\} \d+/);
    assert.doesNotMatch(text, /trackstack_notification_queue_depth/, 'one depth metric per queue: the durable-work one');
    assert.match(text, /trackstack_notification_deliveries_total\{channel="webhook",outcome="sent"\} \d+/);
    assert.match(text, /trackstack_notification_deliveries_total\{channel="webhook",outcome="failed"\} \d+/);
    assert.match(text, /trackstack_notification_delivery_seconds_count\{channel="webhook"\} \d+/);
  });
});
