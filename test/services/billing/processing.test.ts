import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import { createBillingModule } from '../../../src/services/billing/module.ts';
import type { BillingModule } from '../../../src/services/billing/module.ts';
import { describeEachEngine } from '../../support/engines.ts';
import { instanceContext } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { newStripeSubscriptionId, postStripe, stripeEvent, stripeSubscription } from './support/providers.ts';
import type { BillingTestProviders } from './support/providers.ts';
import { startBillingTestServer, stopBillingTestServer } from './support/server.ts';
import { billingTables, subscriptionRecord, subscriptionRecordsOfUser, webhookEvent } from './support/state.ts';

const NOW_SECONDS = Math.floor(Date.now() / 1000);

describeEachEngine('billing: exactly-once processing', (engine) => {
  let providers: BillingTestProviders;
  let server: TestServer;

  before(async () => ({ providers, server } = await startBillingTestServer(engine)));
  after(() => stopBillingTestServer({ providers, server }));

  const freshUser = () => server.login({ email: `processing-${randomUUID()}@example.com` });

  function subscriptionEvent(type: string, subscriptionId: string, userId: number | undefined, status: string, created: number, extra: Record<string, unknown> = {}) {
    return stripeEvent(type, stripeSubscription({ id: subscriptionId, userId, status, ...extra }), { created });
  }

  it('leaves the newest event in the record when two deliveries for one subscription race, in either order', async () => {
    for (let round = 0; round < 16; round += 1) {
      const user = await freshUser();
      const id = newStripeSubscriptionId();
      const createdFirst = round % 2 === 0;
      if (createdFirst) await postStripe(server.app, subscriptionEvent('customer.subscription.created', id, user.userId, 'active', NOW_SECONDS - 100));
      const older = subscriptionEvent('customer.subscription.updated', id, user.userId, 'past_due', NOW_SECONDS - 20);
      const newer = subscriptionEvent('customer.subscription.updated', id, user.userId, 'canceled', NOW_SECONDS - 10);
      const deliveries = round % 4 < 2 ? [older, newer] : [newer, older];
      const responses = await Promise.all(deliveries.map((event) => postStripe(server.app, event)));
      for (const response of responses) assert.equal(response.statusCode, 200, response.body);
      const outcomes = responses.map((response) => response.json().status as string).sort();
      assert.ok(
        JSON.stringify(outcomes) === '["processed","processed"]' || JSON.stringify(outcomes) === '["processed","skipped"]',
        `round ${round}: ${JSON.stringify(responses.map((response) => response.json()))}`,
      );
      const records = await subscriptionRecordsOfUser(server.database, user.userId);
      assert.equal(records.length, 1, 'one record per user and provider');
      assert.equal(records[0]?.status, 'EXPIRED', `round ${round}: the newest event wins`);
      assert.equal(records[0]?.last_event_at, (NOW_SECONDS - 10) * 1000);
      for (const event of deliveries) assert.ok(await webhookEvent(server.database, 'stripe', event['id'] as string), 'both keys are stored');
    }
  });

  it('processes a delivery once when the same event arrives twice at the same moment', async () => {
    const user = await freshUser();
    const id = newStripeSubscriptionId();
    const event = subscriptionEvent('customer.subscription.created', id, user.userId, 'active', NOW_SECONDS);
    const responses = await Promise.all([postStripe(server.app, event), postStripe(server.app, event), postStripe(server.app, event)]);
    const statuses = responses.map((response) => response.json().status as string).sort();
    assert.deepEqual(statuses, ['duplicate', 'duplicate', 'processed']);
    assert.equal((await subscriptionRecordsOfUser(server.database, user.userId)).length, 1);
  });

  it('answers 500 and keeps neither the key nor the change when the transaction fails midway; the retry then succeeds', async () => {
    const user = await freshUser();
    const id = newStripeSubscriptionId();
    const event = subscriptionEvent('customer.subscription.created', id, user.userId, 'active', NOW_SECONDS);
    const db = billingTables(server.database);
    // A real failure after the idempotency key was inserted: the subscriptions table is gone for one delivery.
    await sql`alter table subscriptions rename to subscriptions_away`.execute(db);
    let failed;
    try {
      failed = await postStripe(server.app, event);
    } finally {
      await sql`alter table subscriptions_away rename to subscriptions`.execute(db);
    }
    assert.equal(failed.statusCode, 500);
    assert.deepEqual(failed.json(), { statusCode: 500, error: 'Internal Server Error', code: 'INTERNAL_ERROR', message: 'Internal server error' });
    assert.equal(await webhookEvent(server.database, 'stripe', event['id'] as string), undefined, 'the key was rolled back');
    assert.equal(await subscriptionRecord(server.database, 'stripe', id), undefined);

    const retried = await postStripe(server.app, event);
    assert.equal(retried.json().status, 'processed');
    assert.equal((await subscriptionRecord(server.database, 'stripe', id))?.status, 'ACTIVE');
  });

  it('rolls back a record already written when the last step of the transaction fails', async () => {
    const user = await freshUser();
    const id = newStripeSubscriptionId();
    await postStripe(server.app, subscriptionEvent('customer.subscription.created', id, user.userId, 'active', NOW_SECONDS - 60));
    const before = await subscriptionRecord(server.database, 'stripe', id);
    const newUserId = (await freshUser()).userId;
    const fresh = newStripeSubscriptionId();
    const change = subscriptionEvent('customer.subscription.updated', id, user.userId, 'past_due', NOW_SECONDS);
    const creation = subscriptionEvent('customer.subscription.created', fresh, newUserId, 'active', NOW_SECONDS);
    const db = billingTables(server.database);
    // Recording the outcome is the transaction's last write; a trigger makes it fail after the record was written.
    if (engine.name === 'postgres') {
      await sql`create function billing_test_fail() returns trigger language plpgsql as $$ begin raise exception 'injected failure'; end $$`.execute(db);
      await sql`create trigger billing_test_fail before update on billing_webhook_events for each row execute function billing_test_fail()`.execute(db);
    } else {
      await sql`create trigger billing_test_fail before update on billing_webhook_events begin select raise(abort, 'injected failure'); end`.execute(db);
    }
    let responses;
    try {
      responses = [await postStripe(server.app, change), await postStripe(server.app, creation)];
    } finally {
      await sql`drop trigger billing_test_fail${sql.raw(engine.name === 'postgres' ? ' on billing_webhook_events' : '')}`.execute(db);
      if (engine.name === 'postgres') await sql`drop function billing_test_fail()`.execute(db);
    }
    for (const response of responses) assert.equal(response.statusCode, 500);
    assert.deepEqual(await subscriptionRecord(server.database, 'stripe', id), before, 'the update was rolled back');
    assert.equal(await subscriptionRecord(server.database, 'stripe', fresh), undefined, 'the insert was rolled back');
    assert.equal(await webhookEvent(server.database, 'stripe', change['id'] as string), undefined);
    assert.equal(await webhookEvent(server.database, 'stripe', creation['id'] as string), undefined);

    assert.equal((await postStripe(server.app, change)).json().subscription_status, 'PAST_DUE');
    assert.equal((await postStripe(server.app, creation)).json().subscription_status, 'ACTIVE');
  });

  it('keeps following an entitling subscription when an older one of the same user ends, and moves to a new one', async () => {
    const user = await freshUser();
    const current = newStripeSubscriptionId();
    const old = newStripeSubscriptionId();
    const next = newStripeSubscriptionId();
    const created = await postStripe(server.app, subscriptionEvent('customer.subscription.created', current, user.userId, 'active', NOW_SECONDS - 50));
    const recordId = created.json().subscription_id;
    const ending = await postStripe(server.app, stripeEvent('customer.subscription.deleted', stripeSubscription({ id: old, userId: user.userId, status: 'canceled' }), { created: NOW_SECONDS - 40 }));
    assert.deepEqual(ending.json(), { status: 'skipped', reason: 'superseded_subscription', subscription_id: recordId });
    assert.equal((await subscriptionRecord(server.database, 'stripe', current))?.status, 'ACTIVE');

    await postStripe(server.app, stripeEvent('customer.subscription.deleted', stripeSubscription({ id: current, status: 'canceled' }), { created: NOW_SECONDS - 30 }));
    const moved = await postStripe(server.app, subscriptionEvent('customer.subscription.created', next, user.userId, 'active', NOW_SECONDS - 20));
    assert.deepEqual(moved.json(), { status: 'processed', subscription_id: recordId, subscription_status: 'ACTIVE' });
    const records = await subscriptionRecordsOfUser(server.database, user.userId);
    assert.equal(records.length, 1);
    assert.equal(records[0]?.provider_subscription_id, next);
    assert.equal(await subscriptionRecord(server.database, 'stripe', current), undefined);
  });

  it('skips a notification that names another user than the stored record as user_mismatch', async () => {
    const owner = await freshUser();
    const other = await freshUser();
    const id = newStripeSubscriptionId();
    await postStripe(server.app, subscriptionEvent('customer.subscription.created', id, owner.userId, 'active', NOW_SECONDS - 50));
    const before = await subscriptionRecord(server.database, 'stripe', id);
    const response = await postStripe(server.app, subscriptionEvent('customer.subscription.updated', id, other.userId, 'past_due', NOW_SECONDS - 40));
    assert.deepEqual(response.json(), { status: 'skipped', reason: 'user_mismatch', subscription_id: before?.id });
    assert.deepEqual(await subscriptionRecord(server.database, 'stripe', id), before);
    assert.deepEqual(await subscriptionRecordsOfUser(server.database, other.userId), []);
  });

  it('deletes idempotency rows older than 90 days when the module starts', async () => {
    const db = billingTables(server.database);
    const row = (idempotencyKey: string, receivedAt: number) => ({
      provider: 'stripe' as const, idempotency_key: idempotencyKey, event_time: receivedAt, received_at: receivedAt,
      outcome: 'skipped' as const, reason: 'test_notification', subscription_id: null, provider_subscription_id: null, parked_change: null,
    });
    const ancient = `evt_ancient_${randomUUID()}`;
    const recent = `evt_recent_${randomUUID()}`;
    await db.insertInto('billing_webhook_events').values([row(ancient, Date.now() - 91 * 86_400_000), row(recent, Date.now() - 89 * 86_400_000)]).execute();
    const module = await createBillingModule(
      instanceContext(server),
      { users: server.auth?.api.users },
    );
    await module.start?.();
    await module.stop?.();
    assert.equal(await webhookEvent(server.database, 'stripe', ancient), undefined);
    assert.ok(await webhookEvent(server.database, 'stripe', recent));
  });

  it('answers entitlement in-process from a cache that every instance drops on a change notice', async () => {
    const user = await freshUser();
    const id = newStripeSubscriptionId();
    // A second instance of the module on the same database and bus, as another process would be with Redis.
    const other: BillingModule = await createBillingModule(
      instanceContext(server),
      { users: server.auth?.api.users },
    );
    const entitlement = other.api.entitlement;
    assert.equal(await entitlement.isSubscribed(user.userId), false);

    // A write that bypasses the module announces nothing: the cached answer stands.
    const now = Date.now();
    await billingTables(server.database).insertInto('subscriptions').values({
      user_id: user.userId, provider: 'apple', provider_subscription_id: `direct-${id}`, plan_id: 'p', plan_name: null, status: 'ACTIVE',
      current_period_start: null, current_period_end: null, canceled_at: null, created_at: now, updated_at: now, last_event_at: now,
    }).execute();
    assert.equal(await entitlement.isSubscribed(user.userId), false, 'served from the cache');
    await billingTables(server.database).deleteFrom('subscriptions').where('provider_subscription_id', '=', `direct-${id}`).execute();

    const canceledUntil = NOW_SECONDS + 3600;
    await postStripe(server.app, subscriptionEvent('customer.subscription.created', id, user.userId, 'active', NOW_SECONDS - 10, { cancelAtPeriodEnd: true, periodEnd: canceledUntil }));
    assert.equal(await entitlement.isSubscribed(user.userId), true, 'the change notice dropped the cached answer');
    assert.deepEqual(await entitlement.check(user.userId), {
      userId: user.userId,
      isSubscribed: true,
      status: 'CANCELED',
      provider: 'stripe',
      planId: 'price_pro_monthly',
      expiresAt: new Date(canceledUntil * 1000),
    });
    await postStripe(server.app, stripeEvent('customer.subscription.deleted', stripeSubscription({ id, status: 'canceled' }), { created: NOW_SECONDS }));
    assert.equal(await entitlement.isSubscribed(user.userId), false);
  });
});
