import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import { registerDevices, simulatedIds } from '../src/cli/simulate.ts';
import { startProcess } from '../test/support/processes.ts';
import type { RunningProcess } from '../test/support/processes.ts';
import type { Figure } from './measure.ts';
import { BENCH_ADMIN, benchServerEnv, loginBenchAdmin } from './server.ts';
import { freePort } from '../test/support/ports.ts';

/**
 * Notifications end to end: OsmAnd devices report alarm positions, each device has one webhook
 * rule, and a local receiver takes the webhooks. Paced at PACED_RATE alarms per second, the delay
 * from each position's arrival at the server (its serverTime) to the webhook's arrival here; at
 * saturation, the deliveries per second. Then ingestion's cost of rules: the same OsmAnd alarm load
 * as fast as it is acknowledged, without rules and with RULES active alarm rules on the same devices
 * (narrowed to an alarm the load never raises, so every event is matched and none is delivered), in one run.
 */

const DEVICES = Number(process.env.BENCH_NOTIFY_DEVICES ?? 200);
const PACED_RATE = 200;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const BURST = 2000;
const RULES = 1000;
const IN_FLIGHT = 32;

/** The webhook receiver: when each delivery arrived, and the arrival at the server of the position behind it. */
async function startReceiver() {
  const arrivals: { at: number; delay: number }[] = [];
  const deliveryIds = new Set<string>();
  let calls = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const at = Date.now();
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { position?: { serverTime: string } };
      calls += 1;
      deliveryIds.add(String(req.headers['trackstack-delivery']));
      if (body.position) arrivals.push({ at, delay: at - Date.parse(body.position.serverTime) });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrivals,
    deliveryIds,
    calls: () => calls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export function percentile(values: number[], share: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))] ?? Number.NaN;
}

/** Alarm reports of the devices, round robin; each device's clock moves a second per report, and its alarm alternates (a repeated alarm raises nothing). */
class AlarmSource {
  readonly #uniqueIds: readonly string[];
  readonly #agent = new Agent({ connections: IN_FLIGHT });
  readonly #base: string;
  readonly #sent = new Map<string, number>();
  #next = 0;
  readonly #start = Math.floor(Date.now() / 1000) - 3 * 3600;

  constructor(osmandUrl: string, uniqueIds: readonly string[]) {
    this.#base = osmandUrl;
    this.#uniqueIds = uniqueIds;
  }

  async send(): Promise<boolean> {
    const id = this.#uniqueIds[this.#next++ % this.#uniqueIds.length] as string;
    const count = (this.#sent.get(id) ?? 0) + 1;
    this.#sent.set(id, count);
    const query = `id=${id}&lat=52.5&lon=13.4&timestamp=${this.#start + count}&alarm=${count % 2 === 0 ? 'sos' : 'general'}`;
    const response = await request(`${this.#base}/?${query}`, { dispatcher: this.#agent });
    await response.body.dump();
    return response.statusCode === 200;
  }

  /** `rate` reports per second for `seconds`. */
  async paced(rate: number, seconds: number): Promise<number> {
    const started = performance.now();
    const sending: Promise<boolean>[] = [];
    for (let index = 0; index < rate * seconds; index++) {
      const due = started + (index * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      sending.push(this.send());
    }
    return (await Promise.all(sending)).filter(Boolean).length;
  }

  /** `count` reports, IN_FLIGHT at a time: how many were acknowledged, and per second. */
  async saturate(count: number): Promise<{ acknowledged: number; perSecond: number }> {
    let left = count;
    let acknowledged = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (left > 0) {
          left -= 1;
          if (await this.send()) acknowledged += 1;
        }
      }),
    );
    return { acknowledged, perSecond: acknowledged / ((performance.now() - started) / 1000) };
  }

  close(): Promise<void> {
    return this.#agent.close();
  }
}

export async function api(base: string, token: string, method: 'GET' | 'POST', url: string, body?: unknown) {
  const response = await request(`${base}${url}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const parsed = (await response.body.json()) as unknown;
  if (response.statusCode >= 300) throw new Error(`${method} ${url}: ${response.statusCode} ${JSON.stringify(parsed)}`);
  return parsed;
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
}

export async function benchNotifications(): Promise<Figure[]> {
  const dir = mkdtempSync(path.join(tmpdir(), 'trackstack-bench-notify-'));
  const receiver = await startReceiver();
  let server: RunningProcess | undefined;
  let source: AlarmSource | undefined;
  try {
    const osmandPort = await freePort();
    server = await startProcess(benchServerEnv(dir, { OSMAND_PORT: String(osmandPort), NOTIFY_ALLOW_PRIVATE_URLS: 'true' }));
    const uniqueIds = simulatedIds('862000000000000', DEVICES);
    await registerDevices({ url: server.url, ...BENCH_ADMIN, protocol: 'osmand', uniqueIds, speedKmh: 50, stopSeconds: 60 });
    const token = await loginBenchAdmin(server.url);
    const devices = (await api(server.url, token, 'GET', '/api/devices/')) as { id: number }[];
    source = new AlarmSource(`http://127.0.0.1:${osmandPort}`, uniqueIds);

    // Every device's first reports, before anything is measured.
    await source.saturate(devices.length * 4);

    for (const device of devices) {
      await api(server.url, token, 'POST', '/api/notifications', { type: 'alarm', deviceIds: [device.id], channels: ['webhook'], attributes: { webhookUrl: receiver.url } });
    }
    receiver.arrivals.length = 0;
    const pacedSent = await source.paced(PACED_RATE, SECONDS);
    await waitFor(() => receiver.arrivals.length >= pacedSent, 30_000);
    const paced = receiver.arrivals.map((arrival) => arrival.delay);

    receiver.arrivals.length = 0;
    const burstStarted = Date.now();
    const burstSent = (await source.saturate(BURST)).acknowledged;
    await waitFor(() => receiver.arrivals.length >= burstSent, 60_000);
    const lastArrival = receiver.arrivals.at(-1)?.at ?? Date.now();
    const burstDelivered = receiver.arrivals.length;
    const deliveriesPerSecond = burstDelivered / ((lastArrival - burstStarted) / 1000);
    const uniqueDeliveries = receiver.deliveryIds.size;
    const callsSoFar = receiver.calls();

    // Ingestion's cost of rules: the delivering rules go; then, alternating so that neither side runs only on a
    // warmer or a fuller database, runs without rules and with 1 000 active alarm rules on the same devices, narrowed
    // to an alarm the load never raises, so every event is matched against them and none adds delivery work.
    const removeRules = async () => {
      const rules = (await api(server!.url, token, 'GET', '/api/notifications')) as { id: number }[];
      for (const rule of rules) {
        const response = await request(`${server!.url}/api/notifications/${rule.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
        await response.body.dump();
      }
    };
    const addRules = async () => {
      for (let index = 0; index < RULES; index++) {
        const device = devices[index % devices.length] as { id: number };
        await api(server!.url, token, 'POST', '/api/notifications', { type: 'alarm', deviceIds: [device.id], channels: ['webhook'], attributes: { webhookUrl: receiver.url, alarms: 'powerCut' } });
      }
    };
    const without: number[] = [];
    const withRules: number[] = [];
    for (let round = 0; round < 2; round++) {
      await removeRules();
      without.push((await source.saturate(SECONDS * 400)).perSecond);
      await addRules();
      withRules.push((await source.saturate(SECONDS * 400)).perSecond);
    }
    const best = (values: number[]) => Math.max(...values);

    return [
      { name: `paced ${PACED_RATE} alarms/s over OsmAnd, ${DEVICES} webhook rules: delivered`, value: `${paced.length} of ${pacedSent}` },
      { name: `arrival -> webhook receiver at ${PACED_RATE}/s, p50 / p99 (target p99 < 1 s)`, value: `${percentile(paced, 0.5)} / ${percentile(paced, 0.99)} ms` },
      { name: `burst of ${BURST} alarms as fast as acknowledged: deliveries/s`, value: `${deliveriesPerSecond.toFixed(0)} (${burstDelivered} of ${burstSent})` },
      { name: 'webhook calls / distinct delivery ids (target 1: each sent once)', value: (callsSoFar / uniqueDeliveries).toFixed(2) },
      { name: 'OsmAnd alarm ingestion without rules (best of 2)', value: `${best(without).toFixed(0)} positions/s` },
      { name: `OsmAnd alarm ingestion with ${RULES} active alarm rules (best of 2)`, value: `${best(withRules).toFixed(0)} positions/s` },
      { name: 'ratio with / without rules (target >= 0.9)', value: (best(withRules) / best(without)).toFixed(2) },
    ];
  } finally {
    await source?.close();
    await server?.stop();
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  console.log('\nNotifications');
  for (const figure of await benchNotifications()) console.log(`  ${figure.name.padEnd(72)} ${figure.value}`);
}
