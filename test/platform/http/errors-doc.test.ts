import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ERROR_CODES } from '../../../src/platform/http/errors.ts';

describe('docs/errors.md', () => {
  it('lists every error code with its status', () => {
    const doc = readFileSync(path.resolve(import.meta.dirname, '../../../docs/errors.md'), 'utf8');
    for (const [code, [status]] of Object.entries(ERROR_CODES)) {
      assert.match(doc, new RegExp(`\\| \`${code}\` \\| ${status} \\|`), code);
    }
  });
});
