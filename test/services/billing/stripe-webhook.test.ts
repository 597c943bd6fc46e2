import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import Stripe from 'stripe';
import type { SubscriptionStatus } from '../../../src/services/billing/providers/index.ts';
import { describeEachEngine } from '../../support/engines.ts';
import type { TestServer } from '../../support/server.ts';
import { newStripeSubscriptionId, postStripe, STRIPE_SECRET, stripeEvent, stripeInvoice, stripeSubscription } from './support/providers.ts';
import type { BillingTestProviders } from './support/providers.ts';
import { startBillingTestServer, stopBillingTestServer } from './support/server.ts';
import { countRows, subscriptionRecord, webhookEvent } from './support/state.ts';

const NOW_SECONDS = Math.floor(Date.now() / 1000);
const PERIOD_START = NOW_SECONDS - 86_400;
const PERIOD_END = PERIOD_START + 30 * 86_400;

describeEachEngine('billing: Stripe webhook', (engine) => {
  let providers: BillingTestProviders;
  let server: TestServer;

  before(async () => ({ providers, server } = await startBillingTestServer(engine)));
  after(() => stopBillingTestServer({ providers, server }));

  /** One record per (user, provider): each case gets its own customer. */
  const freshUser = () => server.login({ email: `stripe-${randomUUID()}@example.com` });

  async function assertNothingStored(eventId: string, subscriptionId: string): Promise<void> {
    assert.equal(await webhookEvent(server.database, 'stripe', eventId), undefined, 'the idempotency key is not stored');
    assert.equal(await subscriptionRecord(server.database, 'stripe', subscriptionId), undefined, 'no record is written');
  }

  const subscriptionRows: [string, string, Record<string, unknown>, SubscriptionStatus][] = [
    ['created, active', 'customer.subscription.created', { status: 'active' }, 'ACTIVE'],
    ['created, trialing', 'customer.subscription.created', { status: 'trialing' }, 'ACTIVE'],
    ['updated, active with cancel_at_period_end', 'customer.subscription.updated', { status: 'active', cancelAtPeriodEnd: true }, 'CANCELED'],
    ['updated, trialing with cancel_at_period_end', 'customer.subscription.updated', { status: 'trialing', cancelAtPeriodEnd: true }, 'CANCELED'],
    ['updated, past_due', 'customer.subscription.updated', { status: 'past_due' }, 'PAST_DUE'],
    ['updated, unpaid', 'customer.subscription.updated', { status: 'unpaid' }, 'PAST_DUE'],
    ['updated, paused', 'customer.subscription.updated', { status: 'paused' }, 'PAST_DUE'],
    ['created, incomplete', 'customer.subscription.created', { status: 'incomplete' }, 'PAST_DUE'],
    ['updated, incomplete_expired', 'customer.subscription.updated', { status: 'incomplete_expired' }, 'EXPIRED'],
    ['updated, canceled', 'customer.subscription.updated', { status: 'canceled' }, 'EXPIRED'],
    ['deleted', 'customer.subscription.deleted', { status: 'canceled' }, 'EXPIRED'],
  ];
  for (const legacy of [false, true]) {
    const shape = legacy ? 'older API (period on the subscription)' : 'current API (period on the items)';
    for (const [label, type, fields, status] of subscriptionRows) {
      it(`${type} ${label}, ${shape} -> ${status}`, async () => {
        const user = await freshUser();
        const id = newStripeSubscriptionId();
        const event = stripeEvent(type, stripeSubscription({ id, userId: user.userId, periodStart: PERIOD_START, periodEnd: PERIOD_END, legacy, ...fields }));
        const response = await postStripe(server.app, event);
        assert.equal(response.statusCode, 200, response.body);
        const record = await subscriptionRecord(server.database, 'stripe', id);
        assert.ok(record);
        assert.deepEqual(response.json(), { status: 'processed', subscription_id: record.id, subscription_status: status });
        assert.equal(record.status, status);
        assert.equal(record.user_id, user.userId);
        assert.equal(record.plan_id, 'price_pro_monthly');
        assert.equal(record.current_period_start, PERIOD_START * 1000);
        assert.equal(record.current_period_end, PERIOD_END * 1000);
        assert.equal(record.last_event_at, (event['created'] as number) * 1000);
        assert.equal((await webhookEvent(server.database, 'stripe', event['id'] as string))?.outcome, 'processed');
      });
    }
  }

  const invoiceRows: [string, SubscriptionStatus][] = [
    ['invoice.paid', 'ACTIVE'],
    ['invoice.payment_failed', 'PAST_DUE'],
  ];
  for (const legacy of [false, true]) {
    const shape = legacy ? 'older API (invoice.subscription)' : 'current API (parent.subscription_details)';
    for (const [type, status] of invoiceRows) {
      it(`${type}, ${shape} -> ${status} with the invoice line's period`, async () => {
        const user = await freshUser();
        const id = newStripeSubscriptionId();
        await postStripe(server.app, stripeEvent('customer.subscription.created', stripeSubscription({ id, userId: user.userId, status: 'active' }), { created: NOW_SECONDS - 60 }));
        const nextEnd = PERIOD_END + 30 * 86_400;
        const response = await postStripe(server.app, stripeEvent(type, stripeInvoice({ subscriptionId: id, userId: user.userId, periodStart: PERIOD_END, periodEnd: nextEnd, legacy })));
        assert.equal(response.statusCode, 200, response.body);
        assert.equal(response.json().subscription_status, status);
        const record = await subscriptionRecord(server.database, 'stripe', id);
        assert.equal(record?.status, status);
        assert.equal(record?.current_period_start, PERIOD_END * 1000);
        assert.equal(record?.current_period_end, nextEnd * 1000);
      });
    }
  }

  it('finds the user of an event without metadata through the stored record', async () => {
    const user = await freshUser();
    const id = newStripeSubscriptionId();
    await postStripe(server.app, stripeEvent('customer.subscription.created', stripeSubscription({ id, userId: user.userId }), { created: NOW_SECONDS - 60 }));
    const response = await postStripe(server.app, stripeEvent('customer.subscription.updated', stripeSubscription({ id, status: 'past_due' })));
    assert.equal(response.json().status, 'processed');
    const record = await subscriptionRecord(server.database, 'stripe', id);
    assert.equal(record?.user_id, user.userId);
    assert.equal(record?.status, 'PAST_DUE');
  });

  it('skips an event for a user that does not exist, or that names none, as unknown_user', async () => {
    for (const userId of [987_654_321, undefined]) {
      const id = newStripeSubscriptionId();
      const event = stripeEvent('customer.subscription.created', stripeSubscription({ id, userId }));
      const response = await postStripe(server.app, event);
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json(), { status: 'skipped', reason: 'unknown_user' });
      assert.equal(await subscriptionRecord(server.database, 'stripe', id), undefined);
      const stored = await webhookEvent(server.database, 'stripe', event['id'] as string);
      assert.equal(stored?.outcome, 'skipped');
      assert.equal(stored?.reason, 'unknown_user');
    }
  });

  it('skips event types and statuses it does not handle, with the reason', async () => {
    const user = await freshUser();
    const cases: [Record<string, unknown>, string][] = [
      [stripeEvent('charge.succeeded', { id: 'ch_1', object: 'charge' }), 'unhandled_event_type:charge.succeeded'],
      [stripeEvent('customer.subscription.updated', stripeSubscription({ id: newStripeSubscriptionId(), userId: user.userId, status: 'future_status' })), 'unhandled_subscription_status:future_status'],
      [stripeEvent('invoice.paid', { id: 'in_one_off', object: 'invoice', lines: { object: 'list', data: [] } }), 'invoice_without_subscription'],
    ];
    for (const [event, reason] of cases) {
      const response = await postStripe(server.app, event);
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json(), { status: 'skipped', reason });
      assert.equal((await webhookEvent(server.database, 'stripe', event['id'] as string))?.reason, reason);
    }
  });

  it('answers a repeated event as duplicate and changes nothing', async () => {
    const user = await freshUser();
    const id = newStripeSubscriptionId();
    const event = stripeEvent('customer.subscription.created', stripeSubscription({ id, userId: user.userId }));
    const first = await postStripe(server.app, event);
    assert.equal(first.json().status, 'processed');
    const before = await subscriptionRecord(server.database, 'stripe', id);
    const again = await postStripe(server.app, event);
    assert.equal(again.statusCode, 200);
    assert.deepEqual(again.json(), { status: 'duplicate', subscription_id: before?.id });
    assert.deepEqual(await subscriptionRecord(server.database, 'stripe', id), before);
  });

  it('skips an event older than the record as stale_event', async () => {
    const user = await freshUser();
    const id = newStripeSubscriptionId();
    const newer = await postStripe(server.app, stripeEvent('customer.subscription.updated', stripeSubscription({ id, userId: user.userId, status: 'past_due' }), { created: NOW_SECONDS }));
    assert.equal(newer.json().status, 'processed');
    const older = await postStripe(server.app, stripeEvent('customer.subscription.created', stripeSubscription({ id, userId: user.userId, status: 'active' }), { created: NOW_SECONDS - 30 }));
    assert.deepEqual(older.json(), { status: 'skipped', reason: 'stale_event', subscription_id: newer.json().subscription_id });
    const record = await subscriptionRecord(server.database, 'stripe', id);
    assert.equal(record?.status, 'PAST_DUE');
    assert.equal(record?.last_event_at, NOW_SECONDS * 1000);
  });

  it('clears canceled_at when a cancelled subscription renews and keeps it when it expires', async () => {
    const user = await freshUser();
    const id = newStripeSubscriptionId();
    const canceledAt = NOW_SECONDS - 500;
    const cancel = stripeSubscription({ id, userId: user.userId, cancelAtPeriodEnd: true });
    cancel['canceled_at'] = canceledAt;
    await postStripe(server.app, stripeEvent('customer.subscription.updated', cancel, { created: NOW_SECONDS - 40 }));
    assert.equal((await subscriptionRecord(server.database, 'stripe', id))?.canceled_at, canceledAt * 1000);
    await postStripe(server.app, stripeEvent('customer.subscription.updated', stripeSubscription({ id, userId: user.userId }), { created: NOW_SECONDS - 30 }));
    assert.equal((await subscriptionRecord(server.database, 'stripe', id))?.canceled_at, null);
    await postStripe(server.app, stripeEvent('customer.subscription.updated', cancel, { created: NOW_SECONDS - 20 }));
    await postStripe(server.app, stripeEvent('customer.subscription.deleted', stripeSubscription({ id, status: 'canceled' }), { created: NOW_SECONDS - 10 }));
    const record = await subscriptionRecord(server.database, 'stripe', id);
    assert.equal(record?.status, 'EXPIRED');
    assert.equal(record?.canceled_at, canceledAt * 1000);
  });

  it('keeps the plan name an invoice does not carry', async () => {
    const user = await freshUser();
    const id = newStripeSubscriptionId();
    await postStripe(server.app, stripeEvent('customer.subscription.created', stripeSubscription({ id, userId: user.userId }), { created: NOW_SECONDS - 60 }));
    await postStripe(server.app, stripeEvent('invoice.paid', stripeInvoice({ subscriptionId: id, userId: user.userId, periodStart: PERIOD_START, periodEnd: PERIOD_END })));
    const record = await subscriptionRecord(server.database, 'stripe', id);
    assert.equal(record?.plan_id, 'price_pro_monthly');
    assert.equal(record?.plan_name, 'Pro monthly');
  });

  it('rejects a wrong secret, a stale or missing signature and a tampered body with INVALID_SIGNATURE', async () => {
    const user = await freshUser();
    const id = newStripeSubscriptionId();
    const event = stripeEvent('customer.subscription.created', stripeSubscription({ id, userId: user.userId }));
    const rejected = [
      await postStripe(server.app, event, { secret: 'whsec_not_ours' }),
      await postStripe(server.app, event, { timestamp: Math.floor(Date.now() / 1000) - 301 }),
      await postStripe(server.app, event, { signature: null }),
      await postStripe(server.app, event, { signature: 'garbage' }),
      await postStripe(server.app, event, { tamper: (payload) => payload.replace('"active"', '"trialing"') }),
      await postStripe(server.app, event, { tamper: (payload) => JSON.stringify(JSON.parse(payload), null, 2) }),
    ];
    for (const response of rejected) {
      assert.equal(response.statusCode, 400, response.body);
      assert.equal(response.json().code, 'INVALID_SIGNATURE');
      assert.equal(response.json().statusCode, 400);
      assert.match(response.json().message, /^Stripe signature rejected: /);
    }
    await assertNothingStored(event['id'] as string, id);
    const withinTolerance = await postStripe(server.app, event, { timestamp: Math.floor(Date.now() / 1000) - 280 });
    assert.equal(withinTolerance.json().status, 'processed');
  });

  it('rejects a signed body that is not a usable event, and a non-JSON content type, with INVALID_PAYLOAD', async () => {
    const user = await freshUser();
    const before = await countRows(server.database, 'billing_webhook_events');
    const signedRaw = (payload: string) => server.app.inject({
      method: 'POST',
      url: '/webhooks/stripe',
      headers: { 'content-type': 'application/json', 'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret: STRIPE_SECRET }) },
      payload,
    });
    const responses = [
      await signedRaw('not json'),
      await signedRaw(JSON.stringify({ object: 'event', type: 'customer.subscription.created', data: { object: {} } })),
      await signedRaw(JSON.stringify(stripeEvent('customer.subscription.created', stripeSubscription({ id: 'x'.repeat(2000), userId: user.userId })))),
      await postStripe(server.app, stripeEvent('customer.subscription.created', stripeSubscription({ id: newStripeSubscriptionId(), userId: user.userId })), { contentType: 'text/plain' }),
    ];
    for (const response of responses) {
      assert.equal(response.statusCode, 400, response.body);
      assert.equal(response.json().code, 'INVALID_PAYLOAD');
    }
    assert.equal(await countRows(server.database, 'billing_webhook_events'), before);
  });
});
