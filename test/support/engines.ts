import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe } from 'node:test';
import pg from 'pg';
import { openDatabase } from '../../src/platform/db/database.ts';
import type { Database, Engine } from '../../src/platform/db/database.ts';

export interface TestDatabase {
  database: Database;
  /** A DATABASE_URL that reaches the same database (for child processes). */
  url: string;
  /** Closes the handle and removes the database. */
  dispose(): Promise<void>;
}

export interface TestEngine {
  name: Engine;
  createDatabase(): Promise<TestDatabase>;
}

const sqlite: TestEngine = {
  name: 'sqlite',
  async createDatabase() {
    const database = openDatabase({ engine: 'sqlite', file: ':memory:' });
    return { database, url: 'sqlite::memory:', dispose: () => database.close() };
  },
};

/** A fresh PostgreSQL database per call, created beside TEST_DATABASE_URL's and dropped afterwards. */
function postgres(adminUrl: string): TestEngine {
  return {
    name: 'postgres',
    async createDatabase() {
      const name = `trackstack_test_${randomBytes(6).toString('hex')}`;
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      try {
        await admin.query(`create database ${name}`);
      } finally {
        await admin.end();
      }
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      const database = openDatabase({ engine: 'postgres', url: url.toString() });
      return {
        database,
        url: url.toString(),
        async dispose() {
          await database.close();
          const dropper = new pg.Client({ connectionString: adminUrl });
          await dropper.connect();
          try {
            await dropper.query(`drop database if exists ${name} with (force)`);
          } finally {
            await dropper.end();
          }
        },
      };
    },
  };
}

/** SQLite always; PostgreSQL too when TEST_DATABASE_URL is set. */
export function testEngines(): TestEngine[] {
  const url = process.env.TEST_DATABASE_URL;
  return url ? [sqlite, postgres(url)] : [sqlite];
}

/** Runs the same suite once per engine, like Kysely's own tests. */
export function describeEachEngine(title: string, suite: (engine: TestEngine) => void): void {
  for (const engine of testEngines()) describe(`${title} [${engine.name}]`, () => suite(engine));
}

/** A database that several servers or processes open by URL, and a data folder they share. */
export interface SharedTestDatabase {
  dataDir: string;
  /** DATABASE_URL: a SQLite file in `dataDir`, or a fresh PostgreSQL database. */
  url: string;
  /** Removes the database and the folder. */
  dispose(): Promise<void>;
}

export async function createSharedDatabase(engine: TestEngine, folderPrefix: string): Promise<SharedTestDatabase> {
  const dataDir = mkdtempSync(path.join(tmpdir(), folderPrefix));
  const postgresDatabase = engine.name === 'postgres' ? await engine.createDatabase() : undefined;
  return {
    dataDir,
    url: postgresDatabase?.url ?? `sqlite:${path.join(dataDir, 'shared.db')}`,
    async dispose() {
      await postgresDatabase?.dispose();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
