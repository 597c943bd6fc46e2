import type { Kysely } from 'kysely';

/**
 * What reaches a person is one delivery per (event, recipient), whatever number of rules match: the
 * recipient names the user and target (`<user>:mail`, `<user>:<push kind>:<target>`,
 * `<user>:webhook:<rule>`), unique per event. Rows written before have none and keep their old key.
 * `host` is a webhook's receiving host (or the mail relay), which the worker's per-host concurrency counts.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('notification_deliveries').addColumn('recipient', 'varchar(64)').execute();
  await db.schema.alterTable('notification_deliveries').addColumn('host', 'varchar(300)').execute();
  await db.schema.createIndex('notification_deliveries_recipient').on('notification_deliveries').columns(['event_id', 'recipient']).unique().execute();
  // The prune finds what is done and old by state and age.
  await db.schema.createIndex('notification_deliveries_done').on('notification_deliveries').columns(['state', 'created_at']).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('notification_deliveries_done').execute();
  await db.schema.dropIndex('notification_deliveries_recipient').execute();
  await db.schema.alterTable('notification_deliveries').dropColumn('host').execute();
  await db.schema.alterTable('notification_deliveries').dropColumn('recipient').execute();
}
