import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Stripe from 'stripe';
import { parseStripeEvent } from '../../../../src/services/billing/providers/stripe.ts';
import { WebhookError } from '../../../../src/services/billing/providers/types.ts';
import type { ProviderNotification, SubscriptionStatus } from '../../../../src/services/billing/providers/types.ts';

const SECRET = 'whsec_test_trackstack_billing';
const NOW_SECONDS = 1_767_225_600; // 2026-01-01T00:00:00Z
const PERIOD_START = NOW_SECONDS - 86_400;
const PERIOD_END = PERIOD_START + 30 * 86_400;

function signed(event: object, options: { secret?: string; timestamp?: number } = {}): { body: Buffer; header: string } {
  const payload = JSON.stringify(event);
  const header = Stripe.webhooks.generateTestHeaderString({ payload, secret: options.secret ?? SECRET, timestamp: options.timestamp ?? NOW_SECONDS });
  return { body: Buffer.from(payload), header };
}

function parseSigned(event: object): ProviderNotification {
  const { body, header } = signed(event);
  return parseStripeEvent(body, header, SECRET, NOW_SECONDS);
}

function event(type: string, object: object): object {
  return { id: 'evt_1QxYz', object: 'event', api_version: '2025-03-31.basil', created: NOW_SECONDS - 10, type, livemode: false, data: { object } };
}

/** Subscription in the current API shape: billing period on the items. */
function subscription(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'sub_1Current',
    object: 'subscription',
    status: 'active',
    cancel_at_period_end: false,
    cancel_at: null,
    canceled_at: null,
    metadata: { user_id: '42' },
    items: {
      object: 'list',
      data: [{
        id: 'si_1',
        object: 'subscription_item',
        current_period_start: PERIOD_START,
        current_period_end: PERIOD_END,
        price: { id: 'price_pro_monthly', object: 'price', nickname: 'Pro monthly', product: 'prod_pro' },
      }],
    },
    ...overrides,
  };
}

/** Subscription as API versions before 2025-03-31 sent it: period at the top level, plan alongside price. */
function legacySubscription(): Record<string, unknown> {
  return {
    id: 'sub_1Legacy',
    object: 'subscription',
    status: 'trialing',
    cancel_at_period_end: false,
    cancel_at: null,
    canceled_at: null,
    current_period_start: PERIOD_START,
    current_period_end: PERIOD_END,
    metadata: { user_id: '7' },
    plan: { id: 'plan_legacy', object: 'plan' },
    items: {
      object: 'list',
      data: [{
        id: 'si_legacy',
        object: 'subscription_item',
        plan: { id: 'plan_legacy', object: 'plan' },
        price: { id: 'price_legacy', object: 'price', nickname: null, product: { id: 'prod_basic', object: 'product', name: 'Basic' } },
      }],
    },
  };
}

/** Invoice in the current API shape: subscription under parent.subscription_details, price under pricing. */
function invoice(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'in_1Current',
    object: 'invoice',
    parent: { type: 'subscription_details', quote_details: null, subscription_details: { subscription: 'sub_1Current', metadata: { user_id: '42' } } },
    lines: {
      object: 'list',
      data: [
        {
          id: 'il_proration',
          object: 'line_item',
          metadata: {},
          period: { start: PERIOD_START - 86_400, end: PERIOD_START },
          parent: { type: 'subscription_item_details', subscription_item_details: { subscription: 'sub_1Current', subscription_item: 'si_1', proration: true } },
          pricing: { type: 'price_details', price_details: { price: 'price_basic', product: 'prod_basic' } },
        },
        {
          id: 'il_recurring',
          object: 'line_item',
          metadata: {},
          period: { start: PERIOD_START, end: PERIOD_END },
          parent: { type: 'subscription_item_details', subscription_item_details: { subscription: 'sub_1Current', subscription_item: 'si_1', proration: false } },
          pricing: { type: 'price_details', price_details: { price: 'price_pro_monthly', product: 'prod_pro' } },
        },
      ],
    },
    ...overrides,
  };
}

/** Invoice as older API versions sent it: top-level subscription, subscription_details, line.price. */
function legacyInvoice(): Record<string, unknown> {
  return {
    id: 'in_1Legacy',
    object: 'invoice',
    subscription: 'sub_1Legacy',
    subscription_details: { metadata: { user_id: '7' } },
    lines: {
      object: 'list',
      data: [{
        id: 'il_legacy',
        object: 'line_item',
        type: 'subscription',
        proration: false,
        metadata: { user_id: '7' },
        period: { start: PERIOD_START, end: PERIOD_END },
        price: { id: 'price_legacy', object: 'price', nickname: 'Legacy monthly' },
        plan: { id: 'price_legacy', object: 'plan' },
      }],
    },
  };
}

function appliedStatus(notification: ProviderNotification): SubscriptionStatus | undefined {
  return notification.change.kind === 'apply' ? notification.change.status : undefined;
}

function rejects(body: Buffer, header: string | undefined, code: WebhookError['code'], nowSeconds = NOW_SECONDS): void {
  assert.throws(() => parseStripeEvent(body, header, SECRET, nowSeconds), (error: unknown) => {
    assert.ok(error instanceof WebhookError, `expected WebhookError, got ${String(error)}`);
    assert.equal(error.code, code);
    return true;
  });
}

describe('Stripe webhook events', () => {
  describe('customer.subscription.* mapping', () => {
    const rows: [string, Record<string, unknown>, SubscriptionStatus][] = [
      ['active', { status: 'active' }, 'ACTIVE'],
      ['trialing', { status: 'trialing' }, 'ACTIVE'],
      ['active, cancel_at_period_end', { status: 'active', cancel_at_period_end: true }, 'CANCELED'],
      ['trialing, cancel_at set', { status: 'trialing', cancel_at: PERIOD_END }, 'CANCELED'],
      ['past_due', { status: 'past_due' }, 'PAST_DUE'],
      ['unpaid', { status: 'unpaid' }, 'PAST_DUE'],
      ['paused', { status: 'paused' }, 'PAST_DUE'],
      ['incomplete', { status: 'incomplete' }, 'PAST_DUE'],
      ['incomplete_expired', { status: 'incomplete_expired' }, 'EXPIRED'],
      ['canceled', { status: 'canceled', canceled_at: NOW_SECONDS - 60 }, 'EXPIRED'],
    ];
    for (const type of ['customer.subscription.created', 'customer.subscription.updated']) {
      for (const [label, overrides, status] of rows) {
        it(`${type} ${label} -> ${status}`, () => {
          assert.equal(appliedStatus(parseSigned(event(type, subscription(overrides)))), status);
        });
      }
    }

    it('customer.subscription.deleted -> EXPIRED whatever the status says', () => {
      const notification = parseSigned(event('customer.subscription.deleted', subscription({ status: 'canceled', canceled_at: NOW_SECONDS - 60 })));
      assert.equal(appliedStatus(notification), 'EXPIRED');
      assert.deepEqual(notification.change.kind === 'apply' && notification.change.canceledAt, new Date((NOW_SECONDS - 60) * 1000));
    });

    it('reads the current API shape: period from items[0], plan from items[0].price', () => {
      assert.deepEqual(parseSigned(event('customer.subscription.updated', subscription())), {
        provider: 'stripe',
        idempotencyKey: 'evt_1QxYz',
        eventTime: new Date((NOW_SECONDS - 10) * 1000),
        providerSubscriptionId: 'sub_1Current',
        user: { userId: 42 },
        change: {
          kind: 'apply',
          status: 'ACTIVE',
          planId: 'price_pro_monthly',
          planName: 'Pro monthly',
          currentPeriodStart: new Date(PERIOD_START * 1000),
          currentPeriodEnd: new Date(PERIOD_END * 1000),
          canceledAt: null,
        },
      });
    });

    it('reads the pre-2025 shape: period at the top level, plan name from the expanded product', () => {
      const notification = parseSigned(event('customer.subscription.created', legacySubscription()));
      assert.equal(notification.providerSubscriptionId, 'sub_1Legacy');
      assert.deepEqual(notification.user, { userId: 7 });
      assert.deepEqual(notification.change, {
        kind: 'apply',
        status: 'ACTIVE',
        planId: 'price_legacy',
        planName: 'Basic',
        currentPeriodStart: new Date(PERIOD_START * 1000),
        currentPeriodEnd: new Date(PERIOD_END * 1000),
        canceledAt: null,
      });
    });

    it('leaves planName null when neither nickname nor expanded product is present', () => {
      const items = { object: 'list', data: [{ id: 'si_1', current_period_start: PERIOD_START, current_period_end: PERIOD_END, price: { id: 'price_x', nickname: null, product: 'prod_x' } }] };
      const notification = parseSigned(event('customer.subscription.updated', subscription({ items })));
      assert.equal(notification.change.kind === 'apply' && notification.change.planName, null);
    });

    it('treats user_id metadata other than a positive integer string as absent', () => {
      for (const userId of ['0', '-3', '12abc', '1.5', ' 42', '99999999999999999999', '']) {
        const notification = parseSigned(event('customer.subscription.updated', subscription({ metadata: { user_id: userId } })));
        assert.deepEqual(notification.user, {}, `user_id ${JSON.stringify(userId)}`);
      }
      assert.deepEqual(parseSigned(event('customer.subscription.updated', subscription({ metadata: {} }))).user, {});
    });

    it('skips a subscription status it does not know', () => {
      const notification = parseSigned(event('customer.subscription.updated', subscription({ status: 'hibernating' })));
      assert.deepEqual(notification.change, { kind: 'skip', reason: 'unhandled_subscription_status:hibernating' });
      assert.equal(notification.providerSubscriptionId, 'sub_1Current');
    });
  });

  describe('invoice.* mapping', () => {
    it('invoice.paid -> ACTIVE from the current shape, using the recurring line rather than a proration', () => {
      const notification = parseSigned(event('invoice.paid', invoice()));
      assert.equal(notification.providerSubscriptionId, 'sub_1Current');
      assert.deepEqual(notification.user, { userId: 42 });
      assert.deepEqual(notification.change, {
        kind: 'apply',
        status: 'ACTIVE',
        planId: 'price_pro_monthly',
        planName: null,
        currentPeriodStart: new Date(PERIOD_START * 1000),
        currentPeriodEnd: new Date(PERIOD_END * 1000),
        canceledAt: null,
      });
    });

    it('invoice.payment_failed -> PAST_DUE from the pre-2025 shape', () => {
      const notification = parseSigned(event('invoice.payment_failed', legacyInvoice()));
      assert.equal(notification.providerSubscriptionId, 'sub_1Legacy');
      assert.deepEqual(notification.user, { userId: 7 });
      assert.deepEqual(notification.change, {
        kind: 'apply',
        status: 'PAST_DUE',
        planId: 'price_legacy',
        planName: 'Legacy monthly',
        currentPeriodStart: new Date(PERIOD_START * 1000),
        currentPeriodEnd: new Date(PERIOD_END * 1000),
        canceledAt: null,
      });
    });

    it('finds user_id in the old subscription_details or the line metadata', () => {
      const lines = { object: 'list', data: [{ id: 'il_1', metadata: { user_id: '9' }, period: { start: PERIOD_START, end: PERIOD_END } }] };
      const fromLine = parseSigned(event('invoice.paid', { id: 'in_2', subscription: 'sub_2', lines }));
      assert.deepEqual(fromLine.user, { userId: 9 });
      assert.deepEqual(fromLine.change.kind === 'apply' && fromLine.change.currentPeriodEnd, new Date(PERIOD_END * 1000));
      const fromDetails = parseSigned(event('invoice.paid', { ...legacyInvoice(), subscription_details: { metadata: { user_id: '11' } } }));
      assert.deepEqual(fromDetails.user, { userId: 11 });
    });

    it('accepts an expanded subscription object in parent.subscription_details', () => {
      const parent = { type: 'subscription_details', subscription_details: { subscription: { id: 'sub_expanded', object: 'subscription' }, metadata: null } };
      const notification = parseSigned(event('invoice.paid', invoice({ parent })));
      assert.equal(notification.providerSubscriptionId, 'sub_expanded');
      assert.deepEqual(notification.user, {});
    });

    it('skips an invoice that belongs to no subscription', () => {
      const notification = parseSigned(event('invoice.paid', { id: 'in_oneoff', object: 'invoice', parent: null, lines: { object: 'list', data: [] } }));
      assert.deepEqual(notification.change, { kind: 'skip', reason: 'invoice_without_subscription' });
      assert.equal(notification.providerSubscriptionId, null);
    });
  });

  it('skips event types it does not handle', () => {
    const notification = parseSigned(event('charge.succeeded', { id: 'ch_1', object: 'charge' }));
    assert.deepEqual(notification, {
      provider: 'stripe',
      idempotencyKey: 'evt_1QxYz',
      eventTime: new Date((NOW_SECONDS - 10) * 1000),
      providerSubscriptionId: null,
      user: {},
      change: { kind: 'skip', reason: 'unhandled_event_type:charge.succeeded' },
    });
  });

  describe('verification', () => {
    const valid = event('customer.subscription.updated', subscription());

    it('rejects a signature made with another secret', () => {
      const { body, header } = signed(valid, { secret: 'whsec_someone_else' });
      rejects(body, header, 'INVALID_SIGNATURE');
    });

    it('rejects a body changed after signing', () => {
      const { header } = signed(valid);
      const tampered = Buffer.from(JSON.stringify(event('customer.subscription.updated', subscription({ metadata: { user_id: '1' } }))));
      rejects(tampered, header, 'INVALID_SIGNATURE');
    });

    it('rejects a signature older than 300 s and accepts one just inside the window', () => {
      const { body, header } = signed(valid, { timestamp: NOW_SECONDS - 301 });
      rejects(body, header, 'INVALID_SIGNATURE');
      const fresh = signed(valid, { timestamp: NOW_SECONDS - 299 });
      assert.equal(parseStripeEvent(fresh.body, fresh.header, SECRET, NOW_SECONDS).idempotencyKey, 'evt_1QxYz');
    });

    it('checks the window against the real clock when no time is given', () => {
      const { body, header } = signed(valid);
      assert.throws(() => parseStripeEvent(body, header, SECRET), (error: unknown) => error instanceof WebhookError && error.code === 'INVALID_SIGNATURE');
    });

    it('rejects a missing or malformed signature header', () => {
      const { body } = signed(valid);
      rejects(body, undefined, 'INVALID_SIGNATURE');
      rejects(body, '', 'INVALID_SIGNATURE');
      rejects(body, 'v1=deadbeef', 'INVALID_SIGNATURE');
    });

    it('rejects a correctly signed body that is not JSON as INVALID_PAYLOAD', () => {
      const payload = 'this is not json';
      const header = Stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET, timestamp: NOW_SECONDS });
      rejects(Buffer.from(payload), header, 'INVALID_PAYLOAD');
    });

    it('rejects a correctly signed event that lacks required fields as INVALID_PAYLOAD', () => {
      const incompleteEvents = [
        {},
        [],
        { id: 'evt_1', type: 'invoice.paid', created: NOW_SECONDS },
        { id: 'evt_1', type: 'invoice.paid', data: { object: {} } },
        { id: 'evt_1', object: 'v2.core.event', type: 'v1.billing.meter.error_report_triggered', created: '2026-01-01T00:00:00Z' },
      ];
      for (const incomplete of incompleteEvents) {
        const { body, header } = signed(incomplete);
        rejects(body, header, 'INVALID_PAYLOAD');
      }
      const { body, header } = signed(event('customer.subscription.updated', { object: 'subscription', status: 'active' }));
      rejects(body, header, 'INVALID_PAYLOAD');
    });

    it('refuses to run without a signing secret', () => {
      const { body, header } = signed(valid);
      assert.throws(() => parseStripeEvent(body, header, ' ', NOW_SECONDS), (error: unknown) => !(error instanceof WebhookError));
    });
  });
});
