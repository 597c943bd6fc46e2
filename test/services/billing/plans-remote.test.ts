import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import { loadConfig } from '../../../src/config.ts';
import { EventBus } from '../../../src/platform/bus.ts';
import { InternalClient } from '../../../src/platform/http/internal-client.ts';
import type { Entitlement } from '../../../src/services/billing/module.ts';
import { createRemoteEntitlement } from '../../../src/services/billing/remote-entitlement.ts';
import { createServer } from '../../../src/server.ts';
import type { Server } from '../../../src/server.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { eventually } from '../../support/eventually.ts';
import { freePort } from '../../support/ports.ts';
import { NO_METRICS, TEST_INTERNAL_TOKEN, startTestServer } from '../../support/server.ts';
import type { TestLogin, TestServer } from '../../support/server.ts';
import { planLimitError, writeTestPlans } from './support/plans.ts';

const DAY = 86_400_000;

/** The entitlement of a process without billing (split mode): the plan, its checks and its expiries, over HTTP. */
describeEachEngine('plans over HTTP for split mode', (engine) => {
  let server: TestServer;
  let billing: Server;
  let client: InternalClient;
  let admin: TestLogin;
  let bus: EventBus;
  let remote: Entitlement;

  before(async () => {
    const plans = { PLANS_FILE: writeTestPlans(), PLAN_GRACE_DAYS: '10' };
    server = await startTestServer(engine, plans);
    // The billing process of a split deployment (with auth, which tells it the administrators), on the same database.
    billing = await createServer(
      loadConfig({ SERVICES: 'auth,billing', DATA_DIR: server.dataDir, LOG_LEVEL: 'silent', INTERNAL_TOKEN: TEST_INTERNAL_TOKEN, ...NO_METRICS, ...plans }),
      { database: server.database },
    );
    await billing.app.listen({ port: 0, host: '127.0.0.1' });
    client = new InternalClient({ baseUrl: `http://127.0.0.1:${(billing.app.server.address() as AddressInfo).port}`, internalToken: TEST_INTERNAL_TOKEN, service: 'billing' });
    admin = await server.login({ email: `remote-plans-admin-${randomUUID()}@example.com`, administrator: true });
    // Not connected to Redis: only the hints published on it by the test reach this cache.
    bus = new EventBus(server.app.log);
    remote = createRemoteEntitlement({ client, bus });
  });
  after(async () => {
    await client?.close();
    await billing?.close();
    await server.dispose();
  });

  const freshUser = () => server.login({ email: `remote-plans-${randomUUID()}@example.com` });
  const setPlan = (userId: number, payload: object) =>
    server.app.inject({ method: 'PUT', url: `/api/subscriptions/${userId}/plan`, headers: admin.authorization, payload });

  it('answers the plan and makes the same checks as in process; it counts no usage', async () => {
    const user = await freshUser();
    const grant = await remote.planOf(user.userId);
    assert.equal(grant.plan.id, 'free');
    assert.deepEqual(grant.plan.limits, { devices: 2, geofences: 1, shares: 1, notificationRules: 3, historyDays: 7 });
    assert.equal(grant.administrator, false);
    const devices = await remote.limitOf(user.userId, 'devices');
    devices.assert(1);
    assert.throws(() => devices.assert(2), planLimitError('devices', 2, 2, 'Your plan (Free) allows at most 2 devices'));
    await assert.rejects(remote.assertFeature(user.userId, 'commands'), { code: 'FEATURE_NOT_IN_PLAN' });
    const now = Date.now();
    assert.deepEqual(await remote.historyWindow(user.userId, now), { servedFrom: now - 7 * DAY, keptFrom: now - 17 * DAY });
    assert.equal(remote.usage, undefined);
    assert.deepEqual(await remote.historyWindow(admin.userId, now), { servedFrom: null, keptFrom: null }, 'administrators keep everything');
  });

  it('follows a change notice, and an override ends on time without one', async () => {
    const user = await freshUser();
    assert.equal((await remote.planOf(user.userId)).plan.id, 'free');
    const until = Date.now() + 1500;
    assert.equal((await setPlan(user.userId, { planId: 'pro', until: new Date(until).toISOString() })).statusCode, 200);
    assert.equal((await remote.planOf(user.userId)).plan.id, 'free', 'still the cached answer: this bus heard nothing');
    // The hint as Redis would carry it from the server to the billing process and to this one.
    await billing.bus.publish('billing.subscription.changed', { userId: user.userId });
    await bus.publish('billing.subscription.changed', { userId: user.userId });
    const grant = await remote.planOf(user.userId);
    assert.equal(grant.plan.id, 'pro');
    assert.equal(grant.validUntil, until);
    await eventually(async () => (await remote.planOf(user.userId)).plan.id === 'free', 'the override ends', 5000);
  });
});

/**
 * Billing's usage in split mode: the billing process reads each count from the process owning it (DEVICES_URL,
 * TRACKING_URL, NOTIFICATIONS_URL), through that module's internal usage route. Services behind a gateway: the
 * test calls them as the gateway does, with the internal token and the user's id.
 */
describeEachEngine('usage over HTTP for split mode', (engine) => {
  let owners: TestServer;
  let billing: Server;
  let unreachable: Server;
  const plans = { PLANS_FILE: writeTestPlans() };

  const billingProcess = (upstreams: Record<string, string>) =>
    createServer(loadConfig({ SERVICES: 'auth,billing', DATA_DIR: owners.dataDir, LOG_LEVEL: 'silent', INTERNAL_TOKEN: TEST_INTERNAL_TOKEN, ...NO_METRICS, ...plans, ...upstreams }), {
      database: owners.database,
    });

  before(async () => {
    // The process owning what is counted; it has no BILLING_URL, which counting does not need.
    owners = await startTestServer(engine, { SERVICES: 'auth,devices,tracking,notifications' });
    await owners.app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(owners.app.server.address() as AddressInfo).port}`;
    billing = await billingProcess({ DEVICES_URL: url, TRACKING_URL: url, NOTIFICATIONS_URL: url });
    // Nothing listens at its NOTIFICATIONS_URL: the notifications process is down; it has no TRACKING_URL.
    unreachable = await billingProcess({ DEVICES_URL: url, NOTIFICATIONS_URL: `http://127.0.0.1:${await freePort()}` });
  });
  after(async () => {
    await unreachable?.close();
    await billing?.close();
    await owners.dispose();
  });

  const asService = { 'x-internal-token': TEST_INTERNAL_TOKEN };
  const asUser = (userId: number) => ({ ...asService, 'x-user-id': String(userId) });
  const freshUser = async (name: string) => (await owners.login({ email: `${name}-${randomUUID()}@example.com` })).userId;
  const usageOf = async (process: Server, route: string, userId: number) => {
    const reply = await process.app.inject({ method: 'GET', url: `${route}${userId}`, headers: asService });
    assert.equal(reply.statusCode, 200, reply.body);
    return reply.json().usage;
  };
  const create = async (userId: number, url: string, payload: object) => {
    const reply = await owners.app.inject({ method: 'POST', url, headers: asUser(userId), payload });
    assert.equal(reply.statusCode, 201, reply.body);
    return reply.json() as { id: number };
  };

  it('counts devices, shares, geofences and rules held in the other processes, on both subscription routes', async () => {
    const user = await freshUser('remote-usage');
    const none = { devices: 0, geofences: 0, shares: 0, notificationRules: 0 };
    assert.deepEqual(await usageOf(billing, '/api/subscriptions/', user), none);

    const device = await create(user, '/api/devices', { name: 'Remote', uniqueId: `remote-usage-${randomUUID()}` });
    await create(user, `/api/devices/${device.id}/shares`, { email: `remote-usage-friend-${randomUUID()}@example.com`, permissions: { position: true } });
    await create(user, '/api/geofences', { name: 'Home', area: 'CIRCLE (52.52 13.405, 150)' });
    await create(user, '/api/notifications', { type: 'alarm', deviceIds: [device.id], channels: ['mail'] });
    await create(user, '/api/notifications', { type: 'deviceOnline', deviceIds: [device.id], channels: ['web'] });

    const held = { devices: 1, geofences: 1, shares: 1, notificationRules: 2 };
    assert.deepEqual(await usageOf(billing, '/api/subscriptions/', user), held);
    assert.deepEqual(await usageOf(billing, '/api/subscriptions/check/', user), held);
    const deleted = await owners.app.inject({ method: 'DELETE', url: `/api/devices/${device.id}`, headers: asUser(user) });
    assert.equal(deleted.statusCode, 204, deleted.body);
    assert.deepEqual(await usageOf(billing, '/api/subscriptions/', user), { ...held, devices: 0, shares: 0 }, 'the device and its share are gone; the rules stay');
  });

  it('a count is null where billing has neither the module nor its URL, or its process does not answer', async () => {
    const user = await freshUser('remote-usage-partial');
    await create(user, '/api/devices', { name: 'Partial', uniqueId: `remote-usage-${randomUUID()}` });
    await create(user, '/api/geofences', { name: 'Home', area: 'CIRCLE (52.52 13.405, 150)' });
    const check = await unreachable.app.inject({ method: 'GET', url: `/api/subscriptions/check/${user}`, headers: asService });
    assert.equal(check.statusCode, 200, check.body);
    assert.equal(check.json().plan.id, 'free');
    assert.deepEqual(check.json().usage, { devices: 1, geofences: null, shares: 0, notificationRules: null });
  });

  it('the usage routes answer services only', async () => {
    const user = await freshUser('remote-usage-caller');
    for (const url of ['/api/devices/internal/usage/', '/api/tracking/internal/usage/', '/api/notifications/internal/usage/']) {
      const reply = await owners.app.inject({ method: 'GET', url: `${url}${user}`, headers: { 'x-user-id': String(user) } });
      assert.equal(reply.statusCode, 403, `${url}: ${reply.body}`);
      assert.equal(reply.json().code, 'FORBIDDEN');
    }
  });
});
