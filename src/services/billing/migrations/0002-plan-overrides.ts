import type { Kysely } from 'kysely';
import { timestamp } from '../../../platform/db/migrations.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('billing_plan_overrides')
    .addColumn('user_id', 'bigint', (col) => col.primaryKey())
    .addColumn('plan_id', 'varchar(64)', (col) => col.notNull())
    .addColumn('until', timestamp)
    .addColumn('set_by', 'bigint', (col) => col.notNull())
    .addColumn('updated_at', timestamp, (col) => col.notNull())
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('billing_plan_overrides').execute();
}
