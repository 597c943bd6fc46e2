import type { Kysely } from 'kysely';
import { engineOf, timestamp, withIdColumn } from '../../../platform/db/migrations.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function up(db: Kysely<any>): Promise<void> {
  await withIdColumn(db.schema.createTable('users'), engineOf(db))
    .addColumn('email', 'varchar(254)', (col) => col.notNull().unique())
    .addColumn('password_hash', 'varchar(255)')
    .addColumn('name', 'varchar(255)')
    .addColumn('phone', 'varchar(64)')
    .addColumn('administrator', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('disabled', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('readonly', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('device_readonly', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('limit_commands', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('expiration_time', timestamp)
    .addColumn('attributes', 'text', (col) => col.notNull().defaultTo('{}'))
    .addColumn('email_verified_at', timestamp)
    .addColumn('created_at', timestamp, (col) => col.notNull())
    .addColumn('updated_at', timestamp, (col) => col.notNull())
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('users').execute();
}
