import type { Kysely } from 'kysely';
import { engineOf, timestamp, withIdColumn } from '../../../platform/db/migrations.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function up(db: Kysely<any>): Promise<void> {
  await withIdColumn(db.schema.createTable('subscriptions'), engineOf(db))
    .addColumn('user_id', 'bigint', (col) => col.notNull())
    .addColumn('provider', 'varchar(16)', (col) => col.notNull())
    .addColumn('provider_subscription_id', 'varchar(1024)', (col) => col.notNull())
    .addColumn('plan_id', 'varchar(255)', (col) => col.notNull())
    .addColumn('plan_name', 'varchar(255)')
    .addColumn('status', 'varchar(16)', (col) => col.notNull())
    .addColumn('current_period_start', timestamp)
    .addColumn('current_period_end', timestamp)
    .addColumn('canceled_at', timestamp)
    .addColumn('created_at', timestamp, (col) => col.notNull())
    .addColumn('updated_at', timestamp, (col) => col.notNull())
    .addColumn('last_event_at', timestamp, (col) => col.notNull())
    .addUniqueConstraint('subscriptions_user_provider', ['user_id', 'provider'])
    .addUniqueConstraint('subscriptions_provider_subscription', ['provider', 'provider_subscription_id'])
    .execute();

  await db.schema
    .createTable('billing_customers')
    .addColumn('user_id', 'bigint', (col) => col.primaryKey())
    .addColumn('app_account_token', 'varchar(36)', (col) => col.notNull().unique())
    .addColumn('created_at', timestamp, (col) => col.notNull())
    .execute();

  await db.schema
    .createTable('billing_webhook_events')
    .addColumn('provider', 'varchar(16)', (col) => col.notNull())
    .addColumn('idempotency_key', 'varchar(255)', (col) => col.notNull())
    .addColumn('event_time', timestamp, (col) => col.notNull())
    .addColumn('received_at', timestamp, (col) => col.notNull())
    .addColumn('outcome', 'varchar(16)', (col) => col.notNull())
    .addColumn('reason', 'varchar(255)')
    .addColumn('subscription_id', 'bigint')
    .addColumn('provider_subscription_id', 'varchar(1024)')
    .addColumn('parked_change', 'text')
    .addPrimaryKeyConstraint('billing_webhook_events_pk', ['provider', 'idempotency_key'])
    .execute();
  await db.schema
    .createIndex('billing_webhook_events_subscription')
    .on('billing_webhook_events')
    .columns(['provider', 'provider_subscription_id'])
    .execute();
  await db.schema.createIndex('billing_webhook_events_received_at').on('billing_webhook_events').column('received_at').execute();

  await db.schema
    .createTable('billing_google_purchase_links')
    .addColumn('purchase_token', 'varchar(1024)', (col) => col.primaryKey())
    .addColumn('user_id', 'bigint')
    .addColumn('product_id', 'varchar(255)')
    .addColumn('created_at', timestamp, (col) => col.notNull())
    .addColumn('linked_at', timestamp)
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('billing_google_purchase_links').execute();
  await db.schema.dropTable('billing_webhook_events').execute();
  await db.schema.dropTable('billing_customers').execute();
  await db.schema.dropTable('subscriptions').execute();
}
