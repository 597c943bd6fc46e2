import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../src/config.ts';
import { runUserCommand } from '../src/services/auth/cli.ts';
import { CachedEntitlement } from '../src/services/billing/entitlement.ts';
import { parsePlans } from '../src/services/billing/plans/catalog.ts';
import { startProcess } from '../test/support/processes.ts';
import type { RunningProcess } from '../test/support/processes.ts';
import { measureThroughput } from './measure.ts';
import type { Figure, Throughput } from './measure.ts';
import { benchServerEnv, loginBenchAccount } from './server.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const BENCH_USER = { email: 'bench-plans-user@example.com', password: 'Bench-Password-1' };

/** A plan whose limits every request stays under, so each POST is checked against it and passes. */
const HIGH_LIMIT_PLANS = [{ id: 'bench', name: 'Bench', default: true, limits: { devices: 1_000_000_000, geofences: 1_000_000, shares: 1_000_000, historyDays: 3650 } }];

interface Variant {
  name: string;
  /** SERVICES and plan settings of its process. */
  env: Record<string, string>;
}

/** Checks timed back to back: enough for a stable per-check figure. */
const CHECKS = 1_000_000;

/**
 * The plan check's added cost on POST /api/devices/ by a user (administrators skip it), two ways:
 * - HTTP: a process with the default unlimited plan against one with a PLANS_FILE whose devices limit is high
 *   (every request is checked against a number and passes). Each has its own SQLite database; rounds alternate
 *   so both tables grow alike.
 * - The check itself (a cached limitOf and its assert) timed in this process, as a share of one POST's time.
 */
export async function benchPlans(dataDir: string): Promise<Figure[]> {
  const plansFile = path.join(dataDir, 'bench-plans.json');
  writeFileSync(plansFile, JSON.stringify(HIGH_LIMIT_PLANS));
  const variants: Variant[] = [
    { name: 'default unlimited plan', env: {} },
    { name: 'PLANS_FILE, high devices limit', env: { PLANS_FILE: plansFile } },
  ];
  const processes: RunningProcess[] = [];
  try {
    const targets: { url: string; token: string }[] = [];
    for (const [index, variant] of variants.entries()) {
      const folder = path.join(dataDir, `plans-${index}`);
      mkdirSync(folder, { recursive: true });
      const env = benchServerEnv(folder, { MAX_DEVICES_PER_USER: '1000000', ...variant.env });
      const created = await runUserCommand(loadConfig(env), ['create', '--email', BENCH_USER.email, '--password', BENCH_USER.password]);
      if (created.exitCode !== 0) throw new Error(created.output);
      const server = await startProcess(env);
      processes.push(server);
      targets.push({ url: server.url, token: await loginBenchAccount(server.url, BENCH_USER) });
    }
    const best: (Throughput | undefined)[] = variants.map(() => undefined);
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const [index, target] of targets.entries()) {
        const run = await measureThroughput({
          url: `${target.url}/api/devices/`,
          method: 'POST',
          headers: { authorization: `Bearer ${target.token}`, 'content-type': 'application/json' },
          bodyOf: () => JSON.stringify({ name: 'Bench', uniqueId: randomUUID() }),
          connections: 10,
        });
        if (run.non2xx > 0 || run.errors > 0) throw new Error(`POST /api/devices/ (${variants[index]?.name}) failed: ${run.non2xx} non-2xx, ${run.errors} errors`);
        const known = best[index];
        if (!known || run.requestsPerSecond > known.requestsPerSecond) best[index] = run;
      }
    }
    const [unlimited, limited] = best as [Throughput, Throughput];
    const checkNs = await timeCheck();
    // One connection's share of the server: the time a POST takes, against the time its check takes.
    const requestNs = 1e9 / limited.requestsPerSecond;
    return [
      ...variants.map((variant, index) => ({ name: `POST /api/devices/, ${variant.name}`, value: `${(best[index] as Throughput).requestsPerSecond.toFixed(0)} req/s` })),
      { name: 'ratio PLANS_FILE / unlimited (target >= 0.95)', value: (limited.requestsPerSecond / unlimited.requestsPerSecond).toFixed(3) },
      { name: 'one cached plan check (limitOf, then assert)', value: `${(checkNs / 1000).toFixed(2)} µs` },
      { name: 'check / POST time (target < 5 %)', value: `${((checkNs / requestNs) * 100).toFixed(3)} %` },
    ];
  } finally {
    await Promise.all(processes.map((running) => running.stop()));
  }
}

/** Nanoseconds per cached limitOf and the assert that passes, as devices makes them on every POST. */
async function timeCheck(): Promise<number> {
  const entitlement = new CachedEntitlement({
    load: async () => ({ records: [], override: undefined, administrator: false }),
    catalog: parsePlans(HIGH_LIMIT_PLANS),
    graceDays: 30,
    ttlMs: 60_000,
    maxEntries: 10,
  });
  (await entitlement.limitOf(1, 'devices')).assert(0);
  const started = process.hrtime.bigint();
  for (let check = 0; check < CHECKS; check += 1) (await entitlement.limitOf(1, 'devices')).assert(check);
  return Number(process.hrtime.bigint() - started) / CHECKS;
}
