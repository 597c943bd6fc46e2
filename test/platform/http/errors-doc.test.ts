import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { before, describe, it } from 'node:test';
import { AppError, declareErrorCodes, ERROR_CODES, errorCodeOwner } from '../../../src/platform/http/errors.ts';
import type { ErrorCode, ErrorTables } from '../../../src/platform/http/errors.ts';

const root = path.resolve(import.meta.dirname, '../../..');
const servicesDir = path.join(root, 'src/services');
/** Every module's own table of codes, wherever the module is. */
const moduleTables = readdirSync(servicesDir)
  .map((module) => path.join(servicesDir, module, 'errors.ts'))
  .filter((file) => existsSync(file));

describe('error codes', () => {
  let loadedByServer: string[];
  before(async () => {
    await import('../../../src/server.ts');
    loadedByServer = Object.keys(ERROR_CODES);
    for (const file of moduleTables) await import(pathToFileURL(file).href);
  });

  it('every module table is loaded with the server, so each code answers with its status', () => {
    assert.deepEqual(Object.keys(ERROR_CODES), loadedByServer);
  });

  it('refuses a table that declares a code again, and declares none of its codes', () => {
    const table = { SOMETHING_NEW: [400, 'Something new'], NOT_FOUND: [410, 'Gone'] } as unknown as ErrorTables['platform'];
    assert.throws(() => declareErrorCodes('platform', table), /^Error: Error codes declared twice: NOT_FOUND \(by platform and platform\)$/);
    assert.deepEqual(ERROR_CODES.NOT_FOUND, [404, 'Not found']);
    assert.equal(Object.hasOwn(ERROR_CODES, 'SOMETHING_NEW'), false);
  });

  it('an AppError with a code no loaded table declares fails with the reason', () => {
    assert.throws(() => new AppError('NOT_DECLARED' as ErrorCode), /^Error: Error code NOT_DECLARED is not declared yet: import the errors.ts of the module that owns it$/);
  });

  it('docs/errors.md lists every code with its status in its owner\'s section, and no other code', () => {
    const doc = readFileSync(path.join(root, 'docs/errors.md'), 'utf8');
    const rows = new Map<string, { status: number; owner: string }>();
    let owner = '';
    for (const line of doc.split('\n')) {
      // "## Auth: social login" is auth's
      if (line.startsWith('## ')) owner = line.slice(3).split(':')[0]!.toLowerCase();
      const row = /^\| `([A-Z0-9_]+)` \| (\d+) \|/.exec(line);
      if (row) rows.set(row[1]!, { status: Number(row[2]), owner });
    }
    for (const [code, [status]] of Object.entries(ERROR_CODES)) {
      assert.deepEqual(rows.get(code), { status, owner: errorCodeOwner(code) }, code);
    }
    assert.deepEqual([...rows.keys()].filter((code) => !Object.hasOwn(ERROR_CODES, code)), []);
  });
});
