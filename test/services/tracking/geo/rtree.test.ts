import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { RTree } from '../../../../src/services/tracking/geo/rtree.ts';
import type { Box } from '../../../../src/services/tracking/geo/rtree.ts';
import { between } from './geo-arbitraries.ts';

const box: fc.Arbitrary<Box> = fc
  .record({
    lat: between(-10, 10),
    lon: between(-10, 10),
    height: fc.oneof(fc.constant(0), between(0, 5)),
    width: fc.oneof(fc.constant(0), between(0, 5)),
  })
  .map(({ lat, lon, height, width }) => ({ minLat: lat, maxLat: lat + height, minLon: lon, maxLon: lon + width }));

const operation = fc.oneof(
  { weight: 3, arbitrary: fc.record({ insert: box, value: fc.nat({ max: 60 }) }) },
  { weight: 2, arbitrary: fc.record({ removeAt: fc.nat() }) },
);

const operations = fc.array(operation, { maxLength: 300 });
const queries = fc.array(fc.record({ lat: between(-12, 17), lon: between(-12, 17) }), { maxLength: 30 });

function inBox(entry: Box, lat: number, lon: number): boolean {
  return lat >= entry.minLat && lat <= entry.maxLat && lon >= entry.minLon && lon <= entry.maxLon;
}

describe('RTree', () => {
  it('finds entries whose box contains the point, edges included', () => {
    const tree = new RTree<string>();
    tree.insert({ minLat: 0, maxLat: 1, minLon: 0, maxLon: 1 }, 'unit');
    tree.insert({ minLat: 5, maxLat: 5, minLon: 5, maxLon: 5 }, 'dot');
    assert.deepEqual(tree.search(0.5, 0.5), ['unit']);
    assert.deepEqual(tree.search(1, 0), ['unit']);
    assert.deepEqual(tree.search(5, 5), ['dot']);
    assert.deepEqual(tree.search(2, 2), []);
  });

  it('removes only the entry with the same box and value', () => {
    const tree = new RTree<number>();
    const shared = { minLat: 0, maxLat: 1, minLon: 0, maxLon: 1 };
    tree.insert(shared, 1);
    tree.insert(shared, 2);
    assert.equal(tree.remove({ ...shared, maxLat: 2 }, 1), false);
    assert.equal(tree.remove(shared, 3), false);
    assert.equal(tree.remove({ ...shared }, 1), true);
    assert.deepEqual(tree.search(0.5, 0.5), [2]);
    assert.equal(tree.remove(shared, 1), false);
  });

  it('keeps its invariants and matches brute force through many inserts and removes', () => {
    fc.assert(
      fc.property(operations, queries, (script, points) => {
        const tree = new RTree<number>();
        const entries: { box: Box; value: number }[] = [];
        for (const op of script) {
          if ('insert' in op) {
            tree.insert(op.insert, op.value);
            entries.push({ box: op.insert, value: op.value });
          } else if (entries.length > 0) {
            const [removed] = entries.splice(op.removeAt % entries.length, 1);
            assert.ok(removed !== undefined && tree.remove(removed.box, removed.value));
          }
        }
        assert.equal(tree.checkInvariants(), entries.length);
        for (const { lat, lon } of points) {
          const expected = entries.filter((entry) => inBox(entry.box, lat, lon)).map((entry) => entry.value);
          assert.deepEqual(tree.search(lat, lon).sort((a, b) => a - b), expected.sort((a, b) => a - b));
        }
      }),
      { numRuns: 150 },
    );
  });

  it('empties completely and can be refilled', () => {
    const tree = new RTree<number>();
    const boxes = Array.from({ length: 500 }, (_, i) => ({
      minLat: i % 50,
      maxLat: (i % 50) + 1,
      minLon: i / 10,
      maxLon: i / 10 + 1,
    }));
    boxes.forEach((b, i) => tree.insert(b, i));
    assert.equal(tree.checkInvariants(), 500);
    boxes.forEach((b, i) => assert.ok(tree.remove(b, i)));
    assert.equal(tree.checkInvariants(), 0);
    assert.deepEqual(tree.search(0.5, 0.5), []);
    tree.insert(boxes[0] as Box, 7);
    assert.deepEqual(tree.search(0.5, 0.5), [7]);
  });
});
