import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { Mailbox } from '../auth/support/mailbox.ts';
import { Client } from '../devices/helpers.ts';
import { deliverNow, RecordingPushSender, WebhookReceiver } from './helpers.ts';

const FRIEND = 'share-flags-friend@example.com';

// What a sharee hears of an event follows their share's flags (spec §2.3; docs/notifications.md).
describeEachEngine('notifications under a share’s permissions', (engine) => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  let mailbox: Mailbox;
  let push: RecordingPushSender;
  let owner: Client;
  let friend: Client;
  let device: number;
  let geofence: number;
  let position: number;

  before(async () => {
    receiver = await WebhookReceiver.start();
    mailbox = await Mailbox.start();
    push = new RecordingPushSender();
    server = await startTestServer(engine, { NOTIFY_ALLOW_PRIVATE_URLS: 'true', SMTP_URL: mailbox.url }, { pushSenders: new Map([['fcm', push]]) });
    await server.notifications?.worker.stop();
    owner = new Client(server, await server.login({ email: 'share-flags-owner@example.com' }));
    friend = new Client(server, await server.login({ email: FRIEND }));
    device = (await owner.post('/api/devices/', { name: 'Van 7', uniqueId: 'share-flags-van' })).body.id;
    const created = await owner.post('/api/geofences', { name: 'Secret depot', area: 'CIRCLE (52.5 13.4, 200)' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    geofence = created.body.id;
    const stored = await server.tracking?.api.storePositions([
      { deviceId: device, protocol: 'osmand', serverTime: Date.now(), deviceTime: Date.now(), fixTime: Date.now(), valid: true, latitude: 52.5, longitude: 13.4 },
    ]);
    position = stored?.[0] as number;
    assert.equal((await friend.put('/api/auth/profile', { timezone: 'UTC' })).status, 200);
    assert.equal((await friend.post('/api/notifications/targets', { kind: 'fcm', token: 'share-flags-phone' })).status, 201);
  });
  after(async () => {
    await server.dispose();
    await receiver.close();
    await mailbox.close();
  });

  /** Shares the device with these flags, has the friend's rules (webhook, mail and push) hear one geofence and one alarm event, and answers what each channel carried. */
  async function heard(permissions: Record<string, boolean>) {
    const share = await owner.post(`/api/devices/${device}/shares`, { email: FRIEND, permissions });
    assert.equal(share.status, 201, JSON.stringify(share.body));
    const rules: number[] = [];
    for (const type of ['geofenceEnter', 'alarm']) {
      const rule = await friend.post('/api/notifications', { type, deviceIds: [device], channels: ['webhook', 'mail', 'fcm'], attributes: { webhookUrl: receiver.url } });
      assert.equal(rule.status, 201, JSON.stringify(rule.body));
      rules.push(rule.body.id);
    }
    receiver.received.length = 0;
    push.sent.length = 0;
    const mails = mailbox.to(FRIEND).length;
    const eventTime = Date.now();
    await server.tracking?.api.storeEvents([
      { type: 'geofenceEnter', eventTime, deviceId: device, positionId: position, geofenceId: geofence, attributes: { note: 'gate 3' } },
      { type: 'alarm', eventTime, deviceId: device, positionId: position, attributes: { alarm: 'sos' } },
    ]);
    await deliverNow(server);
    await mailbox.waitFor(FRIEND, mails + 2);
    const byType = <T>(items: T[], typeOf: (item: T) => string) => Object.fromEntries(items.map((item) => [typeOf(item), item]));
    const result = {
      webhooks: byType(receiver.received.map((call) => call.body), (body) => body.type),
      mails: byType(mailbox.to(FRIEND).slice(mails), (mail) => (/entered|left/.test(mail.subject) ? 'geofenceEnter' : 'alarm')),
      pushes: byType(push.sent.map((sent) => sent.message), (message) => message.data.type as string),
    };
    for (const rule of rules) await friend.delete(`/api/notifications/${rule}`);
    assert.equal((await owner.delete(`/api/devices/${device}/shares/${friend.userId}`)).status, 204);
    return result;
  }

  it('with notifications alone: that the event happened, when, on which device, without its attributes, position or geofence, on every channel', async () => {
    const { webhooks, mails, pushes } = await heard({ notifications: true });
    for (const type of ['geofenceEnter', 'alarm']) {
      const body = webhooks[type];
      assert.deepEqual(Object.keys(body).sort(), ['device', 'event', 'eventTime', 'id', 'type'], type);
      assert.deepEqual(body.device, { id: device, name: 'Van 7', uniqueId: 'share-flags-van' });
      assert.deepEqual({ ...body.event, id: undefined, eventTime: undefined }, {
        id: undefined, type, eventTime: undefined, deviceId: device, positionId: null, geofenceId: null, maintenanceId: null, attributes: {},
      });
    }
    assert.equal(mails.geofenceEnter?.subject, 'Trackstack: Van 7 entered a geofence');
    assert.equal(mails.alarm?.subject, 'Trackstack: Van 7: alarm');
    assert.match(mails.alarm?.text ?? '', /Van 7 raised an alarm at /);
    for (const mail of Object.values(mails)) assert.doesNotMatch(`${mail.subject}${mail.text}${mail.html}`, /Secret depot|sos|gate 3/);
    assert.equal(pushes.geofenceEnter?.title, 'Van 7 entered a geofence');
    assert.equal(pushes.alarm?.title, 'Van 7: alarm');
    for (const message of Object.values(pushes)) assert.doesNotMatch(JSON.stringify(message), /Secret depot|sos|gate 3/);
  });

  it('with events and geofences but not position: attributes and the geofence, no position', async () => {
    const { webhooks, mails, pushes } = await heard({ notifications: true, events: true, geofences: true });
    assert.deepEqual(webhooks.geofenceEnter.geofence, { id: geofence, name: 'Secret depot' });
    assert.equal(webhooks.geofenceEnter.event.geofenceId, geofence);
    assert.deepEqual(webhooks.geofenceEnter.event.attributes, { note: 'gate 3' });
    assert.deepEqual(webhooks.alarm.event.attributes, { alarm: 'sos' });
    for (const body of Object.values(webhooks)) {
      assert.equal(body.position, undefined);
      assert.equal(body.event.positionId, null);
    }
    assert.equal(mails.geofenceEnter?.subject, 'Trackstack: Van 7 entered Secret depot');
    assert.equal(mails.alarm?.subject, 'Trackstack: Van 7: sos alarm');
    assert.equal(pushes.geofenceEnter?.title, 'Van 7 entered Secret depot');
  });

  it('with geofences but not events: the geofence, no attributes', async () => {
    const { webhooks, pushes } = await heard({ notifications: true, geofences: true });
    assert.deepEqual(webhooks.geofenceEnter.geofence, { id: geofence, name: 'Secret depot' });
    assert.deepEqual(webhooks.geofenceEnter.event.attributes, {});
    assert.deepEqual(webhooks.alarm.event.attributes, {});
    assert.equal(pushes.alarm?.title, 'Van 7: alarm');
  });

  it('with position too: the position and its id, as the owner hears it', async () => {
    const { webhooks } = await heard({ notifications: true, events: true, geofences: true, position: true });
    for (const body of Object.values(webhooks)) {
      assert.equal(body.position?.id, position);
      assert.equal(body.event.positionId, position);
    }
    assert.deepEqual(webhooks.geofenceEnter.geofence, { id: geofence, name: 'Secret depot' });
  });
});
