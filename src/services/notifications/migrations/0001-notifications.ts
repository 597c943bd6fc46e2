import type { Kysely } from 'kysely';
import { engineOf, timestamp, withIdColumn } from '../../../platform/db/migrations.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function up(db: Kysely<any>): Promise<void> {
  const engine = engineOf(db);
  await withIdColumn(db.schema.createTable('notification_rules'), engine)
    .addColumn('user_id', 'bigint', (col) => col.notNull())
    .addColumn('type', 'varchar(32)', (col) => col.notNull())
    .addColumn('always', 'integer', (col) => col.notNull())
    .addColumn('channels', 'text', (col) => col.notNull())
    .addColumn('attributes', 'text', (col) => col.notNull())
    .addColumn('calendar_id', 'bigint')
    .addColumn('webhook_secret', 'varchar(128)')
    .addColumn('created_at', timestamp, (col) => col.notNull())
    .addColumn('updated_at', timestamp, (col) => col.notNull())
    .execute();
  await db.schema.createIndex('notification_rules_user').on('notification_rules').column('user_id').execute();
  await db.schema.createIndex('notification_rules_type').on('notification_rules').columns(['type', 'always']).execute();

  await db.schema
    .createTable('notification_rule_devices')
    .addColumn('rule_id', 'bigint', (col) => col.notNull().references('notification_rules.id').onDelete('cascade'))
    .addColumn('device_id', 'bigint', (col) => col.notNull())
    .addPrimaryKeyConstraint('notification_rule_devices_pk', ['rule_id', 'device_id'])
    .execute();
  await db.schema.createIndex('notification_rule_devices_device').on('notification_rule_devices').column('device_id').execute();

  await withIdColumn(db.schema.createTable('notification_targets'), engine)
    .addColumn('user_id', 'bigint', (col) => col.notNull())
    .addColumn('kind', 'varchar(16)', (col) => col.notNull())
    .addColumn('address', 'varchar(2048)', (col) => col.notNull())
    .addColumn('subscription', 'text')
    .addColumn('name', 'varchar(128)')
    .addColumn('created_at', timestamp, (col) => col.notNull())
    .addUniqueConstraint('notification_targets_address', ['user_id', 'kind', 'address'])
    .execute();

  await withIdColumn(db.schema.createTable('notification_deliveries'), engine)
    .addColumn('delivery_id', 'varchar(36)', (col) => col.notNull().unique())
    .addColumn('user_id', 'bigint', (col) => col.notNull())
    .addColumn('rule_id', 'bigint', (col) => col.notNull().references('notification_rules.id').onDelete('cascade'))
    .addColumn('event_id', 'bigint', (col) => col.notNull())
    .addColumn('device_id', 'bigint', (col) => col.notNull())
    .addColumn('channel', 'varchar(16)', (col) => col.notNull())
    .addColumn('target', 'varchar(32)', (col) => col.notNull())
    .addColumn('payload', 'text', (col) => col.notNull())
    .addColumn('state', 'varchar(16)', (col) => col.notNull())
    .addColumn('collapse_key', 'varchar(256)')
    .addColumn('collapsed_into', 'bigint')
    .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('available_at', timestamp, (col) => col.notNull())
    .addColumn('claimed_at', timestamp)
    .addColumn('expires_at', timestamp, (col) => col.notNull())
    .addColumn('created_at', timestamp, (col) => col.notNull())
    .addColumn('sent_at', timestamp)
    .addColumn('last_error', 'varchar(512)')
    .addUniqueConstraint('notification_deliveries_once', ['event_id', 'rule_id', 'channel', 'target'])
    .execute();
  await db.schema.createIndex('notification_deliveries_due').on('notification_deliveries').columns(['state', 'available_at']).execute();
  await db.schema.createIndex('notification_deliveries_user').on('notification_deliveries').columns(['user_id', 'state']).execute();
  await db.schema.createIndex('notification_deliveries_collapse').on('notification_deliveries').columns(['collapse_key', 'created_at']).execute();
  await db.schema.createIndex('notification_deliveries_collapsed').on('notification_deliveries').column('collapsed_into').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['notification_deliveries', 'notification_targets', 'notification_rule_devices', 'notification_rules']) {
    await db.schema.dropTable(table).execute();
  }
}
