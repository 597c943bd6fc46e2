import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../../../src/platform/db/database.ts';
import { migrateModules } from '../../../src/platform/db/migrations.ts';
import { SERVICE_NAMES } from '../../../src/config.ts';
import { MODULE_MIGRATIONS } from '../../../src/modules.ts';
import { describeEachEngine } from '../../support/engines.ts';
import type { TestDatabase } from '../../support/engines.ts';

const ALL = SERVICE_NAMES.map((name) => MODULE_MIGRATIONS[name]);

describeEachEngine('migrations', (engine) => {
  let testDatabase: TestDatabase;
  before(async () => {
    testDatabase = await engine.createDatabase();
  });
  after(() => testDatabase.dispose());

  it('apply every module once and are idempotent', async () => {
    const first = await migrateModules(testDatabase.database, ALL);
    assert.ok(first.includes('auth/0001-sessions'));
    assert.deepEqual(await migrateModules(testDatabase.database, ALL), []);
  });

  it('give each module its own bookkeeping table', async () => {
    const rows = await sql<{ name: string }>`select name from auth_migrations order by name`.execute(testDatabase.database.db);
    assert.ok(rows.rows.some((row) => row.name === '0001-sessions'));
  });

  it('report a reachable database', async () => {
    assert.equal(await testDatabase.database.ping(), true);
  });
});

describe('SQLite file databases', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'trackstack-db-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('use WAL and foreign keys, and leave waiting for a lock to the driver, creating the folder', async () => {
    const database = openDatabase({ engine: 'sqlite', file: path.join(dir, 'nested', 'x.db') });
    try {
      const db = database.db;
      assert.equal((await sql<{ journal_mode: string }>`pragma journal_mode`.execute(db)).rows[0]?.journal_mode, 'wal');
      assert.equal((await sql<{ foreign_keys: number }>`pragma foreign_keys`.execute(db)).rows[0]?.foreign_keys, 1);
      assert.equal((await sql<{ timeout: number }>`pragma busy_timeout`.execute(db)).rows[0]?.timeout, 0);
    } finally {
      await database.close();
    }
  });

  it('wait for another connection of the same process without blocking it: a write lock held across an await is released, then the waiter writes', async () => {
    const file = path.join(dir, 'two-connections.db');
    const first = openDatabase({ engine: 'sqlite', file });
    const second = openDatabase({ engine: 'sqlite', file });
    try {
      await sql`create table marks (who text not null)`.execute(first.db);
      let released = false;
      const holder = first.db.transaction().execute(async (trx) => {
        await sql`insert into marks (who) values ('first')`.execute(trx);
        await sleep(300);
        released = true;
      });
      await sleep(20);
      const waiterStarted = Date.now();
      await sql`insert into marks (who) values ('second')`.execute(second.db);
      assert.ok(released, 'the second connection wrote only after the first released its lock');
      assert.ok(Date.now() - waiterStarted < 4000, 'the waiter did not run into the busy timeout');
      await holder;
      const rows = await sql<{ who: string }>`select who from marks order by rowid`.execute(second.db);
      assert.deepEqual(rows.rows.map((row) => row.who), ['first', 'second']);
    } finally {
      await first.close();
      await second.close();
    }
  });
});

describe('PostgreSQL that cannot be reached', () => {
  it('answers ping false instead of throwing', async () => {
    const database = openDatabase({ engine: 'postgres', url: 'postgres://postgres@127.0.0.1:1/nowhere' });
    try {
      assert.equal(await database.ping(1000), false);
    } finally {
      await database.close();
    }
  });
});
