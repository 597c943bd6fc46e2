import type { Kysely } from 'kysely';
import { timestamp } from '../../../platform/db/migrations.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('two_factor').addColumn('method', 'varchar(8)', (col) => col.notNull().defaultTo('totp')).execute();
  await db.schema.alterTable('one_time_tokens').addColumn('code_sent_at', timestamp).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('one_time_tokens').dropColumn('code_sent_at').execute();
  await db.schema.alterTable('two_factor').dropColumn('method').execute();
}
