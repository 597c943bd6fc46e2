import type { Kysely } from 'kysely';
import { engineOf, timestamp, withIdColumn } from '../../../platform/db/migrations.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function up(db: Kysely<any>): Promise<void> {
  await withIdColumn(db.schema.createTable('openid_identities'), engineOf(db))
    .addColumn('provider', 'varchar(16)', (col) => col.notNull())
    .addColumn('subject', 'varchar(255)', (col) => col.notNull())
    .addColumn('user_id', 'bigint', (col) => col.notNull())
    .addColumn('email', 'varchar(254)')
    .addColumn('email_verified', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('created_at', timestamp, (col) => col.notNull())
    .addColumn('last_used_at', timestamp, (col) => col.notNull())
    .addUniqueConstraint('openid_identities_provider_subject', ['provider', 'subject'])
    .execute();
  await db.schema.createIndex('openid_identities_user_id').on('openid_identities').column('user_id').execute();

  await db.schema
    .createTable('openid_states')
    .addColumn('state_hash', 'varchar(64)', (col) => col.primaryKey())
    .addColumn('provider', 'varchar(16)', (col) => col.notNull())
    .addColumn('ret', 'varchar(8)', (col) => col.notNull())
    .addColumn('nonce', 'varchar(128)', (col) => col.notNull())
    .addColumn('code_verifier', 'varchar(128)', (col) => col.notNull())
    .addColumn('binding_hash', 'varchar(64)', (col) => col.notNull())
    .addColumn('created_at', timestamp, (col) => col.notNull())
    .addColumn('expires_at', timestamp, (col) => col.notNull())
    .addColumn('consumed_at', timestamp)
    .execute();
  await db.schema.createIndex('openid_states_expires_at').on('openid_states').column('expires_at').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('openid_states').execute();
  await db.schema.dropTable('openid_identities').execute();
}
