import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import { engineOf, timestamp, withIdColumn } from '../../../platform/db/migrations.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function up(db: Kysely<any>): Promise<void> {
  await withIdColumn(db.schema.createTable('devices'), engineOf(db))
    .addColumn('name', 'varchar(128)', (col) => col.notNull())
    .addColumn('unique_id', 'varchar(128)', (col) => col.notNull().unique())
    .addColumn('status', 'varchar(16)', (col) => col.notNull().defaultTo('offline'))
    .addColumn('last_update', timestamp)
    .addColumn('position_id', 'bigint')
    .addColumn('phone', 'varchar(64)')
    .addColumn('model', 'varchar(128)')
    .addColumn('contact', 'varchar(512)')
    .addColumn('category', 'varchar(64)')
    .addColumn('disabled', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('expiration_time', timestamp)
    .addColumn('group_id', 'bigint')
    .addColumn('calendar_id', 'bigint')
    .addColumn('attributes', 'text', (col) => col.notNull().defaultTo('{}'))
    .addColumn('owner_id', 'bigint', (col) => col.notNull())
    .addColumn('created_at', timestamp, (col) => col.notNull())
    .addColumn('updated_at', timestamp, (col) => col.notNull())
    .execute();
  await db.schema.createIndex('devices_owner_id').on('devices').column('owner_id').execute();

  await db.schema
    .createTable('device_shares')
    .addColumn('device_id', 'bigint', (col) => col.notNull().references('devices.id').onDelete('cascade'))
    .addColumn('user_id', 'bigint', (col) => col.notNull())
    .addColumn('position', 'integer', (col) => col.notNull())
    .addColumn('events', 'integer', (col) => col.notNull())
    .addColumn('geofences', 'integer', (col) => col.notNull())
    .addColumn('notifications', 'integer', (col) => col.notNull())
    .addColumn('commands', 'integer', (col) => col.notNull())
    .addColumn('shared_by', 'bigint', (col) => col.notNull())
    .addColumn('created_at', timestamp, (col) => col.notNull())
    .addColumn('updated_at', timestamp, (col) => col.notNull())
    .addPrimaryKeyConstraint('device_shares_pk', ['device_id', 'user_id'])
    .execute();
  await db.schema.createIndex('device_shares_user_id').on('device_shares').column('user_id').execute();

  await db.schema
    .createTable('claim_tokens')
    .addColumn('token', 'varchar(12)', (col) => col.primaryKey())
    .addColumn('unique_id', 'varchar(128)')
    .addColumn('model_code', 'varchar(64)', (col) => col.notNull())
    .addColumn('model_name', 'varchar(128)')
    .addColumn('status', 'varchar(16)', (col) => col.notNull().defaultTo('unclaimed'))
    .addColumn('claimed_by', 'bigint')
    .addColumn('claimed_at', timestamp)
    .addColumn('device_id', 'bigint', (col) => col.references('devices.id').onDelete('set null'))
    .addColumn('created_at', timestamp, (col) => col.notNull())
    .addColumn('updated_at', timestamp, (col) => col.notNull())
    .execute();
  await db.schema.createIndex('claim_tokens_unique_id').on('claim_tokens').column('unique_id').execute();
  // At most one live token names a device, so a claim can never race a second token for it.
  await db.schema
    .createIndex('claim_tokens_live_unique_id')
    .on('claim_tokens')
    .column('unique_id')
    .unique()
    .where(sql.ref('status'), '<>', sql.lit('revoked'))
    .execute();
  await db.schema.createIndex('claim_tokens_status_created_at').on('claim_tokens').columns(['status', 'created_at']).execute();
  await db.schema.createIndex('claim_tokens_claimed_by').on('claim_tokens').column('claimed_by').execute();
  await db.schema.createIndex('claim_tokens_device_id').on('claim_tokens').column('device_id').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('claim_tokens').execute();
  await db.schema.dropTable('device_shares').execute();
  await db.schema.dropTable('devices').execute();
}
