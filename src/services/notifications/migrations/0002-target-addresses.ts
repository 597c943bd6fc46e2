import type { Kysely } from 'kysely';

/**
 * Finds a push token or endpoint whatever the user, so that registering it takes it from any other
 * account. Not unique: targets registered before may share an address across users.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('notification_targets_kind_address').on('notification_targets').columns(['kind', 'address']).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('notification_targets_kind_address').execute();
}
