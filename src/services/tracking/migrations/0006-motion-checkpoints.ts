import type { Kysely } from 'kysely';
import { timestamp } from '../../../platform/db/migrations.ts';

/**
 * The motion machine's state before the first position of each UTC hour of a device (docs/reports.md, "Late
 * positions"): a position that arrives late rewinds the device's segmentation to the checkpoint before it, not to the
 * device's first position.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('motion_checkpoints')
    .addColumn('device_id', 'bigint', (col) => col.notNull())
    .addColumn('fix_time', timestamp, (col) => col.notNull())
    .addColumn('position_id', 'bigint', (col) => col.notNull())
    .addColumn('state', 'text', (col) => col.notNull())
    .addPrimaryKeyConstraint('motion_checkpoints_pkey', ['device_id', 'fix_time', 'position_id'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('motion_checkpoints').execute();
}
