import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import { engineOf } from '../../../platform/db/migrations.ts';
import {
  createDefaultPartition,
  FIRST_PARTITIONED_MONTH,
  monthStart,
  MONTHS_AHEAD,
  nextMonth,
  PARTITIONED_TABLES,
  PartitionRepository,
} from '../retention/partitions.ts';
import type { PartitionedTable } from '../retention/partitions.ts';

/**
 * PostgreSQL: positions and events become tables partitioned by month of fix_time / event_time
 * (docs/tracking.md, "Storage"), carrying an existing table across with its rows, ids and id
 * sequence. The primary key of a partitioned table must hold the partition key, so it becomes
 * (id, time); ids stay unique as one sequence still numbers every row. SQLite keeps one table.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function up(db: Kysely<any>): Promise<void> {
  if (engineOf(db) !== 'postgres') return;
  for (const table of PARTITIONED_TABLES) await partition(db, table);
}

const DAY_MS = 86_400_000;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
async function partition(db: Kysely<any>, { table, key }: PartitionedTable): Promise<void> {
  const old = `${table}_unpartitioned`;
  await setAside(db, table, old);
  await sql`
    create table ${sql.id(table)} (like ${sql.id(old)} including defaults including identity, primary key (id, ${sql.id(key)}))
    partition by range (${sql.id(key)})`.execute(db);
  await createDefaultPartition(table).execute(db);
  // A partition for this month and those just ahead, and for every older month that holds rows (from 2000 on); rows
  // dated later than that are strays for the default partition, until their month is made ahead of time.
  const starts = new Set<number>();
  let end = monthStart(Date.now());
  for (let ahead = 0; ahead <= MONTHS_AHEAD; ahead++, end = nextMonth(end)) starts.add(end);
  const days = await sql<{ day: number }>`
    select distinct ${sql.id(key)} / ${DAY_MS} as day from ${sql.id(old)}
    where ${sql.id(key)} >= ${FIRST_PARTITIONED_MONTH} and ${sql.id(key)} < ${end}`.execute(db);
  for (const { day } of days.rows) starts.add(monthStart(Number(day) * DAY_MS));
  const repository = new PartitionRepository(db);
  for (const month of [...starts].sort((a, b) => a - b)) await repository.ensureMonths({ table, key }, month, month);
  await sql`insert into ${sql.id(table)} select * from ${sql.id(old)}`.execute(db);
  await carrySequence(db, table, old);
  await sql`drop table ${sql.id(old)}`.execute(db);
  await sql`create index ${sql.id(`${table}_device_id_${key}`)} on ${sql.id(table)} (device_id, ${sql.id(key)}, id)`.execute(db);
  await sql`analyze ${sql.id(table)}`.execute(db);
}

/** Renames the table, its id sequence and its indexes, freeing their names for the new table. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
async function setAside(db: Kysely<any>, table: string, old: string): Promise<void> {
  const indexes = await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = ${table} and schemaname = current_schema()`.execute(db);
  const sequence = await sql<{ name: string }>`select pg_get_serial_sequence(${table}, 'id') as name`.execute(db);
  await sql`alter table ${sql.id(table)} rename to ${sql.id(old)}`.execute(db);
  await sql`alter sequence ${sql.raw(String(sequence.rows[0]?.name))} rename to ${sql.id(`${old}_id_seq`)}`.execute(db);
  for (const { name } of indexes.rows) await sql`alter index ${sql.id(name)} rename to ${sql.id(name.replace(table, old))}`.execute(db);
}

/** The new id sequence goes on where the old one stopped: ids are never reused, even those of rows deleted since. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
async function carrySequence(db: Kysely<any>, table: string, old: string): Promise<void> {
  await sql`select setval(pg_get_serial_sequence(${table}, 'id'), last_value, is_called) from ${sql.id(`${old}_id_seq`)}`.execute(db);
}

/** Back to one table per kind, rows and ids kept. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the raw schema
export async function down(db: Kysely<any>): Promise<void> {
  if (engineOf(db) !== 'postgres') return;
  for (const { table, key } of PARTITIONED_TABLES) {
    const old = `${table}_partitioned`;
    await setAside(db, table, old);
    await sql`create table ${sql.id(table)} (like ${sql.id(old)} including defaults including identity, primary key (id))`.execute(db);
    await sql`insert into ${sql.id(table)} select * from ${sql.id(old)}`.execute(db);
    await carrySequence(db, table, old);
    await sql`drop table ${sql.id(old)} cascade`.execute(db);
    await sql`create index ${sql.id(`${table}_device_id_${key}`)} on ${sql.id(table)} (device_id, ${sql.id(key)}, id)`.execute(db);
  }
}
