import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startProcess } from '../test/support/processes.ts';
import type { RunningProcess } from '../test/support/processes.ts';
import { benchAuth } from './auth.ts';
import { benchDecode } from './decode.ts';
import { benchCommands } from './commands.ts';
import { benchDecodeNewProtocols } from './decode-new-protocols.ts';
import { benchIngestion } from './ingestion.ts';
import { benchPlans } from './plans.ts';
import { benchRegression } from './regression.ts';
import { benchReports } from './reports.ts';
import { benchNotifications } from './notifications.ts';
import { benchNotificationFanout } from './notification-fanout.ts';
import { benchOutbox } from './outbox.ts';
import { comparePair, measureThroughput } from './measure.ts';
import { benchScale } from './scale.ts';
import { benchSegmentation } from './segmentation.ts';
import type { Figure, Throughput } from './measure.ts';
import { benchServerEnv, loginBenchAdmin } from './server.ts';
import { benchTracking } from './tracking.ts';
import { benchWeb } from './web.ts';

/**
 * `npm run bench`: every figure is a ratio against a baseline measured in the same run, on the
 * same machine, because this machine is shared and noisy. Servers run as their own processes;
 * the load comes from this one.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);

/** The baseline's best run, for the sections that report a ratio to it. */
let baselineBest: Throughput | undefined;

async function benchGateway(baseline: RunningProcess, app: RunningProcess, token: string): Promise<Figure[]> {
  const { baseline: a, candidate: b, ratio } = await comparePair(
    ROUNDS,
    () => measureThroughput({ url: `${baseline.url}/json` }),
    () => measureThroughput({ url: `${app.url}/api/devices/`, headers: { authorization: `Bearer ${token}` } }),
  );
  if (b.non2xx > 0 || b.errors > 0) throw new Error(`GET /api/devices/ failed during the run: ${b.non2xx} non-2xx, ${b.errors} errors`);
  baselineBest = a;
  return [
    { name: '(a) bare Fastify JSON route', value: `${a.requestsPerSecond.toFixed(0)} req/s` },
    { name: '(b) GET /api/devices/ through the gateway, bearer', value: `${b.requestsPerSecond.toFixed(0)} req/s` },
    { name: 'ratio b/a (target >= 0.5)', value: ratio.toFixed(2) },
  ];
}

async function benchAuthSection(): Promise<Figure[]> {
  const figures = await benchAuth();
  const rendered = figures.map((figure) => ({ name: figure.name.replace(/^auth: /, ''), value: `${figure.value} ${figure.unit}` }));
  const validate = figures.find((figure) => figure.unit === 'req/s');
  if (validate && baselineBest) {
    rendered.splice(1, 0, { name: 'ratio validate / bare Fastify route', value: (validate.value / baselineBest.requestsPerSecond).toFixed(2) });
  }
  return rendered;
}

const dataDir = mkdtempSync(path.join(tmpdir(), 'trackstack-bench-'));
const processes: RunningProcess[] = [];
try {
  const baseline = await startProcess({}, { script: path.resolve(import.meta.dirname, 'baseline-server.ts') });
  processes.push(baseline);
  const app = await startProcess(benchServerEnv(dataDir));
  processes.push(app);
  const token = await loginBenchAdmin(app.url);

  const sections: [string, () => Promise<Figure[]>][] = [
    ['Gateway', () => benchGateway(baseline, app, token)],
    ['Auth', () => benchAuthSection()],
    ['Tracking', () => benchTracking({ baseUrl: app.url, token, dataDir, databaseUrl: `sqlite:${path.join(dataDir, 'trackstack.db')}` })],
    ['Ingestion', () => benchIngestion()],
    ['Segmentation', () => benchSegmentation()],
    ['Regression', () => benchRegression()],
    ['Plans', () => benchPlans(dataDir)],
    ['Decode', async () => benchDecode()],
    ['Commands', () => benchCommands()],
    ['Scale', () => benchScale()],
    ['Web', () => benchWeb()],
    ['Decode-new', async () => benchDecodeNewProtocols()],
    ['Notifications', () => benchNotifications()],
    ['Notification fan-out', () => benchNotificationFanout()],
    ['Outbox', () => benchOutbox()],
    ['Reports', () => benchReports()],
  ];
  // `npm run bench -- gateway ingestion` runs only the named sections.
  const wanted = process.argv.slice(2).map((name) => name.toLowerCase());
  for (const [title, run] of sections.filter(([title]) => wanted.length === 0 || wanted.includes(title.toLowerCase()))) {
    console.log(`\n${title}`);
    const figures = await run();
    // One column of values per section, as wide as its longest name.
    const width = Math.max(...figures.map((figure) => figure.name.length));
    for (const figure of figures) console.log(`  ${figure.name.padEnd(width)}  ${figure.value}`);
  }
} finally {
  await Promise.all(processes.map((running) => running.stop()));
  rmSync(dataDir, { recursive: true, force: true });
}
