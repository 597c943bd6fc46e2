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
  },
};
