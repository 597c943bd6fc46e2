import type { Kysely } from 'kysely';
import { engineOf, timestamp, withIdColumn } from '../../../platform/db/migrations.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function up(db: Kysely<any>): Promise<void> {
  const engine = engineOf(db);

  // 'double precision' is an 8-byte float on PostgreSQL and has REAL affinity (also 8 bytes) on SQLite.
  await withIdColumn(db.schema.createTable('positions'), engine)
    .addColumn('device_id', 'bigint', (col) => col.notNull())
    .addColumn('protocol', 'varchar(32)')
    .addColumn('server_time', timestamp, (col) => col.notNull())
    .addColumn('device_time', timestamp)
    .addColumn('fix_time', timestamp, (col) => col.notNull())
    .addColumn('valid', 'integer', (col) => col.notNull())
    .addColumn('latitude', 'double precision', (col) => col.notNull())
    .addColumn('longitude', 'double precision', (col) => col.notNull())
    .addColumn('altitude', 'double precision', (col) => col.notNull())
    .addColumn('speed', 'double precision', (col) => col.notNull())
    .addColumn('course', 'double precision', (col) => col.notNull())
    .addColumn('accuracy', 'double precision', (col) => col.notNull())
    .addColumn('address', 'varchar(512)')
    .addColumn('attributes', 'text', (col) => col.notNull())
    .execute();
  // History reads (device, fixTime range) in (fix_time, id) order straight from the index, id breaking ties.
  await db.schema.createIndex('positions_device_id_fix_time').on('positions').columns(['device_id', 'fix_time', 'id']).execute();

  await withIdColumn(db.schema.createTable('events'), engine)
    .addColumn('type', 'varchar(32)', (col) => col.notNull())
    .addColumn('event_time', timestamp, (col) => col.notNull())
    .addColumn('device_id', 'bigint', (col) => col.notNull())
    .addColumn('position_id', 'bigint')
    .addColumn('geofence_id', 'bigint')
    .addColumn('maintenance_id', 'bigint')
    .addColumn('attributes', 'text', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('events_device_id_event_time').on('events').columns(['device_id', 'event_time', 'id']).execute();

  // The newest position of each device by fixTime: what "latest" answers from, and what an out-of-order fix cannot move.
  await db.schema
    .createTable('latest_positions')
    .addColumn('device_id', 'bigint', (col) => col.primaryKey())
    .addColumn('position_id', 'bigint', (col) => col.notNull())
    .addColumn('fix_time', timestamp, (col) => col.notNull())
    .execute();

  await withIdColumn(db.schema.createTable('geofences'), engine)
    .addColumn('owner_id', 'bigint', (col) => col.notNull())
    .addColumn('name', 'varchar(128)', (col) => col.notNull())
    .addColumn('description', 'varchar(512)')
    .addColumn('area', 'text', (col) => col.notNull())
    .addColumn('calendar_id', 'bigint')
    .addColumn('attributes', 'text', (col) => col.notNull())
    .addColumn('created_at', timestamp, (col) => col.notNull())
    .addColumn('updated_at', timestamp, (col) => col.notNull())
    .execute();
  await db.schema.createIndex('geofences_owner_id').on('geofences').column('owner_id').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('geofences').execute();
  await db.schema.dropTable('latest_positions').execute();
  await db.schema.dropTable('events').execute();
  await db.schema.dropTable('positions').execute();
}
