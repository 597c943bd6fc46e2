import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { CsvError, formatCsvRow, parseCsv } from '../../../../src/services/devices/claim-tokens/csv.ts';

describe('claim token CSV', () => {
  it('parses plain, quoted and empty fields, LF and CRLF, a BOM, and skips blank lines', () => {
    const text = '\uFEFFuniqueId,modelCode,modelName\r\n123,PT-1,"Pet, ""Mini"""\n\n,PT-2,\n"multi\nline",X,y';
    assert.deepEqual(parseCsv(text), [
      { line: 1, fields: ['uniqueId', 'modelCode', 'modelName'] },
      { line: 2, fields: ['123', 'PT-1', 'Pet, "Mini"'] },
      { line: 4, fields: ['', 'PT-2', ''] },
      { line: 5, fields: ['multi\nline', 'X', 'y'] },
    ]);
  });

  it('reports malformed quoting with its line', () => {
    assert.throws(() => parseCsv('a,b\n"open,c'), (error: unknown) => error instanceof CsvError && error.line === 2);
    assert.throws(() => parseCsv('a,b"c'), CsvError);
    assert.throws(() => parseCsv('"a"b,c'), CsvError);
  });

  it('reads back every row it writes', () => {
    const field = fc.string({ maxLength: 12 });
    fc.assert(
      fc.property(fc.array(fc.array(field, { minLength: 2, maxLength: 4 }), { minLength: 1, maxLength: 5 }), (rows) => {
        const parsed = parseCsv(rows.map(formatCsvRow).join(''));
        assert.deepEqual(
          parsed.map((record) => record.fields),
          rows,
        );
      }),
    );
  });

  it('writes null as an empty field and quotes only when needed', () => {
    assert.equal(formatCsvRow(['a', null, 3, 'b,c', ' d', 'e"f']), 'a,,3,"b,c"," d","e""f"\r\n');
  });
});
