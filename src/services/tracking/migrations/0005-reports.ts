import type { Kysely } from 'kysely';
import { engineOf, timestamp, withIdColumn } from '../../../platform/db/migrations.ts';

/**
 * Reports are facts computed once as positions arrive (DESIGN §5.9, docs/reports.md): each device's
 * durable motion state, the trips and stops it writes, and hourly sums that summaries add up
 * instead of reading positions.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function up(db: Kysely<any>): Promise<void> {
  const engine = engineOf(db);

  // Where each device's segmentation stands: the last position it took, and the machine's state then.
  await db.schema
    .createTable('motion_states')
    .addColumn('device_id', 'bigint', (col) => col.primaryKey())
    .addColumn('fix_time', timestamp, (col) => col.notNull())
    .addColumn('position_id', 'bigint', (col) => col.notNull())
    .addColumn('state', 'text', (col) => col.notNull())
    .addColumn('updated_at', timestamp, (col) => col.notNull())
    .execute();

  await withIdColumn(db.schema.createTable('trips'), engine)
    .addColumn('device_id', 'bigint', (col) => col.notNull())
    .addColumn('start_time', timestamp, (col) => col.notNull())
    .addColumn('end_time', timestamp, (col) => col.notNull())
    .addColumn('start_position_id', 'bigint', (col) => col.notNull())
    .addColumn('end_position_id', 'bigint', (col) => col.notNull())
    .addColumn('start_lat', 'double precision', (col) => col.notNull())
    .addColumn('start_lon', 'double precision', (col) => col.notNull())
    .addColumn('end_lat', 'double precision', (col) => col.notNull())
    .addColumn('end_lon', 'double precision', (col) => col.notNull())
    .addColumn('distance', 'double precision', (col) => col.notNull())
    .addColumn('average_speed', 'double precision', (col) => col.notNull())
    .addColumn('max_speed', 'double precision', (col) => col.notNull())
    .addColumn('start_odometer', 'double precision', (col) => col.notNull())
    .addColumn('end_odometer', 'double precision', (col) => col.notNull())
    .addColumn('spent_fuel', 'double precision')
    .addColumn('driver_unique_id', 'varchar(128)')
    .addColumn('start_address', 'varchar(512)')
    .addColumn('end_address', 'varchar(512)')
    .addColumn('ongoing', 'integer', (col) => col.notNull())
    .execute();
  // A window's trips of a set of devices; a trip overlapping the window starts before its end.
  await db.schema.createIndex('trips_device_id_start_time').on('trips').columns(['device_id', 'start_time']).execute();
  await db.schema.createIndex('trips_device_id_end_time').on('trips').columns(['device_id', 'end_time']).execute();

  await withIdColumn(db.schema.createTable('stops'), engine)
    .addColumn('device_id', 'bigint', (col) => col.notNull())
    .addColumn('start_time', timestamp, (col) => col.notNull())
    .addColumn('end_time', timestamp, (col) => col.notNull())
    .addColumn('position_id', 'bigint', (col) => col.notNull())
    .addColumn('lat', 'double precision', (col) => col.notNull())
    .addColumn('lon', 'double precision', (col) => col.notNull())
    .addColumn('engine_hours', timestamp)
    .addColumn('spent_fuel', 'double precision')
    .addColumn('address', 'varchar(512)')
    .addColumn('ongoing', 'integer', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('stops_device_id_start_time').on('stops').columns(['device_id', 'start_time']).execute();
  await db.schema.createIndex('stops_device_id_end_time').on('stops').columns(['device_id', 'end_time']).execute();

  // One row per device and UTC hour that holds positions: what a summary adds up.
  await db.schema
    .createTable('summary_hours')
    .addColumn('device_id', 'bigint', (col) => col.notNull())
    .addColumn('hour_start', timestamp, (col) => col.notNull())
    .addColumn('first_time', timestamp, (col) => col.notNull())
    .addColumn('last_time', timestamp, (col) => col.notNull())
    .addColumn('positions', 'integer', (col) => col.notNull())
    .addColumn('distance', 'double precision', (col) => col.notNull())
    .addColumn('max_speed', 'double precision', (col) => col.notNull())
    .addColumn('speed_sum', 'double precision', (col) => col.notNull())
    .addColumn('start_odometer', 'double precision', (col) => col.notNull())
    .addColumn('end_odometer', 'double precision', (col) => col.notNull())
    .addColumn('engine_hours', timestamp, (col) => col.notNull())
    .addColumn('spent_fuel', 'double precision', (col) => col.notNull())
    .addPrimaryKeyConstraint('summary_hours_pkey', ['device_id', 'hour_start'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('summary_hours').execute();
  await db.schema.dropTable('stops').execute();
  await db.schema.dropTable('trips').execute();
  await db.schema.dropTable('motion_states').execute();
}
