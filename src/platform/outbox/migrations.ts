import type { Kysely } from 'kysely';
import { engineOf, timestamp, withIdColumn } from '../db/migrations.ts';
import type { ModuleMigrations } from '../db/migrations.ts';

/** The platform's own tables, migrated before any module's. */
export const platformMigrations: ModuleMigrations = {
  module: 'platform',
  migrations: {
    '0001-outbox': {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
      async up(db: Kysely<any>): Promise<void> {
        await withIdColumn(db.schema.createTable('outbox'), engineOf(db))
          .addColumn('consumer', 'varchar(64)', (col) => col.notNull())
          .addColumn('topic', 'varchar(128)', (col) => col.notNull())
          .addColumn('payload', 'text', (col) => col.notNull())
          .addColumn('created_at', timestamp, (col) => col.notNull())
          .addColumn('available_at', timestamp, (col) => col.notNull())
          .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
          .addColumn('last_error', 'varchar(512)')
          .execute();
        await db.schema.createIndex('outbox_due').on('outbox').columns(['consumer', 'available_at']).execute();
      },
    },
    '0002-dead-letters': {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
      async up(db: Kysely<any>): Promise<void> {
        // The claim that holds a row: renewals and outcomes of a claim whose lease lapsed touch nothing.
        await db.schema.alterTable('outbox').addColumn('lease', 'varchar(32)').execute();
        await withIdColumn(db.schema.createTable('dead_letters'), engineOf(db))
          .addColumn('queue', 'varchar(64)', (col) => col.notNull())
          .addColumn('consumer', 'varchar(64)', (col) => col.notNull())
          .addColumn('topic', 'varchar(128)', (col) => col.notNull())
          .addColumn('source_id', 'bigint')
          .addColumn('payload', 'text', (col) => col.notNull())
          .addColumn('attempts', 'integer', (col) => col.notNull())
          .addColumn('last_error', 'varchar(512)')
          .addColumn('created_at', timestamp, (col) => col.notNull())
          .addColumn('failed_at', timestamp, (col) => col.notNull())
          .addColumn('retry_requested_at', timestamp)
          .execute();
        await db.schema.createIndex('dead_letters_queue').on('dead_letters').columns(['queue', 'consumer', 'retry_requested_at']).execute();
      },
    },
  },
};
