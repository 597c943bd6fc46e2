import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import SqliteDatabase from 'better-sqlite3';
import { sql } from 'kysely';
import { openDatabase } from '../../../src/platform/db/database.ts';
import { lockKey } from '../../../src/platform/db/locks.ts';
import { describeEachEngine } from '../../support/engines.ts';
import type { TestDatabase } from '../../support/engines.ts';

describeEachEngine('lockKey', (engine) => {
  let testDatabase: TestDatabase;
  before(async () => {
    testDatabase = await engine.createDatabase();
  });
  after(() => testDatabase.dispose());

  it('refuses to run outside a transaction, where it would hold nothing', async () => {
    await assert.rejects(lockKey(testDatabase.database.db, 'test.outside', 1), /needs a transaction/);
  });

  it('makes transactions on one key run one after another, and leaves other keys and namespaces alone', async () => {
    const db = testDatabase.database.db;
    const order: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const holding = new Promise<void>((resolve) => (locked = resolve));
    const first = db.transaction().execute(async (trx) => {
      await lockKey(trx, 'test.serial', 7);
      order.push('first locked');
      locked();
      await held;
      order.push('first done');
    });
    await holding;
    // SQLite runs one transaction at a time on its one connection: the others wait for the first as a whole.
    const same = db.transaction().execute(async (trx) => {
      await lockKey(trx, 'test.serial', 7);
      order.push('same key');
    });
    const otherKey = db.transaction().execute(async (trx) => {
      await lockKey(trx, 'test.serial', 8);
      order.push('other key');
    });
    const otherNamespace = db.transaction().execute(async (trx) => {
      await lockKey(trx, 'test.other', 7);
      order.push('other namespace');
    });
    if (engine.name === 'postgres') await Promise.all([otherKey, otherNamespace]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    release();
    await Promise.all([first, same, otherKey, otherNamespace]);
    assert.ok(order.indexOf('same key') > order.indexOf('first done'), order.join(', '));
    if (engine.name === 'postgres') {
      assert.ok(order.indexOf('other key') < order.indexOf('first done'), order.join(', '));
      assert.ok(order.indexOf('other namespace') < order.indexOf('first done'), order.join(', '));
    }
  });
});

describe('SQLite transactions', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'trackstack-locks-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('begin IMMEDIATE: a transaction that has only read already holds the write lock another process would wait for', async () => {
    const file = path.join(dir, 'immediate.db');
    const database = openDatabase({ engine: 'sqlite', file });
    const other = new SqliteDatabase(file);
    try {
      other.pragma('busy_timeout = 0');
      await database.db.transaction().execute(async (trx) => {
        await sql`select count(*) from sqlite_master`.execute(trx);
        assert.throws(() => other.exec('begin immediate'), { code: 'SQLITE_BUSY' });
      });
      other.exec('begin immediate');
      other.exec('rollback');
    } finally {
      other.close();
      await database.close();
    }
  });
});
