import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../../support/engines.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { Client } from '../devices/helpers.ts';
import { countRows, WebhookReceiver } from './helpers.ts';

describeEachEngine('notification rules', (engine) => {
  let server: TestServer;
  let owner: Client;
  let other: Client;
  let receiver: WebhookReceiver;
  let ownDevice: number;
  let sharedWithout: number;
  let othersDevice: number;

  before(async () => {
    server = await startTestServer(engine, { NOTIFY_ALLOW_PRIVATE_URLS: 'true', MAX_NOTIFICATION_RULES_PER_USER: '5' });
    receiver = await WebhookReceiver.start();
    owner = new Client(server, await server.login({ email: 'rules-owner@example.com' }));
    other = new Client(server, await server.login({ email: 'rules-other@example.com' }));
    ownDevice = (await owner.post('/api/devices/', { name: 'Van', uniqueId: 'rules-van' })).body.id;
    othersDevice = (await other.post('/api/devices/', { name: 'Bike', uniqueId: 'rules-bike' })).body.id;
    sharedWithout = (await other.post('/api/devices/', { name: 'Boat', uniqueId: 'rules-boat' })).body.id;
    const share = await other.post(`/api/devices/${sharedWithout}/shares`, { email: 'rules-owner@example.com', permissions: { position: true, events: true } });
    assert.equal(share.status, 201, JSON.stringify(share.body));
  });
  after(async () => {
    await receiver.close();
    await server.dispose();
  });

  it('creates, reads, replaces and deletes a rule of its owner', async () => {
    const created = await owner.post('/api/notifications', { type: 'alarm', deviceIds: [ownDevice], channels: ['mail', 'web'], attributes: { alarms: 'sos,powerCut' } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual({ ...created.body, createdAt: undefined, id: undefined }, {
      id: undefined,
      type: 'alarm',
      always: false,
      deviceIds: [ownDevice],
      channels: ['mail', 'web'],
      attributes: { alarms: 'sos,powerCut' },
      calendarId: null,
      createdAt: undefined,
    });
    assert.equal(created.body.webhookSecret, undefined, 'no webhook, no secret');
    const id = created.body.id;
    assert.deepEqual((await owner.get(`/api/notifications/${id}`)).body, created.body);
    assert.deepEqual((await owner.get('/api/notifications')).body.map((rule: { id: number }) => rule.id), [id]);

    const replaced = await owner.put(`/api/notifications/${id}`, { type: 'geofenceEnter', always: true, channels: ['webhook'], attributes: { webhookUrl: receiver.url } });
    assert.equal(replaced.status, 200, JSON.stringify(replaced.body));
    assert.equal(replaced.body.always, true);
    assert.deepEqual(replaced.body.deviceIds, []);
    assert.match(replaced.body.webhookSecret, /^whsec_[0-9a-f]{64}$/, 'the first webhook of the rule gets its secret');
    assert.equal((await owner.get(`/api/notifications/${id}`)).body.webhookSecret, undefined, 'shown once');
    assert.equal((await owner.put(`/api/notifications/${id}`, { type: 'alarm', always: true, channels: ['webhook'], attributes: { webhookUrl: receiver.url } })).body.webhookSecret, undefined);

    assert.equal((await owner.delete(`/api/notifications/${id}`)).status, 204);
    assert.equal((await owner.get(`/api/notifications/${id}`)).status, 404);
    assert.deepEqual((await owner.get('/api/notifications')).body, []);
  });

  it('returns the webhook secret once, at creation', async () => {
    const created = await owner.post('/api/notifications', { type: 'alarm', always: true, channels: ['webhook'], attributes: { webhookUrl: receiver.url } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.match(created.body.webhookSecret, /^whsec_[0-9a-f]{64}$/);
    const listed = (await owner.get('/api/notifications')).body.find((rule: { id: number }) => rule.id === created.body.id);
    assert.equal(listed.webhookSecret, undefined);
    await owner.delete(`/api/notifications/${created.body.id}`);
  });

  it("answers 404 for another user's rule, and changes nothing", async () => {
    const created = await owner.post('/api/notifications', { type: 'alarm', deviceIds: [ownDevice], channels: ['mail'] });
    const id = created.body.id;
    assert.equal((await other.get(`/api/notifications/${id}`)).status, 404);
    assert.equal((await other.put(`/api/notifications/${id}`, { type: 'alarm', always: true, channels: ['web'] })).body.code, 'NOT_FOUND');
    assert.equal((await other.delete(`/api/notifications/${id}`)).body.code, 'NOT_FOUND');
    assert.deepEqual((await other.get('/api/notifications')).body, []);
    assert.deepEqual((await owner.get(`/api/notifications/${id}`)).body, created.body);
    await owner.delete(`/api/notifications/${id}`);
  });

  it('lists the event types and the configured channels', async () => {
    const types = (await owner.get('/api/notifications/types')).body.map((entry: { type: string }) => entry.type);
    assert.ok(types.includes('alarm') && types.includes('geofenceEnter') && types.length === 18);
    // Web Push is always offered (its VAPID keys are generated); FCM and APNs only once configured.
    assert.deepEqual((await owner.get('/api/notifications/channels')).body, [{ name: 'web' }, { name: 'mail' }, { name: 'webhook' }, { name: 'webpush' }]);
  });

  it('refuses every bad rule with its code and creates nothing', async () => {
    const before = await countRows(server, 'notification_rules');
    const cases: [unknown, number, string][] = [
      [{ type: 'alarm', deviceIds: [ownDevice], channels: [] }, 400, 'VALIDATION_FAILED'],
      [{ type: 'alarm', deviceIds: [ownDevice], channels: ['mail', 'mail'] }, 400, 'VALIDATION_FAILED'],
      [{ type: 'alarm', deviceIds: [ownDevice], channels: ['sms'] }, 400, 'VALIDATION_FAILED'],
      [{ type: 'noSuchType', deviceIds: [ownDevice], channels: ['mail'] }, 400, 'VALIDATION_FAILED'],
      [{ deviceIds: [ownDevice], channels: ['mail'] }, 400, 'VALIDATION_FAILED'],
      [{ type: 'alarm', deviceIds: [ownDevice], channels: ['mail'], extra: 1 }, 400, 'VALIDATION_FAILED'],
      [{ type: 'alarm', deviceIds: [0], channels: ['mail'] }, 400, 'VALIDATION_FAILED'],
      [{ type: 'alarm', deviceIds: ['1'], channels: ['mail'] }, 400, 'VALIDATION_FAILED'],
      [{ type: 'alarm', always: 'yes', channels: ['mail'] }, 400, 'VALIDATION_FAILED'],
      [{ type: 'alarm', always: true, deviceIds: [ownDevice], channels: ['mail'] }, 400, 'VALIDATION_FAILED'],
      [{ type: 'alarm', channels: ['mail'] }, 400, 'DEVICES_REQUIRED'],
      [{ type: 'alarm', deviceIds: [], channels: ['mail'] }, 400, 'DEVICES_REQUIRED'],
      [{ type: 'alarm', always: true, channels: ['fcm'] }, 400, 'CHANNEL_NOT_AVAILABLE'],
      [{ type: 'alarm', always: true, channels: ['webhook'] }, 400, 'WEBHOOK_URL_REQUIRED'],
      [{ type: 'alarm', always: true, channels: ['webhook'], attributes: { webhookUrl: 'not a url' } }, 400, 'INVALID_WEBHOOK_URL'],
      [{ type: 'alarm', always: true, channels: ['webhook'], attributes: { webhookUrl: 'ftp://example.com/x' } }, 400, 'INVALID_WEBHOOK_URL'],
      [{ type: 'alarm', always: true, channels: ['webhook'], attributes: { webhookUrl: 'http://user:pw@127.0.0.1/x' } }, 400, 'INVALID_WEBHOOK_URL'],
      [{ type: 'alarm', always: true, channels: ['webhook'], attributes: { webhookUrl: 42 } }, 400, 'INVALID_WEBHOOK_URL'],
      [{ type: 'alarm', always: true, channels: ['webhook'], attributes: { webhookUrl: 'http://no-such-host.invalid/x' } }, 400, 'INVALID_WEBHOOK_URL'],
      [{ type: 'alarm', always: true, channels: ['mail'], attributes: { alarms: 'sos;fire' } }, 400, 'INVALID_ALARMS'],
      [{ type: 'alarm', always: true, channels: ['mail'], attributes: { alarms: 7 } }, 400, 'INVALID_ALARMS'],
      [{ type: 'alarm', deviceIds: [ownDevice], channels: ['mail'], calendarId: 1 }, 400, 'UNKNOWN_CALENDAR'],
      [{ type: 'alarm', always: true, channels: ['web'], calendarId: 7 }, 400, 'UNKNOWN_CALENDAR'],
      [{ type: 'alarm', deviceIds: [ownDevice], channels: ['mail'], calendarId: 0 }, 400, 'VALIDATION_FAILED'],
      [{ type: 'alarm', deviceIds: [ownDevice], channels: ['mail'], calendarId: 'weekdays' }, 400, 'VALIDATION_FAILED'],
      [{ type: 'alarm', deviceIds: [othersDevice], channels: ['mail'] }, 403, 'FORBIDDEN'],
      [{ type: 'alarm', deviceIds: [sharedWithout], channels: ['mail'] }, 403, 'PERMISSION_REQUIRED'],
      [{ type: 'alarm', deviceIds: [ownDevice, 999_999], channels: ['mail'] }, 403, 'FORBIDDEN'],
    ];
    for (const [body, status, code] of cases) {
      const response = await owner.post('/api/notifications', body);
      assert.equal(response.status, status, `${JSON.stringify(body)}: ${JSON.stringify(response.body)}`);
      assert.equal(response.body.code, code, JSON.stringify(body));
    }
    const existing = (await owner.post('/api/notifications', { type: 'alarm', deviceIds: [ownDevice], channels: ['mail'] })).body;
    for (const [body, status, code] of cases) {
      const response = await owner.put(`/api/notifications/${existing.id}`, body);
      assert.equal(response.status, status, `PUT ${JSON.stringify(body)}: ${JSON.stringify(response.body)}`);
      assert.equal(response.body.code, code);
    }
    assert.deepEqual((await owner.get(`/api/notifications/${existing.id}`)).body, existing, 'a refused PUT changed nothing');
    assert.equal((await owner.get('/api/notifications/abc')).body.code, 'VALIDATION_FAILED');
    assert.equal(await countRows(server, 'notification_rules'), before + 1);
    await owner.delete(`/api/notifications/${existing.id}`);
  });

  it('takes no calendar: the spec defines none, so a calendarId is refused rather than stored and ignored', async () => {
    const created = await owner.post('/api/notifications', { type: 'alarm', deviceIds: [ownDevice], channels: ['mail'], calendarId: null });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.calendarId, null);
    const refused = await owner.put(`/api/notifications/${created.body.id}`, { type: 'alarm', deviceIds: [ownDevice], channels: ['mail'], calendarId: 3 });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.code, 'UNKNOWN_CALENDAR');
    assert.equal(refused.body.message, 'No calendar has id 3: this server has no calendars');
    assert.deepEqual((await owner.get(`/api/notifications/${created.body.id}`)).body, created.body);
    await owner.delete(`/api/notifications/${created.body.id}`);
  });

  it('refuses a webhook on a private address unless NOTIFY_ALLOW_PRIVATE_URLS', async () => {
    const strict = await startTestServer(engine);
    try {
      const user = new Client(strict, await strict.login({ email: 'strict@example.com' }));
      for (const url of ['http://127.0.0.1:9/x', 'http://localhost/x', 'http://10.1.2.3/x', 'http://192.168.0.10/x', 'http://169.254.169.254/latest', 'http://[::1]/x', 'http://[::ffff:10.0.0.1]/x', 'http://[fe80::1]/x', 'http://[::7f00:1]/x', 'http://[64:ff9b::7f00:1]/x', 'http://[2002:7f00:1::]/x', 'http://[fec0::1]/x', 'http://192.0.2.1/x', 'http://203.0.113.5/x']) {
        const response = await user.post('/api/notifications', { type: 'alarm', always: true, channels: ['webhook'], attributes: { webhookUrl: url } });
        assert.equal(response.status, 400, url);
        assert.equal(response.body.code, 'INVALID_WEBHOOK_URL', url);
      }
      assert.equal(await countRows(strict, 'notification_rules'), 0);
    } finally {
      await strict.dispose();
    }
  });

  it('stops at MAX_NOTIFICATION_RULES_PER_USER with LIMIT_REACHED', async () => {
    const made: number[] = [];
    for (let index = 0; index < 5; index++) made.push((await other.post('/api/notifications', { type: 'alarm', always: true, channels: ['web'] })).body.id);
    const refused = await other.post('/api/notifications', { type: 'alarm', always: true, channels: ['web'] });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.code, 'LIMIT_REACHED');
    assert.equal((await other.get('/api/notifications')).body.length, 5);
    for (const id of made) await other.delete(`/api/notifications/${id}`);
  });

  it('needs a signed-in caller', async () => {
    const anonymous = new Client(server);
    assert.equal((await anonymous.get('/api/notifications')).status, 401);
    assert.equal((await anonymous.post('/api/notifications', { type: 'alarm', always: true, channels: ['web'] })).status, 401);
  });
});
