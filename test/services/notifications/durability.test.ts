import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import { request } from 'undici';
import { loadConfig } from '../../../src/config.ts';
import { openDatabase } from '../../../src/platform/db/database.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { eventually } from '../../support/eventually.ts';
import { createAccountAndSignIn, killableProcesses } from '../../support/killable-processes.ts';
import { freePort } from '../../support/ports.ts';
import { callProcess } from '../../support/processes.ts';
import { WebhookReceiver } from './helpers.ts';

const USER = { email: 'notify-killed@example.com', password: 'Notify-Killed-Password-1' };

describeEachEngine('a webhook delivery outlives a SIGKILL mid-send', (engine) => {
  let receiver: WebhookReceiver;
  let osmand: string;
  const processes = killableProcesses(engine, 'trackstack-notify-killed-', async () => {
    receiver = await WebhookReceiver.start();
    const port = await freePort();
    osmand = `http://127.0.0.1:${port}`;
    return {
      NOTIFY_ALLOW_PRIVATE_URLS: 'true',
      // A short lease, so the restarted process takes the killed one's delivery back soon.
      NOTIFY_DELIVERY_LEASE: '1500',
      NOTIFY_SEND_TIMEOUT: '1000',
      OSMAND_PORT: String(port),
    };
  });
  after(() => receiver.close());

  async function alarm(name: string): Promise<void> {
    const response = await request(`${osmand}/?id=notify-killed&lat=52.5&lon=13.4&timestamp=${Math.floor(Date.now() / 1000)}&alarm=${name}`);
    const text = await response.body.text();
    assert.equal(response.statusCode, 200, text);
  }

  async function stateOf(deliveryId: string): Promise<string | undefined> {
    const database = openDatabase(loadConfig(processes.env).database);
    try {
      const row = await database.db.selectFrom('notification_deliveries' as never).select('state' as never).where('delivery_id' as never, '=', deliveryId as never).executeTakeFirst();
      return (row as { state: string } | undefined)?.state;
    } finally {
      await database.close();
    }
  }

  it('is sent again after the restart under the same delivery id, and never again after a 2xx', async () => {
    const running = await processes.start();
    const { accessToken: token } = await createAccountAndSignIn(processes.env, running.url, USER);
    const device = await callProcess(running.url, 'POST', '/api/devices/', token, { name: 'Killed', uniqueId: 'notify-killed' });
    assert.equal(device.status, 201, JSON.stringify(device.body));
    const rule = await callProcess(running.url, 'POST', '/api/notifications', token, { type: 'alarm', deviceIds: [device.body.id], channels: ['webhook'], attributes: { webhookUrl: receiver.url } });
    assert.equal(rule.status, 201, JSON.stringify(rule.body));
    receiver.secret = rule.body.webhookSecret;

    // The receiver takes the first call and never answers it; the process dies while it waits.
    receiver.hold = true;
    await alarm('sos');
    await eventually(() => receiver.received.length === 1, 'the first attempt reached the receiver', 20_000);
    await processes.kill();
    receiver.hold = false;
    const first = receiver.received[0]?.deliveryId;

    await processes.start();
    await eventually(() => receiver.deliveryIds().length === 1, 'sent again after the restart', 30_000);
    assert.deepEqual(receiver.deliveryIds(), [first], 'under the same delivery id');
    assert.ok(receiver.received.every((call) => call.verified));

    // Killed after the receiver's 2xx was recorded: a later delivery arrives, the first never again.
    await eventually(async () => (await stateOf(first as string)) === 'sent', 'the success is recorded', 10_000);
    await processes.kill();
    await processes.start();
    await alarm('powerCut');
    await eventually(() => receiver.deliveryIds().length === 2, 'the next alarm is delivered', 30_000);
    assert.equal(receiver.deliveryIds().filter((id) => id === first).length, 1, 'the first was sent once after its 2xx');
    assert.equal(receiver.received.at(-1)?.body.event.attributes.alarm, 'powerCut');
  });
});
