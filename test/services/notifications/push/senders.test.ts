import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../../../src/config.ts';
import { createPushSenders } from '../../../../src/services/notifications/push/senders.ts';
import { loadVapidKeys } from '../../../../src/services/notifications/push/webpush.ts';
import { startApnsService, startFcmService, startWebPushService } from '../../../support/push-providers.ts';
import type { ApnsService, FcmService, WebPushService } from '../../../support/push-providers.ts';

const MESSAGE = { title: 'Geofence', body: 'Bike entered Home', url: '/devices/1/events/2', data: { eventId: '2' } };
const never = new AbortController().signal;

describe('push senders', () => {
  let dataDir: string;
  let webPush: WebPushService;
  let fcm: FcmService;
  let apns: ApnsService;

  before(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'trackstack-push-'));
    [webPush, fcm, apns] = await Promise.all([startWebPushService(), startFcmService(), startApnsService()]);
  });
  after(async () => {
    await Promise.all([webPush.close(), fcm.close(), apns.close()]);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('offers Web Push alone when no provider is configured, with the key generated in DATA_DIR', async () => {
    const config = loadConfig({ DATA_DIR: dataDir });
    const senders = createPushSenders(config);
    assert.deepEqual([...senders.byKind.keys()], ['webpush']);
    assert.equal(senders.vapidPublicKey, loadVapidKeys(config.push.vapid, dataDir).publicKey);
    await senders.close();
  });

  it('offers every configured provider, each sending through its own', async () => {
    const env = { DATA_DIR: dataDir, FCM_SERVICE_ACCOUNT: fcm.serviceAccount, FCM_URL: fcm.origin, ...apns.env };
    const senders = createPushSenders(loadConfig(env), { apns: { ca: apns.ca }, webpush: { allowPrivateEndpoints: true } });
    try {
      assert.deepEqual([...senders.byKind.keys()].sort(), ['apns', 'fcm', 'webpush']);
      const subscription = webPush.subscribe(senders.vapidPublicKey);
      assert.deepEqual(await senders.byKind.get('webpush')?.send({ id: 'w', kind: 'webpush', subscription }, MESSAGE, never), { kind: 'sent' });
      assert.deepEqual(await senders.byKind.get('fcm')?.send({ id: 'f', kind: 'fcm', token: `fcm:${'x'.repeat(30)}` }, MESSAGE, never), { kind: 'sent' });
      assert.deepEqual(await senders.byKind.get('apns')?.send({ id: 'a', kind: 'apns', token: 'c'.repeat(64) }, MESSAGE, never), { kind: 'sent' });
      assert.equal(JSON.parse(webPush.received.at(-1)?.plaintext ?? '{}').body, MESSAGE.body);
      assert.equal(fcm.received.at(-1)?.message.notification?.body, MESSAGE.body);
      assert.equal(apns.received.at(-1)?.payload.aps.alert?.body, MESSAGE.body);
    } finally {
      await senders.close();
    }
  });

  it('refuses a bad provider configuration at start with one line naming the variable', () => {
    assert.throws(
      () => createPushSenders(loadConfig({ DATA_DIR: dataDir, FCM_SERVICE_ACCOUNT: '{"project_id":"p"}' })),
      (error: unknown) => error instanceof ConfigError && error.message === 'FCM_SERVICE_ACCOUNT: missing client_email',
    );
  });
});
