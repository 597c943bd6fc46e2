import type { Kysely } from 'kysely';
import { engineOf, timestamp, withIdColumn } from '../../../platform/db/migrations.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function up(db: Kysely<any>): Promise<void> {
  const engine = engineOf(db);

  // Every accepted send, from queued to its end (docs/commands.md).
  await withIdColumn(db.schema.createTable('commands'), engine)
    .addColumn('device_id', 'bigint', (col) => col.notNull())
    .addColumn('user_id', 'bigint', (col) => col.notNull())
    .addColumn('type', 'varchar(32)', (col) => col.notNull())
    .addColumn('attributes', 'text', (col) => col.notNull())
    .addColumn('status', 'varchar(16)', (col) => col.notNull())
    .addColumn('created_at', timestamp, (col) => col.notNull())
    .addColumn('sent_at', timestamp)
    .addColumn('delivered_at', timestamp)
    .execute();
  // A device's queue and its sent commands awaiting an answer, in order; and history by createdAt.
  await db.schema.createIndex('commands_device_id_status_id').on('commands').columns(['device_id', 'status', 'id']).execute();
  await db.schema.createIndex('commands_device_id_created_at').on('commands').columns(['device_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('commands_status_created_at').on('commands').columns(['status', 'created_at']).execute();

  await withIdColumn(db.schema.createTable('saved_commands'), engine)
    .addColumn('user_id', 'bigint', (col) => col.notNull())
    // Whether its creator was an administrator when creating it: then every user may send it (spec §2.1 limitCommands).
    .addColumn('by_administrator', 'integer', (col) => col.notNull())
    .addColumn('description', 'varchar(128)', (col) => col.notNull())
    .addColumn('type', 'varchar(32)', (col) => col.notNull())
    .addColumn('attributes', 'text', (col) => col.notNull())
    .addColumn('created_at', timestamp, (col) => col.notNull())
    .execute();
  await db.schema.createIndex('saved_commands_user_id').on('saved_commands').columns(['user_id', 'id']).execute();

  // The protocol a device last spoke: which command types it can be sent.
  await db.schema
    .createTable('device_protocols')
    .addColumn('device_id', 'bigint', (col) => col.primaryKey())
    .addColumn('protocol', 'varchar(32)', (col) => col.notNull())
    .addColumn('updated_at', timestamp, (col) => col.notNull())
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('device_protocols').execute();
  await db.schema.dropTable('saved_commands').execute();
  await db.schema.dropTable('commands').execute();
}
