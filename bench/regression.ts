import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { registerDevices, simulatedIds } from '../src/cli/simulate.ts';
import type { DeviceProtocol } from '../src/services/tracking/protocols/registry.ts';
import { startProcess } from '../test/support/processes.ts';
import type { RunningProcess } from '../test/support/processes.ts';
import { freePort } from '../test/support/ports.ts';
import { freshDatabase, percentile, simulateLoad } from './ingestion.ts';
import { processCpuMs } from './measure.ts';
import type { Figure } from './measure.ts';
import { BENCH_ADMIN, benchServerEnv } from './server.ts';

/**
 * Ingestion against an earlier commit: the same load, alternately, against this tree's server and
 * against one started from BENCH_BASELINE_TREE, a checkout of that commit with its own node_modules
 * (`git worktree add --detach ../baseline <commit> && (cd ../baseline && npm ci)`), both on SQLite.
 * Throughput swings with whatever else the machine runs; the server's CPU time per position swings
 * less, and least at a steady rate (see PACED_RATE), so all three are reported, each as
 * candidate / baseline. The candidate is this tree, or BENCH_CANDIDATE_TREE (a checkout like the
 * baseline's) to compare two earlier commits with each other.
 */
const DEVICES = Number(process.env.BENCH_DEVICES ?? 1000);
const ROUNDS = Number(process.env.BENCH_REGRESSION_ROUNDS ?? 4);
const RUN_SECONDS = Number(process.env.BENCH_REGRESSION_SECONDS ?? 5);
const PROTOCOLS: DeviceProtocol[] = ['teltonika', 'osmand'];
/**
 * Positions per device per second of the paced runs: a rate both servers keep up with, so both write
 * batches of the same size and the CPU per position compares the work alone. At saturation it also
 * follows the batch size, which follows the throughput.
 */
const PACED_RATE = Number(process.env.BENCH_REGRESSION_PACED_RATE ?? 3);

interface Load {
  label: string;
  protocol: DeviceProtocol;
  /** Positions per device per second; 0: each device sends again as soon as it has its ACK. */
  rate: number;
}

const LOADS: Load[] = PROTOCOLS.flatMap((protocol) => [
  { label: protocol, protocol, rate: 0 },
  { label: `${protocol} at ${PACED_RATE * DEVICES}/s`, protocol, rate: PACED_RATE },
]);

interface Side {
  name: 'baseline' | 'candidate';
  server: RunningProcess;
  ports: Record<string, number>;
  /** By load label. */
  runs: Map<string, { perSecond: number; cpuMicrosPerPosition: number }[]>;
}

async function startSide(name: Side['name'], dir: string, script: string | undefined): Promise<Side> {
  const database = await freshDatabase('sqlite', dir, undefined);
  const ports = { teltonika: await freePort(), osmand: await freePort() };
  const server = await startProcess(
    benchServerEnv(path.join(dir, name), { DATABASE_URL: database.url, TELTONIKA_PORT: String(ports.teltonika), OSMAND_PORT: String(ports.osmand) }),
    { script, timeoutMs: 60_000 },
  );
  await registerDevices({ url: server.url, ...BENCH_ADMIN, protocol: 'teltonika', uniqueIds: simulatedIds('861000000000000', DEVICES), speedKmh: 50, stopSeconds: 60 });
  return { name, server, ports, runs: new Map(LOADS.map((load) => [load.label, []])) };
}

async function runOnce(side: Side, { label, protocol, rate }: Load): Promise<void> {
  const pid = side.server.child.pid as number;
  const cpuBefore = processCpuMs(pid);
  const started = performance.now();
  const stats = await simulateLoad(protocol, side.ports[protocol] as number, simulatedIds('861000000000000', DEVICES), rate, RUN_SECONDS);
  const seconds = (performance.now() - started) / 1000;
  // Work an acknowledgement does not wait for (live publishing, device fields) still counts.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const cpu = processCpuMs(pid) - cpuBefore;
  side.runs.get(label)?.push({ perSecond: stats.acknowledged / seconds, cpuMicrosPerPosition: (cpu * 1000) / Math.max(1, stats.acknowledged) });
}

export async function benchRegression(): Promise<Figure[]> {
  const tree = process.env.BENCH_BASELINE_TREE;
  if (!tree) return [{ name: 'Ingestion against an earlier commit', value: 'skipped: set BENCH_BASELINE_TREE to a checkout of it with its own node_modules' }];
  const dir = mkdtempSync(path.join(tmpdir(), 'trackstack-bench-regression-'));
  const sides: Side[] = [];
  try {
    sides.push(await startSide('baseline', dir, path.resolve(tree, 'src/main.ts')));
    const candidateTree = process.env.BENCH_CANDIDATE_TREE;
    sides.push(await startSide('candidate', dir, candidateTree ? path.resolve(candidateTree, 'src/main.ts') : undefined));
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate who goes first, so that a drift in the machine's load favours neither.
      const order = round % 2 === 0 ? sides : [...sides].reverse();
      for (const load of LOADS) for (const side of order) await runOnce(side, load);
    }
    const [baseline, candidate] = sides as [Side, Side];
    return LOADS.flatMap(({ label, rate }) => {
      const runs = (side: Side) => side.runs.get(label) ?? [];
      const best = (side: Side) => Math.max(...runs(side).map((run) => run.perSecond));
      const cpu = (side: Side) => percentile(runs(side).map((run) => run.cpuMicrosPerPosition), 0.5);
      const cpuFigure = { name: `${label}: server CPU µs per position (median), baseline / candidate`, value: `${cpu(baseline).toFixed(0)} / ${cpu(candidate).toFixed(0)} (ratio ${(cpu(candidate) / cpu(baseline)).toFixed(2)})` };
      if (rate > 0) return [cpuFigure];
      return [{ name: `${label}: best positions/s, baseline / candidate`, value: `${best(baseline).toFixed(0)} / ${best(candidate).toFixed(0)} (ratio ${(best(candidate) / best(baseline)).toFixed(2)})` }, cpuFigure];
    });
  } finally {
    await Promise.all(sides.map((side) => side.server.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
}
