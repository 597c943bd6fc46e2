// `npm run cli -- reports rebuild`: recomputes trips, stops and hours from the positions of a database it opens itself;
// bad arguments change nothing. (That a rebuild equals live segmentation is shown in segmentation.test.ts.)
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, it } from 'node:test';
import type { Kysely } from 'kysely';
import { SERVICE_NAMES, loadConfig } from '../../../../src/config.ts';
import type { Config } from '../../../../src/config.ts';
import { MODULE_MIGRATIONS } from '../../../../src/modules.ts';
import { openDatabase } from '../../../../src/platform/db/database.ts';
import type { Database } from '../../../../src/platform/db/database.ts';
import { migrateModules } from '../../../../src/platform/db/migrations.ts';
import { localDeviceAttributes } from '../../../../src/services/devices/module.ts';
import { PositionRepository } from '../../../../src/services/tracking/positions/repository.ts';
import { runReportsCommand } from '../../../../src/services/tracking/reports/segmentation/cli.ts';
import type { TrackingTables } from '../../../../src/services/tracking/tables.ts';
import { describeEachEngine } from '../../../support/engines.ts';
import type { TestDatabase } from '../../../support/engines.ts';
import { storedRow } from '../../../factories/position.ts';
import { position } from '../../../factories/position.ts';

const DEVICE = 5;
const MINUTE = 60_000;

describeEachEngine('reports rebuild CLI', (engine) => {
  let directory: string;
  let config: Config;
  let testDatabase: TestDatabase | undefined;
  let database: Database;
  let db: Kysely<TrackingTables>;

  before(async () => {
    directory = mkdtempSync(path.join(tmpdir(), 'trackstack-reports-cli-'));
    testDatabase = engine.name === 'postgres' ? await engine.createDatabase() : undefined;
    // The command opens its own connection: SQLite must be a file both reach.
    const url = testDatabase?.url ?? `sqlite:${path.join(directory, 'cli.db')}`;
    config = loadConfig({ DATA_DIR: directory, DATABASE_URL: url, LOG_LEVEL: 'silent' });
    database = testDatabase?.database ?? openDatabase(config.database);
    await migrateModules(database, SERVICE_NAMES.map((name) => MODULE_MIGRATIONS[name]));
    db = database.db as Kysely<TrackingTables>;
    // Parked, a 10-minute drive of 6 km, parked again.
    const speeds = [0, 0, ...Array.from({ length: 10 }, () => 20), 0, 0, 0, 0, 0, 0, 0, 0];
    const rows = speeds.map((speed, minute) => {
      const { id: _id, ...row } = storedRow(position(DEVICE, minute * MINUTE, { speed, latitude: 52 + Math.min(Math.max(minute - 1, 0), 11) * 0.005 }));
      return row;
    });
    const ids = await new PositionRepository(db).insertMany(rows);
    await new PositionRepository(db).advanceLatest([{ device_id: DEVICE, position_id: ids.at(-1) as number, fix_time: rows.at(-1)!.fix_time }]);
  });
  after(async () => {
    if (testDatabase) await testDatabase.dispose();
    else await database.close();
    rmSync(directory, { recursive: true, force: true });
  });

  async function run(args: string[], tty = false) {
    let out = '';
    let error = '';
    const code = await runReportsCommand(args, config, localDeviceAttributes, { out: (text) => (out += text), error: (text) => (error += text), tty });
    return { code, out, error };
  }
  const rows = async () => ({
    trips: (await db.selectFrom('trips').selectAll().orderBy('start_time').execute()).map(({ id: _id, ...row }) => row),
    stops: (await db.selectFrom('stops').selectAll().orderBy('start_time').execute()).map(({ id: _id, ...row }) => row),
    hours: await db.selectFrom('summary_hours').selectAll().orderBy('hour_start').execute(),
  });

  it('rebuilds every device with positions, drawing a progress bar on a terminal', async () => {
    const result = await run(['rebuild'], true);
    assert.equal(result.code, 0, result.error);
    assert.match(result.out, /^Rebuilt 1 device\(s\) from 20 position\(s\)/);
    assert.match(result.error, /\[#+\] 1\/1 devices, 20 positions/);
    const { trips, stops } = await rows();
    assert.equal(trips.length, 1);
    assert.equal(stops.length, 2);
    assert.deepEqual([trips[0]?.ongoing, stops[1]?.ongoing], [0, 1]);
  });

  it('one device from a time gives the same rows; without a terminal, no progress bar', async () => {
    const before = await rows();
    const from = new Date(Number(before.trips[0]?.start_time) + 5 * MINUTE).toISOString();
    const result = await run(['rebuild', '--device', String(DEVICE), '--from', from]);
    assert.equal(result.code, 0, result.error);
    assert.equal(result.error, '');
    assert.deepEqual(await rows(), before);
    assert.equal((await run(['rebuild', '--from', '2000-01-01T00:00:00Z', '--to', '2000-01-02T00:00:00Z'])).out.slice(0, 19), 'Rebuilt 0 device(s)');
  });

  it('refuses bad arguments and changes nothing', async () => {
    const before = await rows();
    for (const args of [['rebuild', '--device', 'x'], ['rebuild', '--from', 'yesterday'], ['rebuild', '--from', '2025-03-02T00:00:00Z', '--to', '2025-03-01T00:00:00Z'], ['compact'], ['rebuild', '--fast']]) {
      const result = await run(args);
      assert.equal(result.code, 1, args.join(' '));
      assert.match(result.error, /Usage:/);
    }
    assert.deepEqual(await rows(), before);
  });
});
