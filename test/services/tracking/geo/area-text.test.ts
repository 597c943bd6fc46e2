import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { AreaError } from '../../../../src/services/tracking/geo/area.ts';
import type { Area } from '../../../../src/services/tracking/geo/area.ts';
import {
  MAX_AREA_POINTS,
  MAX_AREA_TEXT_LENGTH,
  formatArea,
  parseArea,
} from '../../../../src/services/tracking/geo/area-text.ts';
import { anyArea } from './geo-arbitraries.ts';

function assertAreaError(text: string, ...fragments: string[]): void {
  assert.throws(
    () => parseArea(text),
    (error: unknown) => {
      assert.ok(error instanceof AreaError, `expected AreaError, got ${String(error)}`);
      for (const fragment of fragments) {
        assert.ok(error.message.includes(fragment), `"${error.message}" lacks "${fragment}"`);
      }
      return true;
    },
  );
}

/** Parses or throws AreaError; anything else fails the property. */
function parseOrAreaError(text: string): Area | undefined {
  try {
    return parseArea(text);
  } catch (error) {
    if (error instanceof AreaError) return undefined;
    throw error;
  }
}

describe('parseArea: valid text', () => {
  it('reads a circle', () => {
    assert.deepEqual(parseArea('CIRCLE (52.52 13.405, 150)'), {
      kind: 'circle',
      center: { lat: 52.52, lon: 13.405 },
      radius: 150,
    });
  });

  it('reads a polygon', () => {
    assert.deepEqual(parseArea('POLYGON ((0 0, 0 1, 1 1, 0 0))'), {
      kind: 'polygon',
      points: [
        { lat: 0, lon: 0 },
        { lat: 0, lon: 1 },
        { lat: 1, lon: 1 },
        { lat: 0, lon: 0 },
      ],
    });
  });

  it('reads a linestring', () => {
    assert.deepEqual(parseArea('LINESTRING (10 20, 10.5 -20.25)'), {
      kind: 'linestring',
      points: [
        { lat: 10, lon: 20 },
        { lat: 10.5, lon: -20.25 },
      ],
    });
  });

  it('accepts keywords in any case and free whitespace', () => {
    const expected = parseArea('CIRCLE (1 2, 3)');
    for (const text of ['circle (1 2, 3)', 'Circle(1 2,3)', '  cIrClE\t(\n1 \t 2 ,\r\n3 )  ', 'CIRCLE(1\u00a02,3)']) {
      assert.deepEqual(parseArea(text), expected, text);
    }
    assert.deepEqual(parseArea('polygon((0 0,0 1,1 1,0 0))'), parseArea('POLYGON ((0 0, 0 1, 1 1, 0 0))'));
    assert.deepEqual(parseArea('linestring( 1 2 ,3 4 )'), parseArea('LINESTRING (1 2, 3 4)'));
  });

  it('accepts signs, exponents and bare decimal points', () => {
    assert.deepEqual(parseArea('CIRCLE (-1.5e1 +2.25, .5E+3)'), {
      kind: 'circle',
      center: { lat: -15, lon: 2.25 },
      radius: 500,
    });
    assert.deepEqual(parseArea('CIRCLE (1. -0.1e-2, 1e-7)'), {
      kind: 'circle',
      center: { lat: 1, lon: -0.001 },
      radius: 1e-7,
    });
  });

  it('accepts the exact coordinate limits', () => {
    assert.deepEqual(parseArea('LINESTRING (-90 -180, 90 180)').kind, 'linestring');
  });

  it('reads -0 as 0, so that the value survives formatting', () => {
    const area = parseArea('CIRCLE (-0 -0.0, 1)');
    assert.ok(area.kind === 'circle' && Object.is(area.center.lat, 0) && Object.is(area.center.lon, 0));
  });

  it(`accepts ${MAX_AREA_POINTS} points`, () => {
    const points = Array.from({ length: MAX_AREA_POINTS }, (_, i) => `0 ${i % 100}`);
    const area = parseArea(`LINESTRING (${points.join(',')})`);
    assert.equal(area.kind === 'linestring' && area.points.length, MAX_AREA_POINTS);
  });
});

describe('parseArea: errors', () => {
  it('rejects empty and blank text', () => {
    assertAreaError('', 'area text is empty');
    assertAreaError(' \n\t ', 'area text is empty');
  });

  it('rejects a non-string', () => {
    assertAreaError(42 as unknown as string, 'must be a string');
  });

  it('rejects an unknown kind', () => {
    assertAreaError('SQUARE (1 2, 3)', "unknown area kind 'SQUARE'", 'at character 1');
    assertAreaError('POINT (1 2)', "unknown area kind 'POINT'");
    assertAreaError('(1 2, 3)', 'expected area kind', "found '('");
  });

  it('rejects an unclosed polygon', () => {
    assertAreaError(
      'POLYGON ((1 2, 3 4, 5 6, 3 4))',
      'POLYGON is not closed: first point (1 2) differs from last point (3 4)',
    );
  });

  it('rejects too few points', () => {
    assertAreaError('POLYGON ((1 2, 3 4, 1 2))', 'POLYGON needs at least 4 points', 'got 3');
    assertAreaError('LINESTRING (1 2)', 'LINESTRING needs at least 2 points, got 1');
  });

  it('rejects out-of-range coordinates with their position', () => {
    assertAreaError('CIRCLE (95 10, 5)', 'latitude 95 out of range [-90, 90] at character 9');
    assertAreaError('CIRCLE (-90.5 10, 5)', 'latitude -90.5 out of range');
    assertAreaError('LINESTRING (1 2, 3 180.1)', 'longitude 180.1 out of range [-180, 180] at character 20');
    assertAreaError('CIRCLE (0 -1e3, 5)', 'longitude -1e3 out of range');
  });

  it('rejects a radius that is not positive', () => {
    assertAreaError('CIRCLE (1 2, 0)', 'CIRCLE radius must be > 0', 'got 0', 'at character 14');
    assertAreaError('CIRCLE (1 2, -5)', 'CIRCLE radius must be > 0', 'got -5');
  });

  it('rejects trailing garbage', () => {
    assertAreaError('CIRCLE (1 2, 3) x', 'unexpected text after the area at character 17', "'x'");
    assertAreaError('CIRCLE (1 2, 3))', 'unexpected text after the area', "')'");
  });

  it('rejects missing punctuation and says what was expected where', () => {
    assertAreaError('CIRCLE (10 20 30)', "expected ',' at character 15", "found '30'");
    assertAreaError('CIRCLE 1 2, 3', "expected '(' at character 8");
    assertAreaError('CIRCLE (1 2, 3', "expected ')' at character 15", 'found end of text');
    assertAreaError('POLYGON (0 0, 0 1, 1 1, 0 0)', "expected '(' at character 10");
    assertAreaError('POLYGON ((0 0, 0 1, 1 1, 0 0)', "expected ')'", 'found end of text');
    assertAreaError('LINESTRING (1 2, 3 4', "expected ')'");
    assertAreaError('LINESTRING (1 2,, 3 4)', 'expected latitude at character 17');
    assertAreaError('CIRCLE (1,2, 3)', 'expected whitespace between latitude and longitude at character 10');
    assertAreaError('CIRCLE', "expected '(' at character 7", 'found end of text');
  });

  it('rejects NaN, Infinity and other non-numbers', () => {
    assertAreaError('CIRCLE (NaN 1, 2)', 'expected latitude at character 9', "found 'NaN'");
    assertAreaError('CIRCLE (1 Infinity, 2)', 'expected longitude at character 11', "found 'Infinity'");
    assertAreaError('CIRCLE (1 2, -Infinity)', 'expected radius', "found '-Infinity'");
    assertAreaError('CIRCLE (1 2, 1e999)', "radius '1e999' is not a finite number at character 14");
    assertAreaError('CIRCLE (0x10 2, 3)', 'expected whitespace between latitude and longitude', "found 'x10'");
    assertAreaError('CIRCLE (1 2, 3 4)', "expected ')'");
  });

  it('rejects polygon holes explicitly', () => {
    const withHole = 'POLYGON ((0 0, 0 1, 1 1, 0 0), (0 0, 0 1, 1 1, 0 0))';
    assertAreaError(withHole, 'holes', 'not supported', 'at character 30');
  });

  it('caps the text length and the number of points', () => {
    assertAreaError(`CIRCLE (1 2, 3)${' '.repeat(MAX_AREA_TEXT_LENGTH)}`, 'too long', String(MAX_AREA_TEXT_LENGTH));
    const points = Array.from({ length: MAX_AREA_POINTS + 1 }, () => '0 0');
    assertAreaError(`LINESTRING (${points.join(',')})`, `too many points: the limit is ${MAX_AREA_POINTS}`);
  });

  it('keeps messages short for huge or unprintable tokens', () => {
    assertAreaError(`${'X'.repeat(5000)} (1 2, 3)`, `unknown area kind '${'X'.repeat(20)}...'`);
    assertAreaError('CIRCLE (1 2, 3)\u0000', 'unexpected text after the area', '"\\u0000"');
  });
});

describe('formatArea', () => {
  it('writes the normalised form', () => {
    assert.equal(formatArea(parseArea(' circle( 1.50  -2 ,3e2 ) ')), 'CIRCLE (1.5 -2, 300)');
    assert.equal(formatArea(parseArea('polygon((0 0,0 1,1 1,0 0))')), 'POLYGON ((0 0, 0 1, 1 1, 0 0))');
    assert.equal(formatArea(parseArea('linestring(1 2,3 4)')), 'LINESTRING (1 2, 3 4)');
    const extremes: Area = { kind: 'circle', center: { lat: 1e-7, lon: -5e-324 }, radius: 1e21 };
    assert.equal(formatArea(extremes), 'CIRCLE (1e-7 -5e-324, 1e+21)');
  });
});

describe('properties', () => {
  it('valid areas round-trip exactly through formatArea and parseArea', () => {
    fc.assert(
      fc.property(anyArea, (area) => {
        const text = formatArea(area);
        assert.deepEqual(parseArea(text), area);
        assert.equal(formatArea(parseArea(text)), text);
      }),
      { numRuns: 300 },
    );
  });

  it('arbitrary strings either parse or throw AreaError', () => {
    // Any UTF-16 code unit, lone surrogates included (cheaper to set up than unit: 'binary').
    const anyUtf16 = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)) });
    const wktCharacters = fc.constantFrom(...'CIRCLEPOYGNSTircleoygnst()0123456789.,+-eE \t\n'.split(''));
    const wktLike = fc.string({ unit: wktCharacters, maxLength: 60 });
    const keywordLed = fc
      .tuple(fc.constantFrom('CIRCLE', 'POLYGON', 'LINESTRING', 'circle ('), wktLike)
      .map(([keyword, rest]) => keyword + rest);
    fc.assert(
      fc.property(fc.oneof(fc.string(), anyUtf16, wktLike, keywordLed), (text) => {
        const area = parseOrAreaError(text);
        if (area !== undefined) assert.equal(formatArea(parseArea(formatArea(area))), formatArea(area));
      }),
      { numRuns: 500 },
    );
  });

  it('mutations of valid text either parse or throw AreaError', () => {
    const edit = fc.record({
      at: fc.nat(),
      deleteCount: fc.nat({ max: 4 }),
      insert: fc.oneof(
        fc.constantFrom('', '(', ')', ',', ' ', '-', 'e', '.', '9', 'NaN', 'Infinity', '1e400'),
        fc.string({ maxLength: 3 }),
      ),
    });
    fc.assert(
      fc.property(anyArea, fc.array(edit, { minLength: 1, maxLength: 4 }), (area, edits) => {
        let text = formatArea(area);
        for (const { at, deleteCount, insert } of edits) {
          const position = at % (text.length + 1);
          text = text.slice(0, position) + insert + text.slice(position + deleteCount);
        }
        const parsed = parseOrAreaError(text);
        if (parsed !== undefined) assert.deepEqual(parseArea(formatArea(parsed)), parsed);
      }),
      { numRuns: 500 },
    );
  });
});
