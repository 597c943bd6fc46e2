import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { measureThroughput } from './measure.ts';
import { benchServerEnv, loginBenchAdmin } from './server.ts';

export interface BenchFigure {
  name: string;
  value: number;
  unit: string;
}

const CONCURRENT_LOGINS = 50;

interface Histogram {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

/**
 * The auth figures of `npm run bench`, against a server of its own (bench/auth-server.ts, a child
 * process with RATE_LIMITS=off) because the event-loop delay must be read inside the server:
 * - GET /api/auth/validate req/s with a valid access_token cookie (autocannon from this process);
 * - the server's event-loop delay p99 while 50 logins (argon2id each) run at once, beside the same
 *   figure for an idle second: hashing runs on libuv's pool, so the two should be close.
 */
export async function benchAuth(): Promise<BenchFigure[]> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'trackstack-auth-bench-'));
  const child = fork(path.join(import.meta.dirname, 'auth-server.ts'), [], {
    env: { PATH: process.env.PATH, ...benchServerEnv(dataDir) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const { url } = (await nextMessage(child)) as { url: string };
    const token = await loginBenchAdmin(url);

    const validate = await measureThroughput({ url: `${url}/api/auth/validate`, headers: { cookie: `access_token=${token}` } });
    if (validate.non2xx > 0 || validate.errors > 0) throw new Error(`GET /validate failed during the run: ${validate.non2xx} non-2xx, ${validate.errors} errors`);

    const idle = await histogramDuring(child, () => new Promise((resolve) => setTimeout(resolve, 1000)));
    const started = performance.now();
    const busy = await histogramDuring(child, () => Promise.all(Array.from({ length: CONCURRENT_LOGINS }, () => loginBenchAdmin(url))));
    const loginsMs = performance.now() - started;

    return [
      { name: 'auth: GET /api/auth/validate, valid cookie', value: Math.round(validate.requestsPerSecond), unit: 'req/s' },
      { name: `auth: event-loop delay p99 during ${CONCURRENT_LOGINS} concurrent logins`, value: round(busy.p99Ms), unit: 'ms' },
      { name: 'auth: event-loop delay p99 idle (reference)', value: round(idle.p99Ms), unit: 'ms' },
      { name: `auth: ${CONCURRENT_LOGINS} concurrent logins, all answered in`, value: Math.round(loginsMs), unit: 'ms' },
    ];
  } finally {
    child.disconnect();
    await once(child, 'exit');
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function histogramDuring(child: ChildProcess, work: () => Promise<unknown>): Promise<Histogram> {
  child.send('start-histogram');
  await nextMessage(child);
  await work();
  child.send('read-histogram');
  return (await nextMessage(child)) as Histogram;
}

async function nextMessage(child: ChildProcess): Promise<unknown> {
  const [message] = await Promise.race([
    once(child, 'message'),
    once(child, 'exit').then(([code]) => {
      throw new Error(`the auth bench server exited with ${code}`);
    }),
  ]);
  return message;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

if (import.meta.main) {
  for (const figure of await benchAuth()) console.log(`  ${figure.name.padEnd(60)} ${figure.value} ${figure.unit}`);
}
