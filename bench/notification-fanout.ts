import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { registerDevices, simulatedIds } from '../src/cli/simulate.ts';
import { freePort } from '../test/support/ports.ts';
import { startProcess } from '../test/support/processes.ts';
import type { RunningProcess } from '../test/support/processes.ts';
import type { Figure } from './measure.ts';
import { api, percentile } from './notifications.ts';
import { BENCH_ADMIN, benchServerEnv, loginBenchAdmin } from './server.ts';

const RULES = 1000;
const TARGETS = 20;
const BASELINE_READS = 200;
/**
 * BENCH_FANOUT_PROFILE=<dir>: the server runs with `--cpu-prof` and writes its profile into <dir>
 * when it stops (read the top self times with `node bench/cpu-profile.ts <dir>/*.cpuprofile`).
 */
const PROFILE_DIR = process.env.BENCH_FANOUT_PROFILE;

/**
 * One OsmAnd alarm to an account with 1 000 `always` alarm rules and 20 Web Push targets, on a
 * server process over SQLite: the deliveries it queues (one per target), the time until the local
 * push service has all of them, and GET /api/devices/ latency while they drain against a baseline
 * taken just before (target: p95 within 2x).
 */
export async function benchNotificationFanout(): Promise<Figure[]> {
  const dir = mkdtempSync(path.join(tmpdir(), 'trackstack-bench-fanout-'));
  const pushService = await startPushServiceProcess();
  let server: RunningProcess | undefined;
  try {
    const osmandPort = await freePort();
    server = await startProcess(benchServerEnv(dir, { OSMAND_PORT: String(osmandPort), NOTIFY_ALLOW_PRIVATE_URLS: 'true' }), {
      nodeArgs: PROFILE_DIR ? ['--cpu-prof', '--cpu-prof-interval=100', `--cpu-prof-dir=${path.resolve(PROFILE_DIR)}`] : [],
    });
    const base = server.url;
    const [uniqueId] = simulatedIds('863000000000000', 1);
    await registerDevices({ url: base, ...BENCH_ADMIN, protocol: 'osmand', uniqueIds: [uniqueId as string], speedKmh: 50, stopSeconds: 60 });
    const token = await loginBenchAdmin(base);
    const { publicKey } = (await api(base, token, 'GET', '/api/notifications/targets/webpush-key')) as { publicKey: string };
    for (let index = 0; index < TARGETS; index++) await api(base, token, 'POST', '/api/notifications/targets', { kind: 'webpush', subscription: await pushService.subscribe(publicKey) });
    for (let index = 0; index < RULES; index++) await api(base, token, 'POST', '/api/notifications', { type: 'alarm', always: true, channels: ['webpush'] });

    // The first messages load what sending needs (encryption, templates, time zones): not what this measures.
    await api(base, token, 'POST', '/api/notifications/test', { channel: 'webpush' });
    const warmedUp = await pushService.received();
    const read = async () => {
      const started = performance.now();
      const response = await request(`${base}/api/devices/`, { headers: { authorization: `Bearer ${token}` } });
      await response.body.dump();
      if (response.statusCode !== 200) throw new Error(`GET /api/devices/: ${response.statusCode}`);
      return performance.now() - started;
    };
    const baseline: number[] = [];
    for (let index = 0; index < BASELINE_READS; index++) baseline.push(await read());

    const raised = performance.now();
    const alarm = await request(`http://127.0.0.1:${osmandPort}/?id=${uniqueId}&lat=52.5&lon=13.4&timestamp=${Math.floor(Date.now() / 1000)}&alarm=sos`);
    await alarm.body.dump();
    const during: number[] = [];
    let received = warmedUp;
    while (received < warmedUp + TARGETS && performance.now() - raised < 60_000) {
      during.push(await read());
      received = await pushService.received();
    }
    const drainMs = performance.now() - raised;
    const sent = (await api(base, token, 'GET', '/api/notifications/deliveries?status=sent')) as { channel: string }[];

    const p95 = (values: number[]) => percentile(values, 0.95);
    return [
      { name: `1 alarm, ${RULES} always rules x ${TARGETS} Web Push targets: deliveries queued (target ${TARGETS})`, value: String(sent.filter((row) => row.channel === 'webpush').length) },
      { name: 'alarm -> every push service request', value: `${drainMs.toFixed(0)} ms (${received - warmedUp} of ${TARGETS})` },
      { name: 'GET /api/devices/ before, p50 / p95', value: `${percentile(baseline, 0.5).toFixed(1)} / ${p95(baseline).toFixed(1)} ms` },
      { name: `GET /api/devices/ while it drains (${during.length} reads), p50 / p95 / max`, value: `${percentile(during, 0.5).toFixed(1)} / ${p95(during).toFixed(1)} / ${Math.max(...during).toFixed(1)} ms` },
      { name: 'ratio p95 during / before (target <= 2)', value: (p95(during) / p95(baseline)).toFixed(2) },
    ];
  } finally {
    await server?.stop();
    await pushService.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

interface PushServiceProcess {
  subscribe(publicKey: string): Promise<unknown>;
  received(): Promise<number>;
  close(): Promise<void>;
}

/** bench/push-service-process.ts, asked over IPC. */
async function startPushServiceProcess(): Promise<PushServiceProcess> {
  const child: ChildProcess = fork(path.join(import.meta.dirname, 'push-service-process.ts'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await once(child, 'message');
  let nextId = 0;
  const ask = async <T>(request: object, field: string): Promise<T> => {
    const id = ++nextId;
    const answer = new Promise<T>((resolve) => {
      const onMessage = (message: Record<string, unknown>) => {
        if (message.id !== id) return;
        child.off('message', onMessage);
        resolve(message[field] as T);
      };
      child.on('message', onMessage);
    });
    child.send({ id, ...request });
    return answer;
  };
  return {
    subscribe: (publicKey) => ask({ subscribe: publicKey }, 'subscription'),
    received: () => ask<number>({ received: true }, 'received'),
    async close() {
      const exited = once(child, 'exit');
      child.disconnect();
      await exited;
    },
  };
}

if (import.meta.main) {
  console.log('\nNotification fan-out');
  for (const figure of await benchNotificationFanout()) console.log(`  ${figure.name.padEnd(72)} ${figure.value}`);
}
