import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DeviceRecord } from '../../../../src/services/devices/access.ts';
import { DeviceDirectory } from '../../../../src/services/tracking/ingest/device-directory.ts';
import { deviceRecord } from '../../../factories/device.ts';

/** The device `uniqueId` names, as the devices module hands it over. */
function record(id: number, uniqueId: string, changes: Partial<DeviceRecord> = {}): DeviceRecord {
  return deviceRecord(id, { uniqueId, name: uniqueId, ...changes });
}

/** A directory over a mutable device table, counting lookups, on a clock the test moves. */
function setup(maxEntries = 100) {
  const table = new Map<string, DeviceRecord>([['a', record(1, 'a')]]);
  let now = 1_000;
  let lookups = 0;
  let failing = false;
  const directory = new DeviceDirectory({
    async lookup(uniqueId) {
      lookups++;
      await new Promise((resolve) => setImmediate(resolve));
      if (failing) throw new Error('database down');
      return table.get(uniqueId);
    },
    ttlMs: 5_000,
    maxEntries,
    now: () => now,
  });
  return {
    directory,
    table,
    lookups: () => lookups,
    advance: (ms: number) => {
      now += ms;
    },
    fail: (value: boolean) => {
      failing = value;
    },
  };
}

describe('device directory (uniqueId lookups for ingestion)', () => {
  it('reads a device once, however many ask at the same time, then serves it from memory', async () => {
    const { directory, lookups } = setup();
    const answers = await Promise.all([directory.find('a'), directory.find('a'), directory.find('a')]);
    assert.deepEqual(answers.map((answer) => answer?.id), [1, 1, 1]);
    await directory.find('a');
    assert.equal(lookups(), 1);
  });

  it('past the TTL answers from memory at once and reads again in the background', async () => {
    const { directory, table, lookups, advance } = setup();
    await directory.find('a');
    table.set('a', record(1, 'a', { disabled: true }));
    advance(5_000);
    assert.equal((await directory.find('a'))?.disabled, false, 'the stale record, without waiting');
    await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal(lookups(), 2);
    assert.equal((await directory.find('a'))?.disabled, true, 'the fresh record');
  });

  it('never remembers an unknown device: one created just after a refusal is found on the next ask', async () => {
    const { directory, table, lookups } = setup();
    assert.equal(await directory.find('b'), undefined);
    assert.equal(directory.size, 0, 'nothing is held for an unknown id');
    table.set('b', record(2, 'b'));
    assert.equal((await directory.find('b'))?.id, 2);
    assert.equal(lookups(), 2);
  });

  it('made-up ids take no room, and at most maxEntries known devices are held, the least recently asked for going first', async () => {
    const { directory, table, lookups } = setup(3);
    await Promise.all(Array.from({ length: 1000 }, (_, index) => directory.find(`random-${index}`)));
    assert.equal(directory.size, 0);
    for (const id of ['b', 'c', 'd']) table.set(id, record(id.charCodeAt(0), id));
    for (const id of ['a', 'b', 'c']) await directory.find(id);
    await directory.find('a');
    await directory.find('d');
    assert.equal(directory.size, 3);
    const before = lookups();
    for (const id of ['a', 'c', 'd']) await directory.find(id);
    assert.equal(lookups(), before, 'a, c and d are held');
    await directory.find('b');
    assert.equal(lookups(), before + 1, 'b, the least recently asked for, was dropped');
  });

  it('forget drops one device, and a read in flight when it is forgotten is not kept', async () => {
    const { directory, table, lookups } = setup();
    await directory.find('a');
    directory.forget('a');
    const reading = directory.find('a');
    table.set('a', record(1, 'a', { disabled: true }));
    directory.forget('a');
    assert.equal((await reading)?.id, 1);
    assert.equal((await directory.find('a'))?.disabled, true, 'read again');
    assert.equal(lookups(), 3);
  });

  it('refresh reads at once; forgetDevice drops the device', async () => {
    const { directory, table, lookups } = setup();
    await directory.find('a');
    table.set('a', record(1, 'a', { attributes: { speedLimit: 30 } }));
    assert.deepEqual((await directory.refresh('a'))?.attributes, { speedLimit: 30 });
    table.delete('a');
    directory.forgetDevice(1);
    assert.equal(await directory.find('a'), undefined);
    assert.equal(lookups(), 3);
  });

  it('a failed read is not remembered: a known device keeps its record, an unknown one is asked again', async () => {
    const { directory, fail, advance } = setup();
    await directory.find('a');
    fail(true);
    await assert.rejects(directory.find('c'), /database down/);
    await assert.rejects(directory.refresh('a'), /database down/);
    advance(10_000);
    assert.equal((await directory.find('a'))?.id, 1);
    fail(false);
    assert.equal(await directory.find('c'), undefined);
  });
});
