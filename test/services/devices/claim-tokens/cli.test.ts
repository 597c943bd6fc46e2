import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { promisify } from 'node:util';
import QRCode from 'qrcode';
import { loadConfig } from '../../../../src/config.ts';
import type { Config } from '../../../../src/config.ts';
import { openDatabase } from '../../../../src/platform/db/database.ts';
import type { Database } from '../../../../src/platform/db/database.ts';
import { QR_OPTIONS } from '../../../../src/services/devices/claim-tokens/bulk.ts';
import { runClaimTokensCommand } from '../../../../src/services/devices/claim-tokens/cli.ts';
import { parseCsv } from '../../../../src/services/devices/claim-tokens/csv.ts';
import { describeEachEngine } from '../../../support/engines.ts';
import type { TestDatabase } from '../../../support/engines.ts';

const GROUPED = /^[23456789ABCDEFGHJKLMNPQRSTUVWXYZ]{4}-[23456789ABCDEFGHJKLMNPQRSTUVWXYZ]{4}-[23456789ABCDEFGHJKLMNPQRSTUVWXYZ]{4}$/;

interface Run {
  code: number;
  out: string;
  error: string;
}

describeEachEngine('claim-tokens CLI', (engine) => {
  let directory: string;
  let config: Config;
  let testDatabase: TestDatabase | undefined;
  let database: Database;
  let url: string;

  before(async () => {
    directory = mkdtempSync(path.join(tmpdir(), 'trackstack-claim-cli-'));
    if (engine.name === 'sqlite') {
      // The command opens its own connection, so the database must be a file both can reach.
      url = `sqlite:${path.join(directory, 'cli.db')}`;
    } else {
      testDatabase = await engine.createDatabase();
      url = testDatabase.url;
    }
    config = loadConfig({ DATA_DIR: directory, DATABASE_URL: url, LOG_LEVEL: 'silent' });
    assert.equal((await run(['import', write('seed.csv', 'modelCode\nSEED\n')])).code, 0, 'creates the tables');
    database = testDatabase?.database ?? openDatabase(config.database);
  });
  after(async () => {
    if (testDatabase) await testDatabase.dispose();
    else await database.close();
    rmSync(directory, { recursive: true, force: true });
  });

  async function run(args: string[]): Promise<Run> {
    let out = '';
    let error = '';
    const code = await runClaimTokensCommand(args, config, { out: (text) => (out += text), error: (text) => (error += text) });
    return { code, out, error };
  }

  function write(name: string, content: string): string {
    const file = path.join(directory, name);
    writeFileSync(file, content);
    return file;
  }

  const storedTokens = () => database.db.selectFrom('claim_tokens').selectAll().orderBy('token').execute();

  it('imports every row and prints the new tokens as CSV, in the order of the file', async () => {
    const before = (await storedTokens()).length;
    const result = await run(['import', write('with-header.csv', 'modelName,uniqueId,modelCode\r\nPet Tracker Mini,IMEI-0001,PT-1\n,IMEI-0002,PT-2\n"Tracker, Large",,PT-3\n')]);
    assert.equal(result.code, 0, result.error);
    assert.match(result.error, /Imported 3 claim token\(s\)/);
    const [header, ...rows] = parseCsv(result.out).map((record) => record.fields);
    assert.deepEqual(header, ['token', 'uniqueId', 'modelCode', 'model']);
    assert.deepEqual(
      rows.map(([, uniqueId, modelCode, model]) => [uniqueId, modelCode, model]),
      [
        ['IMEI-0001', 'PT-1', 'Pet Tracker Mini'],
        ['IMEI-0002', 'PT-2', 'PT-2'],
        ['', 'PT-3', 'Tracker, Large'],
      ],
    );
    for (const [token] of rows) assert.match(token as string, GROUPED);
    const stored = await storedTokens();
    assert.equal(stored.length, before + 3);
    const third = stored.find((row) => row.token === (rows[2]![0] as string).replace(/-/g, ''));
    assert.deepEqual(
      [third?.unique_id, third?.model_code, third?.model_name, third?.status],
      [null, 'PT-3', 'Tracker, Large', 'unclaimed'],
    );
  });

  it('refuses rows naming a uniqueId a device has, naming the line, unless --transfer', async () => {
    const now = Date.now();
    await database.db
      .insertInto('devices')
      .values({ name: 'Owned', unique_id: 'IMEI-OWNED-1', status: 'offline', disabled: 0, attributes: '{}', owner_id: 42, created_at: now, updated_at: now })
      .execute();
    const before = await storedTokens();
    const file = write('owned.csv', 'uniqueId,modelCode\nIMEI-FREE-1,PT-1\nIMEI-OWNED-1,PT-1\n');
    const refused = await run(['import', file]);
    assert.equal(refused.code, 1);
    assert.match(refused.error, /line 3: uniqueId is registered to a device already/);
    assert.deepEqual(await storedTokens(), before);
    const transferred = await run(['import', file, '--transfer']);
    assert.equal(transferred.code, 0, transferred.error);
    assert.equal((await storedTokens()).length, before.length + 2);
  });

  it('imports a file without a header by position', async () => {
    const result = await run(['import', write('positional.csv', 'IMEI-0100,PT-1,Mini\nIMEI-0101,PT-1\n')]);
    assert.equal(result.code, 0, result.error);
    const rows = parseCsv(result.out).slice(1);
    assert.deepEqual(
      rows.map((record) => record.fields.slice(1)),
      [
        ['IMEI-0100', 'PT-1', 'Mini'],
        ['IMEI-0101', 'PT-1', 'PT-1'],
      ],
    );
  });

  it('refuses a file with any bad row, naming each line, and imports nothing', async () => {
    const before = await storedTokens();
    const cases: [string, RegExp][] = [
      ['uniqueId,modelCode,modelName\nIMEI-0200,PT-1,A\nIMEI-0201,,B\n', /line 3: modelCode is required/],
      ['uniqueId,modelCode,modelName\nIMEI 0202,PT-1,A\n', /line 2: uniqueId must be printable ASCII without spaces/],
      ['uniqueId,modelCode,modelName\nIMEI-0203,PT-1,A,extra\n', /line 2: 4 fields, expected at most 3/],
      [`uniqueId,modelCode,modelName\n${'U'.repeat(129)},PT-1,A\n`, /line 2: uniqueId is longer than 128 characters/],
      ['uniqueId,modelCode,modelName\nIMEI-0204,PT-1,A\nIMEI-0204,PT-1,B\n', /line 3: uniqueId repeats/],
      ['uniqueId,modelCode,modelName\nIMEI-0205,PT-1,A\nIMEI-0001,PT-1,B\n', /line 3: uniqueId already has a live claim token/],
      ['serial,modelCode\nX,Y\n', /unknown column\(s\) serial/],
      ['uniqueId,modelCode,modelName\n', /holds no rows/],
      ['uniqueId,modelCode\n"IMEI-0206,PT-1\n', /not closed/],
    ];
    for (const [content, problem] of cases) {
      const result = await run(['import', write('bad.csv', content)]);
      assert.equal(result.code, 1, content);
      assert.match(result.error, problem, content);
      assert.equal(result.out, '');
    }
    assert.deepEqual(await storedTokens(), before);
  });

  it('exports a CSV and one QR code per token holding the printed token, by status', async () => {
    const imported = await run(['import', write('export.csv', 'uniqueId,modelCode\nIMEI-0300,PT-7\nIMEI-0301,PT-7\n')]);
    const tokens = parseCsv(imported.out)
      .slice(1)
      .map((record) => record.fields[0] as string);
    const revoked = tokens[1] as string;
    await database.db.updateTable('claim_tokens').set({ status: 'revoked' }).where('token', '=', revoked.replace(/-/g, '')).execute();

    const target = path.join(directory, 'export-unclaimed');
    const result = await run(['export', target, '--status', 'unclaimed']);
    assert.equal(result.code, 0, result.error);
    const [header, ...rows] = parseCsv(readFileSync(path.join(target, 'claim-tokens.csv'), 'utf8')).map((record) => record.fields);
    assert.deepEqual(header, ['token', 'uniqueId', 'modelCode', 'model', 'status', 'claimedAt', 'createdAt']);
    const exported = rows.map((row) => row[0] as string);
    assert.ok(exported.includes(tokens[0] as string));
    assert.ok(!exported.includes(revoked), 'only the status asked for');
    assert.ok(rows.every((row) => row[4] === 'unclaimed'));
    assert.match(result.error, new RegExp(`Exported ${rows.length} claim token`));
    const pngs = readdirSync(target).filter((name) => name.endsWith('.png'));
    assert.deepEqual(pngs.sort(), exported.map((token) => `${token}.png`).sort());
    const png = readFileSync(path.join(target, `${tokens[0]}.png`));
    assert.deepEqual(png.subarray(0, 8), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    assert.deepEqual(png, await QRCode.toBuffer(tokens[0] as string, QR_OPTIONS), 'the QR code holds the printed token');

    const everything = path.join(directory, 'export-all');
    assert.equal((await run(['export', everything])).code, 0);
    assert.ok(readdirSync(everything).includes(`${revoked}.png`));
  });

  it('imports a large file in one transaction, with distinct tokens', async () => {
    const lines = ['uniqueId,modelCode'];
    for (let index = 0; index < 1200; index++) lines.push(`BULK-${String(index).padStart(5, '0')},PT-B`);
    const result = await run(['import', write('bulk.csv', lines.join('\n'))]);
    assert.equal(result.code, 0, result.error);
    const tokens = parseCsv(result.out)
      .slice(1)
      .map((record) => record.fields[0]);
    assert.equal(new Set(tokens).size, 1200);
    const stored = await database.db.selectFrom('claim_tokens').select('token').where('model_code', '=', 'PT-B').execute();
    assert.equal(stored.length, 1200);
  });

  it('runs as npm run cli -- claim-tokens import', async () => {
    const file = write('main.csv', 'uniqueId,modelCode\nMAIN-0001,PT-M\n');
    const main = path.resolve(import.meta.dirname, '../../../../src/cli/main.ts');
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [main, 'claim-tokens', 'import', file], {
      cwd: directory,
      env: { ...process.env, DATA_DIR: directory, DATABASE_URL: url, LOG_LEVEL: 'silent' },
    });
    assert.match(stdout, /^token,uniqueId,modelCode,model\r\n[2-9A-Z]{4}-[2-9A-Z]{4}-[2-9A-Z]{4},MAIN-0001,PT-M,PT-M\r\n$/);
    assert.match(stderr, /Imported 1 claim token/);
  });

  it('prints usage and fails for a wrong command line, or a file that is not there', async () => {
    for (const args of [[], ['import'], ['export'], ['frobnicate', 'x'], ['import', 'a.csv', 'b.csv'], ['export', 'dir', '--status', 'lost'], ['import', 'a.csv', '--status', 'claimed'], ['export', 'dir', '--colour']]) {
      const result = await run(args);
      assert.equal(result.code, 1, args.join(' '));
      assert.match(result.error, /claim-tokens import <file\.csv>/, args.join(' '));
    }
    const missing = await run(['import', path.join(directory, 'missing.csv')]);
    assert.equal(missing.code, 1);
    assert.match(missing.error, /ENOENT/);
  });
});
