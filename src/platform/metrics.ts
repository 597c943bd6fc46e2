import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import { createHttpApp } from './http/app.ts';
import type { HttpApp } from './http/app.ts';

/*
 * Each process has one prom-client Registry: the platform's metrics below and whatever a module
 * registers on it (`registers: [ctx.metrics]`), served by `listenMetrics`.
 */

/**
 * Adds the process metrics (CPU, memory, event-loop lag, GC, handles) and the latency of every
 * HTTP answer, labelled by route pattern, method and status class: never the raw URL, so the
 * number of series stays bounded whatever clients request (a path no route matches is `unmatched`).
 */
export function measureProcess(app: HttpApp, metrics: Registry): void {
  collectDefaultMetrics({ register: metrics });
  const latency = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from request to answer, by route pattern, method and status class',
    labelNames: ['route', 'method', 'status_class'] as const,
    registers: [metrics],
  });
  app.addHook('onResponse', (request, reply, done) => {
    latency.observe(
      { route: request.routeOptions.url ?? 'unmatched', method: request.method, status_class: `${Math.floor(reply.statusCode / 100)}xx` },
      reply.elapsedTime / 1000,
    );
    done();
  });
}

export interface MetricsListener {
  url: string;
  close(): Promise<void>;
}

/**
 * Serves the metrics as Prometheus text at GET /metrics on a listener of its own, so they never
 * pass the gateway; anything else there is 404. Its requests are logged at warn only: a scrape
 * every few seconds would drown the log.
 */
export async function listenMetrics(metrics: Registry, options: { port: number; host: string; logLevel: string }): Promise<MetricsListener> {
  const app = createHttpApp({ logLevel: options.logLevel === 'info' ? 'warn' : options.logLevel, bodyLimit: 1024, trustProxy: undefined });
  app.get('/metrics', async (_request, reply) => reply.type(metrics.contentType).send(await metrics.metrics()));
  await app.listen({ port: options.port, host: options.host });
  const { port } = app.server.address() as AddressInfo;
  return {
    url: `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}/metrics`,
    close: () => app.close(),
  };
}
