import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { registerDevices, simulatedIds } from '../src/cli/simulate.ts';
import { startProcess } from '../test/support/processes.ts';
import type { RunningProcess } from '../test/support/processes.ts';
import { freePort } from '../test/support/ports.ts';
import { freshDatabase, onBenchEngines, simulateLoad, steadyCpu, steadyFigure } from './ingestion.ts';
import type { BenchDatabase } from './ingestion.ts';
import type { Figure } from './measure.ts';
import { BENCH_ADMIN, benchServerEnv } from './server.ts';

/**
 * Segmentation's cost to ingestion (docs/reports.md, "Figures"): the same server with REPORTS_SEGMENTATION on and off,
 * each on a fresh database, DEVICES Teltonika trackers. Saturation (each tracker sends its next record once the previous
 * is acknowledged), on against off (target >= 0.95); and the server's CPU time per position at a steady STEADY_RATE, on
 * against off (target <= 5 % more). The two servers run one after the other, twice, and the better of each is kept:
 * this machine is shared, and its noise is of the order of the difference measured.
 *
 * BENCH_SEGMENTATION_PROFILE=<dir>: each server runs with `--cpu-prof` and writes its profile into <dir> when it stops
 * (read it with `node bench/cpu-profile.ts <dir>/*.cpuprofile`).
 */

const DEVICES = Number(process.env.BENCH_DEVICES ?? 1000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const PROFILE_DIR = process.env.BENCH_SEGMENTATION_PROFILE;

interface Measured {
  perSecond: number;
  steady: { perSecond: number; cpuMicrosPerPosition: number };
}

async function measure(engine: 'sqlite' | 'postgres', adminUrl: string | undefined, segmentation: 'on' | 'off'): Promise<Measured> {
  const dir = mkdtempSync(path.join(tmpdir(), 'trackstack-bench-segmentation-'));
  let database: BenchDatabase | undefined;
  let server: RunningProcess | undefined;
  try {
    database = await freshDatabase(engine, dir, adminUrl);
    const port = await freePort();
    server = await startProcess(benchServerEnv(dir, { DATABASE_URL: database.url, TELTONIKA_PORT: String(port), REPORTS_SEGMENTATION: segmentation }), {
      timeoutMs: 120_000,
      nodeArgs: PROFILE_DIR ? ['--cpu-prof', '--cpu-prof-interval=100', `--cpu-prof-dir=${path.resolve(PROFILE_DIR)}`] : [],
    });
    const uniqueIds = simulatedIds('862000000000000', DEVICES);
    await registerDevices({ url: server.url, ...BENCH_ADMIN, protocol: 'teltonika', uniqueIds, speedKmh: 50, stopSeconds: 60 });
    const started = performance.now();
    const saturated = await simulateLoad('teltonika', port, uniqueIds, 0, SECONDS);
    const perSecond = saturated.acknowledged / ((performance.now() - started) / 1000);
    const steady = await steadyCpu(server.child.pid as number, port, uniqueIds);
    return { perSecond, steady };
  } finally {
    await server?.stop();
    await database?.drop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function benchEngine(engine: 'sqlite' | 'postgres', adminUrl: string | undefined): Promise<Figure[]> {
  const label = engine === 'sqlite' ? 'SQLite' : 'PostgreSQL';
  const runs: Record<'on' | 'off', Measured[]> = { on: [], off: [] };
  for (let round = 0; round < ROUNDS; round++) {
    runs.off.push(await measure(engine, adminUrl, 'off'));
    runs.on.push(await measure(engine, adminUrl, 'on'));
  }
  const bestRate = (list: Measured[]) => Math.max(...list.map((run) => run.perSecond));
  const bestCpu = (list: Measured[]) => list.reduce((best, run) => (run.steady.cpuMicrosPerPosition < best.steady.cpuMicrosPerPosition ? run : best));
  const [off, on] = [bestCpu(runs.off).steady, bestCpu(runs.on).steady];
  return [
    { name: `${label}: Teltonika, ${DEVICES} connections, segmentation off`, value: `${bestRate(runs.off).toFixed(0)} positions/s` },
    { name: `${label}: the same, segmentation on`, value: `${bestRate(runs.on).toFixed(0)} positions/s` },
    { name: `${label}: on / off (target >= 0.95)`, value: (bestRate(runs.on) / bestRate(runs.off)).toFixed(2) },
    { name: `${label}: server CPU per position, segmentation off`, value: steadyFigure(off) },
    { name: `${label}: the same, segmentation on`, value: steadyFigure(on) },
    { name: `${label}: CPU on / off (target <= 1.05)`, value: (on.cpuMicrosPerPosition / off.cpuMicrosPerPosition).toFixed(2) },
  ];
}

export function benchSegmentation(): Promise<Figure[]> {
  return onBenchEngines(benchEngine);
}

if (import.meta.main) {
  console.log('\nSegmentation');
  for (const figure of await benchSegmentation()) console.log(`  ${figure.name.padEnd(64)} ${figure.value}`);
}
