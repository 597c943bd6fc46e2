import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { startProcess } from '../test/support/processes.ts';
import type { RunningProcess } from '../test/support/processes.ts';
import { Tracker } from '../test/services/tracking/commands/tracker.ts';
import { freePort } from '../test/support/ports.ts';
import { freshDatabase, percentile } from './ingestion.ts';
import type { Figure } from './measure.ts';
import { benchServerEnv, loginBenchAdmin } from './server.ts';

/**
 * Commands (DESIGN §5.7): the time from POST /api/commands/send to the frame arriving at a simulated GT06 tracker,
 * with the connection on the instance that took the request, on another instance (routed through Redis), and for a
 * queued command, from the tracker's reconnection to the frame. Sequential sends, one tracker; two server processes on
 * one database (PostgreSQL when BENCH_DATABASE_URL or TEST_DATABASE_URL is set, else a SQLite file) and, for the
 * second case, one Redis (BENCH_REDIS_URL or TEST_REDIS_URL).
 */

const SENDS = Number(process.env.BENCH_COMMAND_SENDS ?? 300);
const RECONNECTS = Number(process.env.BENCH_COMMAND_RECONNECTS ?? 50);
const UNIQUE_ID = '862000000000001';

function figure(name: string, samples: number[], target: string): Figure {
  const rounded = (value: number) => value.toFixed(1);
  return { name: `${name}, p50 / p99 (${target})`, value: `${rounded(percentile(samples, 0.5))} / ${rounded(percentile(samples, 0.99))} ms (${samples.length} commands)` };
}

export async function benchCommands(): Promise<Figure[]> {
  const dir = mkdtempSync(path.join(tmpdir(), 'trackstack-bench-commands-'));
  const postgresUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  const redisUrl = process.env.BENCH_REDIS_URL ?? process.env.TEST_REDIS_URL;
  const database = await freshDatabase(postgresUrl ? 'postgres' : 'sqlite', dir, postgresUrl);
  const processes: RunningProcess[] = [];
  try {
    const ports = { first: await freePort(), second: await freePort() };
    const shared = { DATABASE_URL: database.url, EVENT_CHANNEL: `trackstack-bench-commands:${process.pid}`, ...(redisUrl ? { REDIS_URL: redisUrl } : {}) };
    // One after the other: both run the migrations at start.
    const first = await startProcess(benchServerEnv(dir, { ...shared, GT06_PORT: String(ports.first) }));
    processes.push(first);
    const second = await startProcess(benchServerEnv(dir, { ...shared, GT06_PORT: String(ports.second) }));
    processes.push(second);
    const token = await loginBenchAdmin(first.url);
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const created = await request(`${first.url}/api/devices/`, { method: 'POST', headers, body: JSON.stringify({ name: 'Bench tracker', uniqueId: UNIQUE_ID }) });
    const deviceId = ((await created.body.json()) as { id: number }).id;
    const send = async (base: string): Promise<number> => {
      const response = await request(`${base}/api/commands/send`, { method: 'POST', headers, body: JSON.stringify({ deviceId, type: 'custom', attributes: { data: 'STATUS#' } }) });
      const body = await response.body.text();
      if (response.statusCode !== 200 && response.statusCode !== 202) throw new Error(`send answered ${response.statusCode}: ${body}`);
      return response.statusCode;
    };
    const timedSends = async (base: string, tracker: Tracker): Promise<number[]> => {
      const samples: number[] = [];
      for (let index = 0; index < SENDS; index++) {
        const started = performance.now();
        const arrived = tracker.nextCommand().then(() => performance.now());
        if ((await send(base)) !== 200) throw new Error('a send to a connected tracker was queued');
        samples.push((await arrived) - started);
      }
      return samples;
    };

    const figures: Figure[] = [];
    const onFirst = await Tracker.connect('gt06', ports.first, UNIQUE_ID);
    figures.push(figure('send -> frame, connection on the same instance', await timedSends(first.url, onFirst), 'target p99 < 20 ms'));
    await onFirst.close();
    // The first instance sees the close asynchronously: until then it would still write to that connection.
    await new Promise((resolve) => setTimeout(resolve, 500));

    if (redisUrl) {
      const onSecond = await Tracker.connect('gt06', ports.second, UNIQUE_ID);
      figures.push(figure('send -> frame, connection on the other instance (Redis)', await timedSends(first.url, onSecond), 'target p99 < 100 ms'));
      await onSecond.close();
    } else {
      figures.push({ name: 'send -> frame through Redis', value: 'skipped: set BENCH_REDIS_URL (or TEST_REDIS_URL)' });
    }

    // Queued: nobody holds the connection; the frame goes out when the tracker logs in again (the reconnection counts
    // from opening the TCP connection, login and its answer included).
    const queued: number[] = [];
    for (let index = 0; index < RECONNECTS; index++) {
      // The server sees a close asynchronously: a send just after it may still be written to the closing connection.
      while ((await send(first.url)) !== 202) await new Promise((resolve) => setTimeout(resolve, 20));
      const started = performance.now();
      const tracker = await Tracker.connect('gt06', index % 2 === 0 ? ports.first : ports.second, UNIQUE_ID);
      await tracker.nextCommand();
      queued.push(performance.now() - started);
      await tracker.close();
      // Until both instances have seen the close, one of them may still write the next command to the dead connection.
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    figures.push(figure('queued command, reconnection -> frame', queued, 'login included'));
    return figures.map((entry) => ({ ...entry, name: `${postgresUrl ? 'PostgreSQL' : 'SQLite'}: ${entry.name}` }));
  } finally {
    await Promise.all(processes.map((running) => running.stop()));
    await database.drop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  console.log('\nCommands');
  for (const entry of await benchCommands()) console.log(`  ${entry.name.padEnd(80)} ${entry.value}`);
}
