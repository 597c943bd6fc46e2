import type { Insertable, Selectable, Transaction, Updateable } from 'kysely';
import { TableAccess } from '../../platform/db/table-access.ts';
import type { FactRecorder } from '../../platform/outbox/outbox.ts';
import type { BillingProvider } from './providers/index.ts';
import type { BillingPlanOverridesTable, BillingTables, BillingWebhookEventsTable, SubscriptionsTable } from './tables.ts';

export type SubscriptionRow = Selectable<SubscriptionsTable>;
export type NewSubscription = Insertable<SubscriptionsTable>;
export type SubscriptionChanges = Updateable<SubscriptionsTable>;
export type WebhookEventRow = Selectable<BillingWebhookEventsTable>;
export type GooglePurchaseLinkRow = Selectable<BillingTables['billing_google_purchase_links']>;

export interface NewWebhookEvent {
  provider: BillingProvider;
  idempotencyKey: string;
  eventTime: number;
  receivedAt: number;
  providerSubscriptionId: string | null;
}

export interface WebhookEventOutcome {
  outcome: 'processed' | 'skipped';
  reason: string | null;
  subscriptionId: number | null;
  parkedChange: string | null;
}

/**
 * The billing tables. Writes that must hold together run through `transaction`, whose repository
 * takes row locks on PostgreSQL (SQLite serialises every transaction on its one connection).
 */
export class BillingRepository extends TableAccess<BillingTables> {
  transaction<T>(work: (repository: BillingRepository) => Promise<T>): Promise<T> {
    return this.db.transaction().execute((trx: Transaction<BillingTables>) => work(new BillingRepository(trx)));
  }

  /** Inside a transaction: the user's subscriptions changed, for the modules that follow them. */
  recordSubscriptionChange(facts: FactRecorder, userId: number): Promise<void> {
    return facts.record(this.db, 'billing.subscription.changed', { userId });
  }

  // Subscriptions

  subscriptionsOfUser(userId: number): Promise<SubscriptionRow[]> {
    return this.db.selectFrom('subscriptions').selectAll().where('user_id', '=', userId).orderBy('id').execute();
  }

  findByProviderSubscription(provider: BillingProvider, providerSubscriptionId: string): Promise<SubscriptionRow | undefined> {
    return this.db
      .selectFrom('subscriptions')
      .selectAll()
      .where('provider', '=', provider)
      .where('provider_subscription_id', '=', providerSubscriptionId)
      .executeTakeFirst();
  }

  /** Reads and, on PostgreSQL, locks the record following this provider subscription until the transaction ends. */
  lockByProviderSubscription(provider: BillingProvider, providerSubscriptionId: string): Promise<SubscriptionRow | undefined> {
    const query = this.db
      .selectFrom('subscriptions')
      .selectAll()
      .where('provider', '=', provider)
      .where('provider_subscription_id', '=', providerSubscriptionId);
    return (this.engine === 'postgres' ? query.forUpdate() : query).executeTakeFirst();
  }

  /** Reads and, on PostgreSQL, locks the user's record with this provider. */
  lockByUser(userId: number, provider: BillingProvider): Promise<SubscriptionRow | undefined> {
    const query = this.db.selectFrom('subscriptions').selectAll().where('user_id', '=', userId).where('provider', '=', provider);
    return (this.engine === 'postgres' ? query.forUpdate() : query).executeTakeFirst();
  }

  /** Inserts unless a record for the user and provider, or for the provider subscription, already exists. */
  insertSubscriptionIfAbsent(subscription: NewSubscription): Promise<SubscriptionRow | undefined> {
    return this.db
      .insertInto('subscriptions')
      .values(subscription)
      .onConflict((conflict) => conflict.doNothing())
      .returningAll()
      .executeTakeFirst();
  }

  updateSubscription(id: number, changes: SubscriptionChanges): Promise<SubscriptionRow> {
    return this.db.updateTable('subscriptions').set(changes).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
  }

  // Plan overrides

  findPlanOverride(userId: number) {
    return this.db.selectFrom('billing_plan_overrides').selectAll().where('user_id', '=', userId).executeTakeFirst();
  }

  async upsertPlanOverride(override: Selectable<BillingPlanOverridesTable>): Promise<void> {
    const { plan_id, until, set_by, updated_at } = override;
    await this.db
      .insertInto('billing_plan_overrides')
      .values(override)
      .onConflict((conflict) => conflict.column('user_id').doUpdateSet({ plan_id, until, set_by, updated_at }))
      .execute();
  }

  /** False when the user had no override. */
  async deletePlanOverride(userId: number): Promise<boolean> {
    const result = await this.db.deleteFrom('billing_plan_overrides').where('user_id', '=', userId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  // Customers

  findCustomer(userId: number) {
    return this.db.selectFrom('billing_customers').selectAll().where('user_id', '=', userId).executeTakeFirst();
  }

  findCustomerByAppAccountToken(appAccountToken: string) {
    return this.db.selectFrom('billing_customers').selectAll().where('app_account_token', '=', appAccountToken).executeTakeFirst();
  }

  async insertCustomerIfAbsent(userId: number, appAccountToken: string, now: number): Promise<void> {
    await this.db
      .insertInto('billing_customers')
      .values({ user_id: userId, app_account_token: appAccountToken, created_at: now })
      .onConflict((conflict) => conflict.doNothing())
      .execute();
  }

  // Webhook events

  /** Records an event's idempotency key; false when it was recorded before (a duplicate delivery). */
  async insertEventIfNew(event: NewWebhookEvent): Promise<boolean> {
    const inserted = await this.db
      .insertInto('billing_webhook_events')
      .values({
        provider: event.provider,
        idempotency_key: event.idempotencyKey,
        event_time: event.eventTime,
        received_at: event.receivedAt,
        outcome: 'skipped',
        reason: null,
        subscription_id: null,
        provider_subscription_id: event.providerSubscriptionId,
        parked_change: null,
      })
      .onConflict((conflict) => conflict.doNothing())
      .returning('idempotency_key')
      .executeTakeFirst();
    return inserted !== undefined;
  }

  findEvent(provider: BillingProvider, idempotencyKey: string): Promise<WebhookEventRow | undefined> {
    return this.db
      .selectFrom('billing_webhook_events')
      .selectAll()
      .where('provider', '=', provider)
      .where('idempotency_key', '=', idempotencyKey)
      .executeTakeFirst();
  }

  async recordEventOutcome(provider: BillingProvider, idempotencyKey: string, outcome: WebhookEventOutcome): Promise<void> {
    await this.db
      .updateTable('billing_webhook_events')
      .set({
        outcome: outcome.outcome,
        reason: outcome.reason,
        subscription_id: outcome.subscriptionId,
        parked_change: outcome.parkedChange,
      })
      .where('provider', '=', provider)
      .where('idempotency_key', '=', idempotencyKey)
      .execute();
  }

  /** Google events parked for a purchase token, oldest first. */
  parkedGoogleEvents(purchaseToken: string): Promise<WebhookEventRow[]> {
    return this.db
      .selectFrom('billing_webhook_events')
      .selectAll()
      .where('provider', '=', 'google')
      .where('provider_subscription_id', '=', purchaseToken)
      .where('parked_change', 'is not', null)
      .orderBy('event_time')
      .orderBy('received_at')
      .execute();
  }

  async deleteEventsReceivedBefore(before: number): Promise<number> {
    const result = await this.db.deleteFrom('billing_webhook_events').where('received_at', '<', before).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  // Google purchase links

  /**
   * Makes sure a link row exists for the token and locks it (PostgreSQL), so a notification and the app's
   * registration of the same token serialise on it.
   */
  async lockGooglePurchaseLink(purchaseToken: string, now: number): Promise<GooglePurchaseLinkRow> {
    await this.db
      .insertInto('billing_google_purchase_links')
      .values({ purchase_token: purchaseToken, user_id: null, product_id: null, created_at: now, linked_at: null })
      .onConflict((conflict) => conflict.doNothing())
      .execute();
    const query = this.db.selectFrom('billing_google_purchase_links').selectAll().where('purchase_token', '=', purchaseToken);
    return (this.engine === 'postgres' ? query.forUpdate() : query).executeTakeFirstOrThrow();
  }

  async linkGooglePurchase(purchaseToken: string, userId: number, productId: string, now: number): Promise<void> {
    await this.db
      .updateTable('billing_google_purchase_links')
      .set({ user_id: userId, product_id: productId, linked_at: now })
      .where('purchase_token', '=', purchaseToken)
      .execute();
  }

  findGooglePurchaseLink(purchaseToken: string): Promise<GooglePurchaseLinkRow | undefined> {
    return this.db.selectFrom('billing_google_purchase_links').selectAll().where('purchase_token', '=', purchaseToken).executeTakeFirst();
  }
}
