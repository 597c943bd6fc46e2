import { monitorEventLoopDelay } from 'node:perf_hooks';
import { loadConfig } from '../src/config.ts';
import { createServer } from '../src/server.ts';

/**
 * The all-in-one server as `npm start` builds it, plus an event-loop delay histogram that the
 * auth bench (its parent, over the IPC channel) starts and reads. The server itself exposes nothing new.
 */
const server = await createServer(loadConfig());
await server.app.listen({ port: 0, host: '127.0.0.1' });
const address = server.app.server.address();
const histogram = monitorEventLoopDelay({ resolution: 1 });
const send = (message: unknown) => process.send?.(message);

process.on('message', (message) => {
  if (message === 'start-histogram') {
    histogram.reset();
    histogram.enable();
    send({ started: true });
  } else if (message === 'read-histogram') {
    histogram.disable();
    send({ p50Ms: histogram.percentile(50) / 1e6, p99Ms: histogram.percentile(99) / 1e6, maxMs: histogram.max / 1e6 });
  }
});
process.on('disconnect', () => void server.close().then(() => process.exit(0)));
send({ url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` });
