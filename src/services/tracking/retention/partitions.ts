import { sql } from 'kysely';
import type { Kysely, RawBuilder } from 'kysely';
import { TableAccess } from '../../../platform/db/table-access.ts';

/**
 * PostgreSQL keeps positions and events in monthly range partitions of their time column (epoch
 * milliseconds, UTC months), plus a DEFAULT partition for rows no month partition covers (a fix time
 * of 0 before any fix, clocks years off). Monthly rather than weekly: history and event reads span
 * hours to weeks and prune to one or two months either way, while every lookup by id alone (a
 * position by id, the join from latest_positions) visits every partition, so fewer partitions keep
 * those cheap; a month of granularity is fine for dropping history kept in days plus a grace period.
 */
export interface PartitionedTable {
  table: 'positions' | 'events';
  /** The partition key. */
  key: 'fix_time' | 'event_time';
}

export const PARTITIONED_TABLES: readonly PartitionedTable[] = [
  { table: 'positions', key: 'fix_time' },
  { table: 'events', key: 'event_time' },
];

/** Months created ahead of the current one, so ingestion never waits for a partition. */
export const MONTHS_AHEAD = 2;

/** The first month that gets a partition of its own; anything older lives in the default partition. */
export const FIRST_PARTITIONED_MONTH = Date.UTC(2000, 0, 1);

export interface Partition {
  name: string;
  /** Inclusive lower bound, epoch ms. */
  from: number;
  /** Exclusive upper bound, epoch ms. */
  to: number;
}

/** The start of the UTC month holding `time`. */
export function monthStart(time: number): number {
  const date = new Date(time);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
}

/** The start of the UTC month after the one starting at (or holding) `time`. */
export function nextMonth(time: number): number {
  const date = new Date(time);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
}

export function partitionName(table: string, from: number): string {
  const date = new Date(from);
  return `${table}_${date.getUTCFullYear()}_${String(date.getUTCMonth() + 1).padStart(2, '0')}`;
}

export function defaultPartitionName(table: string): string {
  return `${table}_default`;
}

// Partition DDL waits at most this long for its lock, as ingestion queues behind a waiting DETACH; the next run tries again.
const LOCK_TIMEOUT = '500ms';
// pg_advisory_xact_lock key serialising partition DDL across instances ("tspart").
const PARTITION_DDL_LOCK = 0x7473_7061_7274;

/** Partition bookkeeping on PostgreSQL; only the tracking module's tables. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- partitions are not in the typed schema
export class PartitionRepository extends TableAccess<any> {
  /** The month partitions of the table (not the default one), oldest first. */
  async list(table: string): Promise<Partition[]> {
    const result = await sql<{ name: string; bound: string }>`
      select child.relname as name, pg_get_expr(child.relpartbound, child.oid) as bound
      from pg_inherits
      join pg_class parent on parent.oid = pg_inherits.inhparent
      join pg_class child on child.oid = pg_inherits.inhrelid
      where parent.relname = ${table} and parent.relnamespace = current_schema()::regnamespace`.execute(this.db);
    const partitions: Partition[] = [];
    for (const { name, bound } of result.rows) {
      const match = /FROM \('?(-?\d+)'?\) TO \('?(-?\d+)'?\)/.exec(bound);
      if (match) partitions.push({ name, from: Number(match[1]), to: Number(match[2]) });
    }
    return partitions.sort((a, b) => a.from - b.from);
  }

  /** Whether the table is partitioned (PostgreSQL after the partition migration). */
  async isPartitioned(table: string): Promise<boolean> {
    const result = await sql<{ count: number }>`
      select count(*)::int as count from pg_partitioned_table join pg_class on pg_class.oid = pg_partitioned_table.partrelid
      where pg_class.relname = ${table} and pg_class.relnamespace = current_schema()::regnamespace`.execute(this.db);
    return Number(result.rows[0]?.count) > 0;
  }

  /**
   * Creates the month partitions from the month holding `from` through the one holding `through`
   * that do not exist yet; answers the names created. Rows of those months waiting in the default
   * partition move into them. Each is built beside the table and then attached, which locks the
   * table only against other DDL, so ingestion goes on meanwhile.
   */
  async ensureMonths({ table, key }: PartitionedTable, from: number, through: number): Promise<string[]> {
    const existing = new Set((await this.list(table)).map((partition) => partition.from));
    const created: string[] = [];
    for (let month = monthStart(from); month <= through; month = nextMonth(month)) {
      if (existing.has(month)) continue;
      if (await this.createMonth({ table, key }, month)) created.push(partitionName(table, month));
    }
    return created;
  }

  private createMonth({ table, key }: PartitionedTable, month: number): Promise<boolean> {
    const name = partitionName(table, month);
    const to = nextMonth(month);
    return inTransaction(this.db, async (trx) => {
      await sql`select pg_advisory_xact_lock(${PARTITION_DDL_LOCK})`.execute(trx);
      // Another instance may have made it while this one waited for the lock.
      if ((await new PartitionRepository(trx).list(table)).some((partition) => partition.from === month)) return false;
      if (!this.db.isTransaction) await sql`set local lock_timeout = ${sql.lit(LOCK_TIMEOUT)}`.execute(trx);
      await sql`create table ${sql.id(name)} (like ${sql.id(table)})`.execute(trx);
      await sql`
        with moved as (delete from ${sql.id(defaultPartitionName(table))} where ${sql.id(key)} >= ${month} and ${sql.id(key)} < ${to} returning *)
        insert into ${sql.id(name)} select * from moved`.execute(trx);
      await sql`alter table ${sql.id(table)} attach partition ${sql.id(name)} for values from (${sql.lit(month)}) to (${sql.lit(to)})`.execute(trx);
      return true;
    });
  }

  /**
   * Drops a month partition of positions whose every row is past every owner's retention. Each
   * device's latest position in it is kept: it moves to the default partition first (detached, the
   * month is no longer covered), as retention never deletes a device's latest position.
   */
  dropPositions(partition: Partition): Promise<void> {
    return this.dropMonth('positions', partition, (trx) =>
      sql`insert into positions select p.* from ${sql.id(partition.name)} p join latest_positions l on l.position_id = p.id and l.fix_time = p.fix_time`.execute(trx),
    );
  }

  dropEvents(partition: Partition): Promise<void> {
    return this.dropMonth('events', partition);
  }

  private dropMonth(table: string, partition: Partition, keep?: (trx: Kysely<unknown>) => Promise<unknown>): Promise<void> {
    return inTransaction(this.db, async (trx) => {
      await sql`select pg_advisory_xact_lock(${PARTITION_DDL_LOCK})`.execute(trx);
      await sql`set local lock_timeout = ${sql.lit(LOCK_TIMEOUT)}`.execute(trx);
      await sql`alter table ${sql.id(table)} detach partition ${sql.id(partition.name)}`.execute(trx);
      if (keep) await keep(trx);
      await sql`drop table ${sql.id(partition.name)}`.execute(trx);
    });
  }
}

/** Runs the work in a transaction of its own, or in the one `db` already is (a migration's, whose lock timeout stays its own). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- partitions are not in the typed schema
function inTransaction<T>(db: Kysely<any>, work: (trx: Kysely<any>) => Promise<T>): Promise<T> {
  return db.isTransaction ? work(db) : db.transaction().execute(work);
}

/** `create table … partition of` the default partition (the migration, and nothing else, needs it). */
export function createDefaultPartition(table: string): RawBuilder<unknown> {
  return sql`create table ${sql.id(defaultPartitionName(table))} partition of ${sql.id(table)} default`;
}
