import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { csvDocument, gpxDocument, isoTime, jsonDocument, positionJson, preferredFormat } from '../../../../src/services/tracking/positions/formats.ts';
import type { PositionRow } from '../../../../src/services/tracking/positions/repository.ts';
import { positionRow } from '../../../factories/position.ts';

const MAX_TIME = 8.64e15;

async function text(chunks: AsyncIterable<string>): Promise<string> {
  let all = '';
  for await (const chunk of chunks) all += chunk;
  return all;
}

async function* pagesOf(...pages: PositionRow[][]): AsyncGenerator<PositionRow[]> {
  yield* pages;
}

describe('isoTime', () => {
  it('writes exactly what Date.prototype.toISOString writes', () => {
    fc.assert(
      fc.property(fc.integer({ min: -MAX_TIME, max: MAX_TIME }), (ms) => {
        assert.equal(isoTime(ms), new Date(ms).toISOString());
      }),
      { numRuns: 20_000 },
    );
  });

  it('also for consecutive times across days and for fractional milliseconds', () => {
    const start = Date.parse('1999-12-31T23:59:58.998Z');
    for (let ms = start; ms < start + 5_000; ms++) assert.equal(isoTime(ms), new Date(ms).toISOString());
    assert.equal(isoTime(1.5), new Date(1.5).toISOString());
    assert.equal(isoTime(-1), '1969-12-31T23:59:59.999Z');
  });
});

describe('positionJson', () => {
  const text64 = fc.option(fc.string({ unit: 'binary', maxLength: 64 }), { nil: null });
  const finite = fc.double({ noNaN: true, noDefaultInfinity: true });
  const time = fc.integer({ min: -MAX_TIME, max: MAX_TIME });

  it('is valid JSON of the Position for any stored row', () => {
    fc.assert(
      fc.property(
        fc.record({
          id: fc.integer({ min: 1 }),
          device_id: fc.integer({ min: 1 }),
          protocol: text64,
          server_time: time,
          device_time: fc.option(time, { nil: null }),
          fix_time: time,
          valid: fc.constantFrom(0, 1),
          latitude: finite,
          longitude: finite,
          altitude: finite,
          speed: finite,
          course: finite,
          accuracy: finite,
          address: text64,
          attributes: fc.jsonValue().map((value) => JSON.stringify({ value })),
        }),
        (stored) => {
          const parsed = JSON.parse(positionJson(stored));
          const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
          assert.deepEqual(parsed, {
            id: stored.id,
            deviceId: stored.device_id,
            protocol: stored.protocol,
            serverTime: iso(stored.server_time),
            deviceTime: iso(stored.device_time),
            fixTime: iso(stored.fix_time),
            valid: stored.valid === 1,
            latitude: stored.latitude === 0 ? 0 : stored.latitude,
            longitude: stored.longitude === 0 ? 0 : stored.longitude,
            altitude: stored.altitude === 0 ? 0 : stored.altitude,
            speed: stored.speed === 0 ? 0 : stored.speed,
            course: stored.course === 0 ? 0 : stored.course,
            accuracy: stored.accuracy === 0 ? 0 : stored.accuracy,
            address: stored.address,
            attributes: JSON.parse(stored.attributes),
          });
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('a streamed document is one JSON array whatever the pages', async () => {
    assert.deepEqual(JSON.parse(await text(jsonDocument(pagesOf()))), []);
    assert.deepEqual(JSON.parse(await text(jsonDocument(pagesOf([], [positionRow({ id: 1 })], [], [positionRow({ id: 2 }), positionRow({ id: 3 })])))).map((p: { id: number }) => p.id), [1, 2, 3]);
  });
});

describe('preferredFormat', () => {
  for (const [accept, format] of [
    [undefined, 'json'],
    ['', 'json'],
    ['*/*', 'json'],
    ['application/json', 'json'],
    ['application/gpx+xml', 'gpx'],
    ['text/csv', 'csv'],
    ['TEXT/CSV; charset=utf-8', 'csv'],
    ['text/csv;q=0.5, application/gpx+xml;q=0.8', 'gpx'],
    ['text/csv, */*;q=0.1', 'csv'],
    ['text/csv, application/json', 'json'],
    ['text/csv;q=0, */*', 'json'],
    ['text/html', 'json'],
    ['text/csv;q=abc', 'json'],
  ] as const) {
    it(`${JSON.stringify(accept)} → ${format}`, () => assert.equal(preferredFormat(accept), format));
  }
});

describe('csvDocument', () => {
  it('quotes text per RFC 4180 and defuses spreadsheet formulas', async () => {
    const csv = await text(csvDocument(pagesOf([positionRow({ address: 'Main St, 1 "A"', protocol: '=cmd', attributes: '{"a":"x,y"}', device_time: null, valid: 0 })])));
    const [header, line, end] = csv.split('\r\n');
    assert.equal(header?.split(',').length, 15);
    assert.equal(line, `1,2,'=cmd,2025-03-01T00:00:00.500Z,,2025-03-01T00:00:00.000Z,false,52.5,13.4,34,10,90,5,"Main St, 1 ""A""","{""a"":""x,y""}"`);
    assert.equal(end, '');
  });

  it('puts multi-line text inside quotes', async () => {
    const csv = await text(csvDocument(pagesOf([positionRow({ address: 'line 1\nline 2' })])));
    assert.match(csv, /,"line 1\nline 2","\{""sat"":7\}"\r\n$/);
  });
});

describe('gpxDocument', () => {
  it('escapes the track name and writes an empty track for an empty history', async () => {
    const gpx = await text(gpxDocument(pagesOf(), 'Van <1> & "2"'));
    assert.match(gpx, /<name>Van &#60;1&#62; &#38; &#34;2&#34;<\/name><trkseg>\n<\/trkseg><\/trk>/);
  });
});
