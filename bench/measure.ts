import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

/** One line of the bench report. */
export interface Figure {
  name: string;
  value: string;
}

export interface Throughput {
  requestsPerSecond: number;
  non2xx: number;
  errors: number;
}

/** Load from this process (separate from the server's): average requests/s over the run. */
export async function measureThroughput(options: {
  url: string;
  headers?: Record<string, string>;
  method?: 'GET' | 'POST' | 'HEAD';
  body?: string;
  /** A fresh body for every request (e.g. a new device's uniqueId), instead of `body`. */
  bodyOf?: () => string;
  connections?: number;
  seconds?: number;
}): Promise<Throughput> {
  const { bodyOf } = options;
  const result = await autocannon({
    url: options.url,
    method: options.method ?? 'GET',
    headers: options.headers,
    body: options.body,
    ...(bodyOf ? { requests: [{ setupRequest: (request: object) => ({ ...request, body: bodyOf() }) }] } : {}),
    connections: options.connections ?? 50,
    duration: options.seconds ?? Number(process.env.BENCH_SECONDS ?? 8),
  });
  return { requestsPerSecond: result.requests.average, non2xx: result.non2xx, errors: result.errors };
}

/** Runs the pair alternately, `rounds` times, and keeps each side's best run: the machine is shared and noisy. */
export async function comparePair(
  rounds: number,
  baseline: () => Promise<Throughput>,
  candidate: () => Promise<Throughput>,
): Promise<{ baseline: Throughput; candidate: Throughput; ratio: number }> {
  let best: { baseline?: Throughput; candidate?: Throughput } = {};
  for (let round = 0; round < rounds; round++) {
    const a = await baseline();
    const b = await candidate();
    best = {
      baseline: !best.baseline || a.requestsPerSecond > best.baseline.requestsPerSecond ? a : best.baseline,
      candidate: !best.candidate || b.requestsPerSecond > best.candidate.requestsPerSecond ? b : best.candidate,
    };
  }
  const { baseline: a, candidate: b } = best as { baseline: Throughput; candidate: Throughput };
  return { baseline: a, candidate: b, ratio: b.requestsPerSecond / a.requestsPerSecond };
}

/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in hundredths of a second. */
const TICK_MS = 10;

/** User plus system CPU time of a process so far, all its threads, in ms, from /proc/<pid>/stat. */
export function processCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}
