import { sql } from 'kysely';
import type { Kysely } from 'kysely';

/**
 * Each geofence keeps the number of points of its area, so a user's total (capped by
 * MAX_GEOFENCE_POINTS_PER_USER) is one indexed sum. Stored areas are normalised text: a CIRCLE
 * counts 1, a POLYGON or LINESTRING one more than its commas.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('geofences').addColumn('points', 'integer', (col) => col.notNull().defaultTo(0)).execute();
  await sql`update geofences set points = case when area like 'CIRCLE%' then 1 else length(area) - length(replace(area, ',', '')) + 1 end`.execute(db);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('geofences').dropColumn('points').execute();
}
