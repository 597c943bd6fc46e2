// npm run fuzz -- [--count N] [--seed S] [--route TEXT]: fuzzes every operation (or those whose "METHOD /path"
// contains TEXT) with N requests each, on SQLite and, with TEST_DATABASE_URL, on PostgreSQL; prints each kind of
// finding once with its count and first example, and exits 1 when there is any.
import { parseArgs } from 'node:util';
import { testEngines } from '../support/engines.ts';
import { CI_COUNT, CI_SEED, formatFinding, groupFindings, startFuzzSession } from './engine.ts';
import type { Finding } from './engine.ts';
import { operationName } from './requests.ts';

const { values } = parseArgs({
  options: { count: { type: 'string', default: String(CI_COUNT) }, seed: { type: 'string', default: String(CI_SEED) }, route: { type: 'string', default: '' } },
});
const count = Number(values.count);
const seed = Number(values.seed);
if (!Number.isSafeInteger(count) || count < 1 || !Number.isSafeInteger(seed)) throw new Error('--count takes a positive integer, --seed an integer');

let failed = false;
for (const engine of testEngines()) {
  const session = await startFuzzSession(engine);
  const findings: Finding[] = [];
  const statuses = new Map<number, number>();
  let sent = 0;
  let unsent = 0;
  try {
    for (const operation of session.operations.filter((candidate) => operationName(candidate).includes(values.route))) {
      const report = await session.fuzz(operation, { seed, count });
      sent += report.sent;
      unsent += report.unsent;
      for (const [status, times] of report.statuses) statuses.set(status, (statuses.get(status) ?? 0) + times);
      findings.push(...report.findings);
      console.log(`${engine.name} ${operationName(operation)}: ${report.sent} sent, ${report.findings.length} findings`);
    }
  } finally {
    await session.close();
  }
  const histogram = [...statuses].sort(([a], [b]) => a - b).map(([status, times]) => `${status}×${times}`).join(' ');
  console.log(`\n${engine.name}: seed ${seed}, ${count} per operation, ${sent} requests sent (${unsent} not buildable); answers ${histogram}`);
  for (const group of groupFindings(findings)) console.log(`\n[${group.count}×] ${group.key}\n  ${formatFinding(group.first)}`);
  failed ||= findings.length > 0;
}
process.exitCode = failed ? 1 : 0;
