import type { Kysely } from 'kysely';
import { engineOf, timestamp, withIdColumn } from '../../../platform/db/migrations.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function up(db: Kysely<any>): Promise<void> {
  const engine = engineOf(db);

  await db.schema
    .createTable('refresh_tokens')
    .addColumn('token_hash', 'varchar(64)', (col) => col.primaryKey())
    .addColumn('session_id', 'varchar(64)', (col) => col.notNull())
    .addColumn('user_id', 'bigint', (col) => col.notNull())
    .addColumn('created_at', timestamp, (col) => col.notNull())
    .addColumn('expires_at', timestamp, (col) => col.notNull())
    .addColumn('rotated_at', timestamp)
    .execute();
  await db.schema.createIndex('refresh_tokens_session_id').on('refresh_tokens').column('session_id').execute();
  await db.schema.createIndex('refresh_tokens_expires_at').on('refresh_tokens').column('expires_at').execute();

  await db.schema
    .createTable('one_time_tokens')
    .addColumn('token_hash', 'varchar(64)', (col) => col.primaryKey())
    .addColumn('purpose', 'varchar(32)', (col) => col.notNull())
    .addColumn('user_id', 'bigint', (col) => col.notNull())
    .addColumn('code_hash', 'varchar(64)')
    .addColumn('failed_attempts', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('created_at', timestamp, (col) => col.notNull())
    .addColumn('expires_at', timestamp, (col) => col.notNull())
    .addColumn('consumed_at', timestamp)
    .execute();
  await db.schema.createIndex('one_time_tokens_user_purpose').on('one_time_tokens').columns(['user_id', 'purpose']).execute();
  await db.schema.createIndex('one_time_tokens_expires_at').on('one_time_tokens').column('expires_at').execute();

  await db.schema
    .createTable('two_factor')
    .addColumn('user_id', 'bigint', (col) => col.primaryKey())
    .addColumn('secret', 'varchar(255)')
    .addColumn('enabled_at', timestamp)
    .addColumn('last_used_step', 'bigint', (col) => col.notNull().defaultTo(0))
    .addColumn('pending_secret', 'varchar(255)')
    .addColumn('pending_expires_at', timestamp)
    .addColumn('updated_at', timestamp, (col) => col.notNull())
    .execute();

  await withIdColumn(db.schema.createTable('backup_codes'), engine)
    .addColumn('user_id', 'bigint', (col) => col.notNull())
    .addColumn('code_hash', 'varchar(255)', (col) => col.notNull())
    .addColumn('created_at', timestamp, (col) => col.notNull())
    .addColumn('used_at', timestamp)
    .execute();
  await db.schema.createIndex('backup_codes_user_id').on('backup_codes').column('user_id').execute();

  await db.schema.createIndex('sessions_expires_at').on('sessions').column('expires_at').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('sessions_expires_at').execute();
  for (const table of ['backup_codes', 'two_factor', 'one_time_tokens', 'refresh_tokens']) await db.schema.dropTable(table).execute();
}
