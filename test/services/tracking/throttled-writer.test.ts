import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ThrottledWriter } from '../../../src/services/tracking/throttled-writer.ts';
import { FakeClock } from './support/fake-clock.ts';

/** A writer of merged changes whose writes are recorded, and finish when `finish()` is called. */
function recordingWriter(clock: FakeClock) {
  const changes = new Set<string>();
  const writes: string[][] = [];
  let finishWrite: (() => void) | undefined;
  const writer = new ThrottledWriter({
    intervalMs: 1_000,
    clock,
    pending: () => changes.size > 0,
    write: () => {
      if (changes.size === 0) return undefined;
      writes.push([...changes]);
      changes.clear();
      return new Promise<void>((resolve) => {
        finishWrite = resolve;
      });
    },
  });
  const change = (name: string) => {
    changes.add(name);
    writer.request();
  };
  const finish = async () => {
    finishWrite?.();
    finishWrite = undefined;
    // The writer's own bookkeeping runs on the promise's settlement.
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { writer, change, finish, writes };
}

describe('throttled writer', () => {
  it('writes the first change at once, and merges those within the interval into one write at its end', async () => {
    const clock = new FakeClock();
    const { change, finish, writes } = recordingWriter(clock);
    change('a');
    assert.deepEqual(writes, [['a']]);
    await finish();
    clock.advance(300);
    change('b');
    change('c');
    change('b');
    assert.deepEqual(writes, [['a']], 'within the interval: nothing yet');
    clock.advance(699);
    assert.deepEqual(writes, [['a']]);
    clock.advance(1);
    assert.deepEqual(writes, [['a'], ['b', 'c']], 'one write, at the end of the interval, with every change');
  });

  it('never overlaps writes: a change during a write goes in the next one, the interval permitting', async () => {
    const clock = new FakeClock();
    const { change, finish, writes } = recordingWriter(clock);
    change('a');
    clock.advance(5_000);
    change('b');
    assert.deepEqual(writes, [['a']], 'the first write has not finished');
    await finish();
    assert.deepEqual(writes, [['a'], ['b']], 'written when the first ended, its interval long past');
    await finish();
    change('c');
    assert.deepEqual(writes, [['a'], ['b']]);
    clock.advance(1_000);
    assert.deepEqual(writes, [['a'], ['b'], ['c']]);
  });

  it('flush writes at once whatever the interval; stop cancels the timed write', async () => {
    const clock = new FakeClock();
    const { writer, change, finish, writes } = recordingWriter(clock);
    change('a');
    await finish();
    change('b');
    assert.equal(clock.pending, 1);
    const flushed = writer.flush();
    assert.equal(clock.pending, 0);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(writes, [['a'], ['b']]);
    await finish();
    await flushed;
    change('c');
    writer.stop();
    clock.advance(10_000);
    assert.deepEqual(writes, [['a'], ['b']], 'stopped: no timed write');
  });

  it('a write with nothing to write after all does not start the interval again', async () => {
    const clock = new FakeClock();
    const { writer, change, finish, writes } = recordingWriter(clock);
    change('a');
    await finish();
    clock.advance(1_000);
    await writer.flush();
    change('b');
    assert.deepEqual(writes, [['a'], ['b']]);
  });
});
