import assert from 'node:assert/strict';
import { it } from 'node:test';
import { TargetGuard } from '../../../../src/services/notifications/deliveries/circuit.ts';

const TARGET = 'webhook:1';

/** Whether the promise has settled by the time the queued callbacks ran. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

it('a slot given back unsent leaves a half-open circuit half open: one probe at a time, and a failed probe opens it again', async () => {
  let clock = 1_000_000;
  const guard = new TargetGuard(4, () => clock);
  for (let failure = 0; failure < 5; failure++) {
    assert.deepEqual(await guard.acquire(TARGET), { go: true });
    guard.release(TARGET, false);
  }
  assert.deepEqual(await guard.acquire(TARGET), { go: false, retryAt: clock + 30_000, open: true }, 'open');

  clock += 30_000;
  assert.deepEqual(await guard.acquire(TARGET), { go: true }, 'the probe');
  // The probe is not sent (its user is over the rate, say): nothing is learnt of the target.
  guard.giveBack(TARGET);
  assert.deepEqual(await guard.acquire(TARGET), { go: true }, 'the next probe');
  const waiting = guard.acquire(TARGET);
  assert.equal(await settled(waiting), false, 'still one probe at a time');
  guard.release(TARGET, false);
  assert.deepEqual(await waiting, { go: false, retryAt: clock + 30_000, open: true }, 'the failed probe opened the circuit again');
});
