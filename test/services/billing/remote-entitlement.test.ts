import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import { loadConfig } from '../../../src/config.ts';
import { EventBus } from '../../../src/platform/bus.ts';
import { InternalClient } from '../../../src/platform/http/internal-client.ts';
import { connectRedis } from '../../../src/platform/redis.ts';
import { createRemoteEntitlement } from '../../../src/services/billing/remote-entitlement.ts';
import { createServer } from '../../../src/server.ts';
import type { Server } from '../../../src/server.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { NO_METRICS, TEST_EVENT_CHANNEL, TEST_INTERNAL_TOKEN } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { newStripeSubscriptionId, postStripe, stripeEvent, stripeSubscription } from './support/providers.ts';
import type { BillingTestProviders } from './support/providers.ts';
import { createBillingOnlyServer, startBillingTestServer, stopBillingTestServer } from './support/server.ts';

const NOW_SECONDS = Math.floor(Date.now() / 1000);

describeEachEngine('billing: entitlement over HTTP for split mode', (engine) => {
  let providers: BillingTestProviders;
  let server: TestServer;
  let billing: Server;
  let billingUrl: string;
  const clients: InternalClient[] = [];
  /** A client of the billing process at `url`, closed after the suite. */
  const billingClient = (url: string, internalToken = TEST_INTERNAL_TOKEN) => {
    const client = new InternalClient({ baseUrl: url, internalToken, service: 'billing' });
    clients.push(client);
    return client;
  };

  before(async () => {
    ({ providers, server } = await startBillingTestServer(engine));
    billing = await createBillingOnlyServer({ providers, server });
    await billing.app.listen({ port: 0, host: '127.0.0.1' });
    billingUrl = `http://127.0.0.1:${(billing.app.server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await billing?.close();
    await stopBillingTestServer({ providers, server });
  });

  const freshUser = () => server.login({ email: `remote-${randomUUID()}@example.com` });

  it('answers like the billing service, caches, and drops a user on a change notice', async () => {
    const user = await freshUser();
    const bus = new EventBus(server.app.log);
    const entitlement = createRemoteEntitlement({ client: billingClient(billingUrl), bus });
    assert.equal(await entitlement.isSubscribed(user.userId), false);

    const id = newStripeSubscriptionId();
    const periodEnd = NOW_SECONDS + 3600;
    await postStripe(billing.app, stripeEvent('customer.subscription.created', stripeSubscription({ id, userId: user.userId, cancelAtPeriodEnd: true, periodEnd })));
    assert.equal(await entitlement.isSubscribed(user.userId), false, 'still the cached answer: this bus heard nothing');
    await bus.publish('billing.subscription.changed', { userId: user.userId });
    assert.deepEqual(await entitlement.check(user.userId), {
      userId: user.userId, isSubscribed: true, status: 'CANCELED', provider: 'stripe', planId: 'price_pro_monthly', expiresAt: new Date(periodEnd * 1000),
    });
  });

  it('fails loudly when billing refuses the internal token or cannot be reached', async () => {
    const bus = new EventBus(server.app.log);
    const wrongToken = createRemoteEntitlement({ client: billingClient(billingUrl, 'not-the-internal-token-0123456789'), bus });
    await assert.rejects(wrongToken.isSubscribed(1), /HTTP 403/);
    const unreachable = createRemoteEntitlement({ client: billingClient('http://127.0.0.1:1'), bus });
    await assert.rejects(unreachable.isSubscribed(1));
  });

  const redisUrl = process.env.TEST_REDIS_URL;
  it('receives change notices from the billing process through Redis', { skip: redisUrl ? false : 'TEST_REDIS_URL is not set' }, async () => {
    const url = redisUrl as string;
    const withRedis = await createServer(
      loadConfig({ SERVICES: 'billing', DATA_DIR: server.dataDir, LOG_LEVEL: 'silent', INTERNAL_TOKEN: TEST_INTERNAL_TOKEN, REDIS_URL: url, EVENT_CHANNEL: TEST_EVENT_CHANNEL, ...NO_METRICS, ...providers.env }),
      { database: server.database },
    );
    await withRedis.app.listen({ port: 0, host: '127.0.0.1' });
    const withRedisUrl = `http://127.0.0.1:${(withRedis.app.server.address() as AddressInfo).port}`;
    const connections = [connectRedis(url), connectRedis(url)] as const;
    const bus = new EventBus(server.app.log);
    await bus.connect(connections[0], connections[1], TEST_EVENT_CHANNEL);
    try {
      const user = await freshUser();
      // Both the billing process and this client cache the answer; the notice reaches both.
      const entitlement = createRemoteEntitlement({ client: billingClient(withRedisUrl), bus });
      assert.equal(await entitlement.isSubscribed(user.userId), false);
      const id = newStripeSubscriptionId();
      await postStripe(withRedis.app, stripeEvent('customer.subscription.created', stripeSubscription({ id, userId: user.userId })));
      let subscribed = false;
      for (let attempt = 0; attempt < 50 && !subscribed; attempt += 1) {
        subscribed = await entitlement.isSubscribed(user.userId);
        if (!subscribed) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(subscribed, true);
    } finally {
      await withRedis.close();
      await Promise.all(connections.map((connection) => connection.quit()));
    }
  });
});
