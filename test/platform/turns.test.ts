import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nextTurn, TimeSlice } from '../../src/platform/turns.ts';

describe('taking turns', () => {
  it('resolves one waiter per iteration of the event loop: what the first schedules runs before the second', async () => {
    const order: string[] = [];
    await Promise.all([
      nextTurn().then(() => {
        order.push('first');
        setImmediate(() => order.push('scheduled by the first'));
      }),
      nextTurn().then(() => order.push('second')),
      nextTurn().then(() => order.push('third')),
    ]);
    // With setImmediate alone the three run back to back, and what the first scheduled after them all.
    assert.deepEqual(order, ['first', 'scheduled by the first', 'second', 'third']);
  });

  it('lets a slice run while under its budget and gives a turn once it is spent', async () => {
    let turned = false;
    setImmediate(() => (turned = true));
    const generous = new TimeSlice(60_000);
    for (let step = 0; step < 100; step++) await generous.pause();
    assert.equal(turned, false, 'no turn given under the budget');

    const spent = new TimeSlice(0);
    await spent.pause();
    assert.equal(turned, true, 'a turn given once the budget is spent');
  });
});
