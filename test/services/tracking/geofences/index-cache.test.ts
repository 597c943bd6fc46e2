import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GeofenceIndexes } from '../../../../src/services/tracking/geofences/index-cache.ts';
import type { GeofenceRow } from '../../../../src/services/tracking/geofences/repository.ts';

const INSIDE = { lat: 52.52, lon: 13.405 };

function fence(id: number, area: string, ownerId = 1, attributes: Record<string, unknown> = {}): GeofenceRow {
  return { id, owner_id: ownerId, name: `fence ${id}`, description: null, area, points: 1, calendar_id: null, attributes: JSON.stringify(attributes), created_at: 0, updated_at: 0 };
}

/** A loader whose answers the test releases by hand. */
function manualLoader(rows: () => GeofenceRow[]) {
  const waiting: (() => void)[] = [];
  let calls = 0;
  return {
    get calls() {
      return calls;
    },
    release: () => waiting.splice(0).forEach((resolve) => resolve()),
    load: (ownerId: number) => {
      calls++;
      return new Promise<GeofenceRow[]>((resolve) => waiting.push(() => resolve(rows().filter((row) => row.owner_id === ownerId))));
    },
  };
}

describe('GeofenceIndexes', () => {
  it('loads an owner once, on first use', async () => {
    let calls = 0;
    const indexes = new GeofenceIndexes(async () => {
      calls++;
      return [fence(1, 'CIRCLE (52.52 13.405, 100)'), fence(2, 'CIRCLE (10 10, 100)')];
    });
    assert.deepEqual(await Promise.all([indexes.containing(1, INSIDE), indexes.containing(1, INSIDE)]), [[1], [1]]);
    assert.deepEqual(await indexes.containing(1, { lat: 10, lon: 10 }), [2]);
    assert.equal(calls, 1);
  });

  it('applies puts and removes to a loaded index without loading again', async () => {
    let calls = 0;
    const indexes = new GeofenceIndexes(async () => {
      calls++;
      return [fence(1, 'CIRCLE (52.52 13.405, 100)')];
    });
    await indexes.containing(1, INSIDE);
    indexes.put(fence(2, 'POLYGON ((52 13, 53 13, 53 14, 52 13))'));
    assert.deepEqual(await indexes.containing(1, INSIDE), [1, 2]);
    indexes.put(fence(1, 'CIRCLE (0 0, 100)'));
    assert.deepEqual(await indexes.containing(1, INSIDE), [2]);
    indexes.remove(1, 2);
    assert.deepEqual(await indexes.containing(1, INSIDE), []);
    assert.equal(calls, 1);
  });

  it('ignores changes for owners not loaded: the load will read them', async () => {
    const rows = [fence(1, 'CIRCLE (52.52 13.405, 100)')];
    const indexes = new GeofenceIndexes(async () => rows);
    indexes.remove(1, 1);
    assert.deepEqual(await indexes.containing(1, INSIDE), [1]);
  });

  it('a change made while the load is under way is not lost, whether or not the load saw it', async () => {
    const rows = [fence(1, 'CIRCLE (52.52 13.405, 100)')];
    const loader = manualLoader(() => rows);
    const indexes = new GeofenceIndexes(loader.load);
    const first = indexes.containing(1, INSIDE);
    // Stored and announced before the load's read answers: the read misses fence 2, sees fence 1 deleted.
    indexes.put(fence(2, 'CIRCLE (52.52 13.405, 200)'));
    indexes.remove(1, 1);
    loader.release();
    assert.deepEqual(await first, [2]);
    assert.deepEqual(await indexes.containing(1, INSIDE), [2]);
    assert.equal(loader.calls, 1);
  });

  it('forget drops the index, and the next use loads it again', async () => {
    let rows = [fence(1, 'CIRCLE (52.52 13.405, 100)')];
    const indexes = new GeofenceIndexes(async () => rows);
    assert.deepEqual(await indexes.containing(1, INSIDE), [1]);
    rows = [];
    indexes.forget(1);
    assert.deepEqual(await indexes.containing(1, INSIDE), []);
  });

  it('a failed load is not kept', async () => {
    let fail = true;
    const indexes = new GeofenceIndexes(async () => {
      if (fail) throw new Error('database down');
      return [fence(1, 'CIRCLE (52.52 13.405, 100)')];
    });
    await assert.rejects(indexes.containing(1, INSIDE), /database down/);
    fail = false;
    assert.deepEqual(await indexes.containing(1, INSIDE), [1]);
  });

  it('owners are separate; polylineDistance widens a LINESTRING; a stored area the parser refuses matches nothing', async () => {
    const indexes = new GeofenceIndexes(async (ownerId) =>
      [
        fence(1, 'LINESTRING (52.52 13.3, 52.52 13.5)', 1, { polylineDistance: 100 }),
        fence(2, 'CIRCLE (52.52 13.405, 100)', 2),
        fence(3, 'NOT AN AREA', 1),
      ].filter((row) => row.owner_id === ownerId),
    );
    assert.deepEqual(await indexes.containing(1, { lat: 52.5208, lon: 13.4 }), [1], 'about 89 m from the line');
    assert.deepEqual(await indexes.containing(2, { lat: 52.5208, lon: 13.4 }), []);
    assert.deepEqual(await indexes.containing(2, INSIDE), [2]);
  });
});
