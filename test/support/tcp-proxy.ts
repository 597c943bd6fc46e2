import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP relay in front of a real server, so a test can cut the connection (an unreachable
 * database) or slow it down, and bring it back on the same port. Or a port held for a server that
 * has not started yet: a process whose configuration must name it is given the relay's, and the
 * relay is pointed at the server once the server has bound port 0 and said where it listens.
 */
export class TcpProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  /** Where connections go; until it is set, they are closed at once. */
  target: { host: string; port: number } | undefined;
  port = 0;
  /** Milliseconds each chunk from the target is held back. */
  delayMs = 0;

  constructor(target?: { host: string; port: number }) {
    this.target = target;
  }

  async start(): Promise<void> {
    const server = net.createServer((client) => {
      if (!this.target) {
        client.destroy();
        return;
      }
      const upstream = net.connect(this.target.port, this.target.host);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.on('data', (chunk) => {
        if (this.delayMs === 0) client.write(chunk);
        else setTimeout(() => client.write(chunk), this.delayMs);
      });
      upstream.on('end', () => client.end());
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Refuses new connections and drops the open ones, as a database that went away. */
  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
