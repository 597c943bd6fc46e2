import type { Kysely } from 'kysely';

/**
 * Deliveries run on the platform's durable-work rules (docs/architecture.md, "Durable work"): a
 * claim writes its lease token, and every write after it names the token, so a worker whose lease
 * lapsed changes nothing; `claims` counts the claims that ended without an outcome (a handler that
 * crashed, timed out or took its process down), which the attempt cap bounds.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('notification_deliveries').addColumn('lease', 'varchar(32)').execute();
  await db.schema.alterTable('notification_deliveries').addColumn('claims', 'integer', (column) => column.notNull().defaultTo(0)).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('notification_deliveries').dropColumn('claims').execute();
  await db.schema.alterTable('notification_deliveries').dropColumn('lease').execute();
}
