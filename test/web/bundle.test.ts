import assert from 'node:assert/strict';
import { it } from 'node:test';
import { buildIfStale, initialBundle } from '../../web/build.ts';

/** DESIGN §8: initial JavaScript ≤ 250 KB gzip, with the map library in its own chunk. */
const INITIAL_BUDGET_BYTES = 250 * 1024;

it('keeps the initial JavaScript within 250 KB gzip, MapLibre out of it in a chunk of its own', async () => {
  await buildIfStale();
  const bundle = initialBundle();
  assert.ok(bundle.files.some((file) => file.endsWith('.js')), `no entry script in index.html: ${bundle.files.join(', ')}`);
  assert.ok(bundle.gzipBytes <= INITIAL_BUDGET_BYTES, `initial bundle ${bundle.gzipBytes} bytes gzip: ${bundle.files.join(', ')}`);
  assert.ok(!bundle.files.some((file) => /maplibre/i.test(file)), 'MapLibre is not loaded before a map screen needs it');
  assert.ok(bundle.mapChunkGzipBytes > 100 * 1024, 'MapLibre is a chunk of its own');
});
