// Every row of every module table, read through the test server's database handle, to tell whether a request
// changed anything. The migration bookkeeping tables are left out: no request writes them.
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { Database } from '../../src/platform/db/database.ts';

/** A digest of each table's rows, cheap enough to take after every request. */
export type Digests = ReadonlyMap<string, string>;
/** Each table's rows as text, taken when the state is settled, to show what a request changed. */
export type Rows = ReadonlyMap<string, readonly string[]>;

export async function tableNames(database: Database): Promise<string[]> {
  const query = database.engine === 'postgres'
    ? sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`
    : sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`;
  const { rows } = await query.execute(database.db);
  return rows.map((row) => row.name).filter((name) => !/_migrations(_lock)?$/.test(name)).sort();
}

export async function digests(database: Database, tables: readonly string[]): Promise<Digests> {
  if (database.engine === 'sqlite') {
    const contents = await rows(database, tables);
    return new Map([...contents].map(([table, lines]) => [table, createHash('sha256').update(lines.join('\n')).digest('hex')]));
  }
  // PostgreSQL hashes every table in one round trip.
  const perTable = tables.map((table) => sql`select ${table} as name, md5(coalesce(string_agg(t::text, chr(10) order by t::text), '')) as digest from ${sql.table(table)} t`);
  const { rows: result } = await sql<{ name: string; digest: string }>`${sql.join(perTable, sql` union all `)}`.execute(database.db);
  return new Map(result.map((row) => [row.name, row.digest]));
}

export async function rows(database: Database, tables: readonly string[]): Promise<Rows> {
  const contents = await Promise.all(tables.map(async (table) => {
    const { rows: result } = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(database.db);
    const lines = result.map((row) => JSON.stringify(row, (_key, value: unknown) => (typeof value === 'bigint' ? String(value) : value))).sort();
    return [table, lines] as const;
  }));
  return new Map(contents);
}

export function sameDigests(before: Digests, after: Digests): boolean {
  return before.size === after.size && [...after].every(([table, digest]) => before.get(table) === digest);
}

/** The tables whose rows differ, with the rows that went and came (a few of each). */
export function differences(before: Rows, after: Rows): string[] {
  const changed: string[] = [];
  for (const [table, now] of after) {
    const old = new Set(before.get(table) ?? []);
    const current = new Set(now);
    const gone = [...old].filter((row) => !current.has(row));
    const added = now.filter((row) => !old.has(row));
    if (gone.length === 0 && added.length === 0) continue;
    const sample = (sign: string, lines: string[]) => [`${sign}${lines.length}`, ...lines.slice(0, 2).map((line) => line.slice(0, 300))].join(' ');
    changed.push(`${table}: ${sample('-', gone)} ${sample('+', added)}`);
  }
  return changed;
}
