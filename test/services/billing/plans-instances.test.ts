import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../../src/config.ts';
import type { Entitlement } from '../../../src/services/billing/module.ts';
import { createServer } from '../../../src/server.ts';
import type { Server } from '../../../src/server.ts';
import { signIn } from '../../support/api.ts';
import { createSharedDatabase, testEngines } from '../../support/engines.ts';
import type { SharedTestDatabase } from '../../support/engines.ts';
import { eventually } from '../../support/eventually.ts';
import { scaledOutEnv } from '../../support/server.ts';
import { uniqueId } from '../devices/helpers.ts';
import { newStripeSubscriptionId, postStripe, startBillingTestProviders, stripeEvent, stripeSubscription } from './support/providers.ts';
import type { BillingTestProviders } from './support/providers.ts';
import { writeTestPlans } from './support/plans.ts';

const redisUrl = process.env.TEST_REDIS_URL;

interface Account {
  userId: number;
  headers: { authorization: string };
}

/**
 * Two instances on one database and one Redis, each caching plans: a plan changed on A (override, webhook) is
 * enforced on B within a second, as the hint reaches B's cache.
 */
for (const engine of testEngines()) {
  describe(`plans across two instances [${engine.name}]`, { skip: redisUrl ? false : 'needs TEST_REDIS_URL' }, () => {
    let shared: SharedTestDatabase | undefined;
    let providers: BillingTestProviders | undefined;
    let a: Server;
    let b: Server;
    let admin: Account;
    let onB: Entitlement;

    async function account(administrator = false): Promise<Account> {
      const { userId, authorization } = await signIn(a, `plans-multi-${randomUUID()}@example.com`, { administrator });
      return { userId, headers: authorization };
    }

    async function call(server: Server, user: Account, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) {
      const response = await server.app.inject({ method, url, headers: user.headers, ...(payload ? { payload } : {}) });
      return { status: response.statusCode, body: response.body ? response.json() : undefined };
    }

    const createDevice = (server: Server, user: Account) => call(server, user, 'POST', '/api/devices/', { name: 'Tracker', uniqueId: uniqueId('plans-multi') });
    const planOnB = async (user: Account) => (await onB.planOf(user.userId)).plan.id;

    /** The user owns two devices (free's limit), created on B, and B has cached their plan. */
    async function atFreeLimit(): Promise<Account> {
      const user = await account();
      for (let count = 0; count < 2; count += 1) assert.equal((await createDevice(b, user)).status, 201);
      assert.equal((await createDevice(b, user)).status, 402);
      return user;
    }

    before(async () => {
      shared = await createSharedDatabase(engine, 'trackstack-plans-multi-');
      providers = await startBillingTestProviders();
      const env = { ...scaledOutEnv(shared, redisUrl!), ...providers.env, PLANS_FILE: writeTestPlans() };
      a = await createServer(loadConfig(env));
      b = await createServer(loadConfig(env));
      onB = b.billing!.api.entitlement;
      admin = await account(true);
    });
    after(async () => {
      await a?.close();
      await b?.close();
      await providers?.close();
      await shared?.dispose();
    });

    it('an override set on A is enforced on B; cleared on A, B enforces the subscriptions again', async () => {
      const user = await atFreeLimit();
      assert.equal((await call(a, admin, 'PUT', `/api/subscriptions/${user.userId}/plan`, { planId: 'pro' })).status, 200);
      await eventually(async () => (await planOnB(user)) === 'pro', 'B sees the override');
      assert.equal((await createDevice(b, user)).status, 201);

      assert.equal((await call(a, admin, 'DELETE', `/api/subscriptions/${user.userId}/plan`)).status, 204);
      await eventually(async () => (await planOnB(user)) === 'free', 'B sees the override gone');
      assert.equal((await createDevice(b, user)).status, 402);
    });

    it('a webhook handled by A is enforced on B', async () => {
      const user = await atFreeLimit();
      const id = newStripeSubscriptionId();
      const response = await postStripe(a.app, stripeEvent('customer.subscription.created', stripeSubscription({ id, userId: user.userId, priceId: 'price_pro_monthly' })));
      assert.equal(response.json().status, 'processed');
      await eventually(async () => (await planOnB(user)) === 'pro', 'B sees the subscription');
      assert.equal((await createDevice(b, user)).status, 201);
    });
  });
}
