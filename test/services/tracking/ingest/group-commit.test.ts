import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GroupCommit } from '../../../../src/services/tracking/ingest/group-commit.ts';

interface Item {
  name: string;
  rows: number;
  poison?: boolean;
}

/** A writer that records its batches, can be held open, and fails any batch holding a poisoned item. */
function recorder(options: { batchSize?: number; delayMs?: number } = {}) {
  const batches: string[][] = [];
  let active = 0;
  let overlapped = false;
  let gate: Promise<void> = Promise.resolve();
  let open = () => {};
  const commit = new GroupCommit<Item>({
    batchSize: options.batchSize ?? 10,
    delayMs: options.delayMs ?? 0,
    rowsOf: (item) => item.rows,
    async write(items) {
      active++;
      if (active > 1) overlapped = true;
      await gate;
      active--;
      if (items.some((item) => item.poison)) throw new Error('bad item');
      batches.push(items.map((item) => item.name));
    },
  });
  return {
    commit,
    batches,
    overlapped: () => overlapped,
    hold() {
      gate = new Promise((resolve) => {
        open = resolve;
      });
    },
    release: () => open(),
  };
}

describe('group commit', () => {
  it('writes what arrives in one turn of the event loop together, and resolves each caller after its write', async () => {
    const { commit, batches } = recorder();
    const done: string[] = [];
    await Promise.all(['a', 'b', 'c'].map((name) => commit.add({ name, rows: 1 }).then(() => done.push(name))));
    assert.deepEqual(batches, [['a', 'b', 'c']]);
    assert.deepEqual(done, ['a', 'b', 'c']);
  });

  it('gathers items queued during a write into the next one; writes never overlap', async () => {
    const writer = recorder();
    writer.hold();
    const first = writer.commit.add({ name: 'a', rows: 1 });
    await new Promise((resolve) => setImmediate(resolve));
    const rest = ['b', 'c', 'd'].map((name) => writer.commit.add({ name, rows: 1 }));
    writer.release();
    await Promise.all([first, ...rest]);
    assert.deepEqual(writer.batches, [['a'], ['b', 'c', 'd']]);
    assert.equal(writer.overlapped(), false);
  });

  it('caps a batch at batchSize rows without splitting an item, and writes a full batch without waiting', async () => {
    const { commit, batches } = recorder({ batchSize: 5, delayMs: 60_000 });
    const items = [3, 2, 4, 1, 6].map((rows, index) => commit.add({ name: `i${index}`, rows }));
    await Promise.all(items.slice(0, 2));
    assert.deepEqual(batches, [['i0', 'i1']], 'five rows reached: written at once despite the long delay');
    await commit.drain();
    await Promise.all(items);
    assert.deepEqual(batches, [['i0', 'i1'], ['i2', 'i3'], ['i4']], 'an item above the cap goes alone');
  });

  it('waits up to delayMs for more items when idle', async () => {
    const { commit, batches } = recorder({ delayMs: 30 });
    const first = commit.add({ name: 'a', rows: 1 });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = commit.add({ name: 'b', rows: 1 });
    await Promise.all([first, second]);
    assert.deepEqual(batches, [['a', 'b']]);
  });

  it('a failed batch is retried item by item: only the bad item fails', async () => {
    const { commit, batches } = recorder();
    const results = await Promise.allSettled([
      commit.add({ name: 'a', rows: 1 }),
      commit.add({ name: 'bad', rows: 1, poison: true }),
      commit.add({ name: 'c', rows: 1 }),
    ]);
    assert.deepEqual(results.map((result) => result.status), ['fulfilled', 'rejected', 'fulfilled']);
    assert.deepEqual(batches, [['a'], ['c']]);
  });

  it('drain resolves once everything queued is written', async () => {
    const writer = recorder({ delayMs: 60_000 });
    const pending = [writer.commit.add({ name: 'a', rows: 1 }), writer.commit.add({ name: 'b', rows: 1 })];
    await writer.commit.drain();
    assert.deepEqual(writer.batches, [['a', 'b']]);
    await Promise.all(pending);
    await writer.commit.drain();
  });
});
