import { randomInt } from 'node:crypto';
import net from 'node:net';

/**
 * Where free ports are looked for: below Linux's ephemeral range (32768–60999), from which the
 * system hands out the ports of everything that binds port 0. A port found here and listened on a
 * moment later cannot be taken in between by such a listener of another test process running beside.
 */
const FIRST_PORT = 20_000;
const PORT_COUNT = 12_000;
const ATTEMPTS = 50;

/** A local port nothing listens on (for a listener configured by port number, or a URL no one answers). */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const port = FIRST_PORT + randomInt(PORT_COUNT);
    if (await isFree(port)) return port;
  }
  throw new Error(`no free port among ${ATTEMPTS} tried from ${FIRST_PORT} to ${FIRST_PORT + PORT_COUNT - 1}`);
}

function isFree(port: number): Promise<boolean> {
  const probe = net.createServer();
  return new Promise((resolve) => {
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}
