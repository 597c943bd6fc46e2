import { Migrator } from 'kysely/migration';
import type { CreateTableBuilder } from 'kysely';
import type { Migration } from 'kysely/migration';
import { platformMigrations } from '../outbox/migrations.ts';
import type { Database, Engine } from './database.ts';

export type { Migration };

/** The migrations of one module, applied in key order under that module's own bookkeeping table. */
export interface ModuleMigrations {
  module: string;
  migrations: Record<string, Migration>;
}

/** Applies the platform's migrations, then those of `modules` in order. */
export async function migrateModules(database: Database, modules: ModuleMigrations[]): Promise<string[]> {
  const applied: string[] = [];
  for (const { module, migrations } of [platformMigrations, ...modules]) {
    const migrator = new Migrator({
      db: database.db,
      provider: { getMigrations: async () => migrations },
      migrationTableName: `${module}_migrations`,
      migrationLockTableName: `${module}_migrations_lock`,
    });
    const { error, results } = await migrator.migrateToLatest();
    if (error) throw error instanceof Error ? error : new Error(`migration of ${module} failed: ${String(error)}`);
    for (const result of results ?? []) {
      if (result.status === 'Success') applied.push(`${module}/${result.migrationName}`);
    }
  }
  return applied;
}

/** Migrations are written once for both engines; these helpers cover the few places they differ. */
export { engineOf } from './database.ts';

/** An auto-incrementing 64-bit primary key that is never reused after a delete. */
export function withIdColumn<T extends string>(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any table
  table: CreateTableBuilder<T, any>,
  engine: Engine,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any table
): CreateTableBuilder<T, any> {
  return engine === 'postgres'
    ? table.addColumn('id', 'bigint', (col) => col.primaryKey().generatedByDefaultAsIdentity())
    : table.addColumn('id', 'integer', (col) => col.primaryKey().autoIncrement());
}

/** Timestamps are epoch milliseconds in an int8 column on both engines. */
export const timestamp = 'bigint' as const;
