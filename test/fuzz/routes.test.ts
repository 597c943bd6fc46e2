import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachEngine } from '../support/engines.ts';
import { CI_COUNT, CI_SEED, formatFinding, startFuzzSession } from './engine.ts';
import type { FuzzSession } from './engine.ts';
import { operationName } from './requests.ts';

describeEachEngine('fuzz: every operation of /openapi.json', (engine) => {
  let session: FuzzSession;

  before(async () => {
    session = await startFuzzSession(engine);
  });
  after(() => session?.close());

  // The walk over every operation outlasts npm test's per-test timeout on a loaded machine; each answer is still held to
  // 30 s by the fuzzer itself.
  const walkTimeout = 15 * 60_000;
  it(`answers ${CI_COUNT} generated requests per operation (seed ${CI_SEED}) without a 5xx, with JSON errors carrying a code, changing nothing when it refuses and nothing that breaks a later read`, { timeout: walkTimeout }, async (t) => {
    assert.ok(session.operations.length >= 60, `the document lists ${session.operations.length} operations`);
    for (const operation of session.operations) {
      await t.test(operationName(operation), async () => {
        const report = await session.fuzz(operation, { seed: CI_SEED, count: CI_COUNT });
        assert.deepEqual(report.findings.map(formatFinding), []);
        assert.ok(report.sent >= CI_COUNT * 0.9, `only ${report.sent} of ${CI_COUNT} requests could be built`);
      });
    }
  });
});
