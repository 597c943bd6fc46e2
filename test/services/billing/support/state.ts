// Reads the billing tables back, so tests assert on what was stored rather than only on responses.
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../../../../src/platform/db/database.ts';
import type { BillingTables } from '../../../../src/services/billing/tables.ts';

export function billingTables(database: Database | undefined): Kysely<BillingTables> {
  if (!database) throw new Error('the server has no database');
  return database.db as Kysely<BillingTables>;
}

export function subscriptionRecord(database: Database | undefined, provider: string, providerSubscriptionId: string) {
  return billingTables(database)
    .selectFrom('subscriptions')
    .selectAll()
    .where('provider', '=', provider as 'stripe')
    .where('provider_subscription_id', '=', providerSubscriptionId)
    .executeTakeFirst();
}

export function subscriptionRecordsOfUser(database: Database | undefined, userId: number) {
  return billingTables(database).selectFrom('subscriptions').selectAll().where('user_id', '=', userId).orderBy('id').execute();
}

export function webhookEvent(database: Database | undefined, provider: string, idempotencyKey: string) {
  return billingTables(database)
    .selectFrom('billing_webhook_events')
    .selectAll()
    .where('provider', '=', provider as 'stripe')
    .where('idempotency_key', '=', idempotencyKey)
    .executeTakeFirst();
}

export async function countRows(database: Database | undefined, table: keyof BillingTables): Promise<number> {
  const row = await billingTables(database).selectFrom(table).select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow();
  return Number(row.count);
}

/** Delivers a webhook that must be refused as INVALID_PAYLOAD, and checks that no billing table gained or lost a row. */
export async function assertRefusedStoringNothing(database: Database | undefined, deliver: () => Promise<LightMyRequestResponse>): Promise<void> {
  const tables = ['billing_webhook_events', 'subscriptions', 'billing_google_purchase_links'] as const;
  const counts = () => Promise.all(tables.map((table) => countRows(database, table)));
  const before = await counts();
  const response = await deliver();
  assert.equal(response.statusCode, 400, response.body);
  assert.equal(response.json().code, 'INVALID_PAYLOAD');
  assert.deepEqual(await counts(), before, 'nothing is stored');
}
