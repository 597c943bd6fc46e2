import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../../src/config.ts';
import { createServer } from '../../../src/server.ts';
import type { Server } from '../../../src/server.ts';
import { signIn } from '../../support/api.ts';
import { createSharedDatabase, testEngines } from '../../support/engines.ts';
import type { SharedTestDatabase } from '../../support/engines.ts';
import { eventually } from '../../support/eventually.ts';
import { scaledOutEnv } from '../../support/server.ts';
import { WebhookReceiver } from './helpers.ts';

const EVENTS = 120;

/** Workers on every instance claim deliveries from one queue (FOR UPDATE SKIP LOCKED): each is sent once. */
for (const engine of testEngines().filter((candidate) => candidate.name === 'postgres')) {
  describe(`two instances on one PostgreSQL deliver each notification once [${engine.name}]`, () => {
    let shared: SharedTestDatabase | undefined;
    let first: Server;
    let second: Server;
    let receiver: WebhookReceiver;

    before(async () => {
      shared = await createSharedDatabase(engine, 'trackstack-notify-multi-');
      receiver = await WebhookReceiver.start();
      // Slow answers keep both workers busy at once.
      receiver.delayMs = 20;
      const env = { ...Object.fromEntries(Object.entries(scaledOutEnv(shared, 'unused')).filter(([name]) => name !== 'REDIS_URL')), NOTIFY_ALLOW_PRIVATE_URLS: 'true' };
      first = await createServer(loadConfig(env));
      second = await createServer(loadConfig(env));
    });
    after(async () => {
      await first?.close();
      await second?.close();
      await receiver.close();
      await shared?.dispose();
    });

    it('sends every delivery exactly once, whichever instance claims it', async () => {
      assert.ok(first.tracking && first.devices);
      const { authorization: headers } = await signIn(first, 'notify-multi@example.com');
      const devices: number[] = [];
      for (let index = 0; index < 4; index++) {
        const created = await first.app.inject({ method: 'POST', url: '/api/devices/', headers, payload: { name: `Multi ${index}`, uniqueId: `notify-multi-${index}` } });
        devices.push(created.json().id);
      }
      const rule = await second.app.inject({ method: 'POST', url: '/api/notifications', headers, payload: { type: 'alarm', deviceIds: devices, channels: ['webhook'], attributes: { webhookUrl: receiver.url } } });
      assert.equal(rule.statusCode, 201, rule.body);
      receiver.secret = rule.json().webhookSecret;

      for (let batch = 0; batch < EVENTS; batch += 20) {
        await first.tracking.api.storeEvents(
          Array.from({ length: 20 }, (_, index) => ({ type: 'alarm' as const, eventTime: Date.now(), deviceId: devices[index % devices.length] as number, attributes: { alarm: 'sos' } })),
        );
      }
      await eventually(() => receiver.deliveryIds().length >= EVENTS, `${EVENTS} deliveries arrived`, 60_000);
      // Both workers keep polling; anything sent twice would arrive within a few of their passes.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const ids = receiver.deliveryIds();
      assert.equal(ids.length, EVENTS);
      assert.equal(new Set(ids).size, EVENTS, 'no delivery id twice');
      assert.equal(new Set(receiver.received.map((call) => call.body.id)).size, EVENTS, 'every event once');
      assert.ok(receiver.received.every((call) => call.verified));
    });
  });
}
