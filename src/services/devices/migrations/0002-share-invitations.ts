import type { Kysely } from 'kysely';
import { timestamp } from '../../../platform/db/migrations.ts';

/** Shares made to an address no account has yet: they become shares when an account with it looks at its devices. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('device_invitations')
    .addColumn('device_id', 'bigint', (col) => col.notNull().references('devices.id').onDelete('cascade'))
    .addColumn('email', 'varchar(254)', (col) => col.notNull())
    .addColumn('position', 'integer', (col) => col.notNull())
    .addColumn('events', 'integer', (col) => col.notNull())
    .addColumn('geofences', 'integer', (col) => col.notNull())
    .addColumn('notifications', 'integer', (col) => col.notNull())
    .addColumn('commands', 'integer', (col) => col.notNull())
    .addColumn('shared_by', 'bigint', (col) => col.notNull())
    .addColumn('created_at', timestamp, (col) => col.notNull())
    .addColumn('updated_at', timestamp, (col) => col.notNull())
    .addPrimaryKeyConstraint('device_invitations_pk', ['device_id', 'email'])
    .execute();
  await db.schema.createIndex('device_invitations_email').on('device_invitations').column('email').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('device_invitations').execute();
}
