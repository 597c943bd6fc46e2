import net from 'node:net';
import type { AddressInfo } from 'node:net';

/** A local port nothing listens on: bound once, then released (for a listener configured by port number). */
export async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
