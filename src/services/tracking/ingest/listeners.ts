import type { FastifyBaseLogger } from 'fastify';
import { gt06Protocol } from '../protocols/gt06.ts';
import { h02Protocol } from '../protocols/h02.ts';
import { teltonikaProtocol } from '../protocols/teltonika.ts';
import type { TcpProtocol } from '../protocols/types.ts';
import { ConnectionsPerAddress } from './connection-limit.ts';
import { listenOsmAnd } from './osmand-server.ts';
import type { IngestSink } from './sink.ts';
import { listenTcp } from './tcp-server.ts';
import type { Listener } from './tcp-server.ts';

export const DEVICE_PROTOCOLS = ['osmand', 'gt06', 'teltonika', 'h02'] as const;
export type DeviceProtocol = (typeof DEVICE_PROTOCOLS)[number];

const TCP_PROTOCOLS: Record<Exclude<DeviceProtocol, 'osmand'>, TcpProtocol> = {
  gt06: gt06Protocol,
  teltonika: teltonikaProtocol,
  h02: h02Protocol,
};

export interface DeviceListenersOptions {
  sink: IngestSink;
  /** The address every device listener binds (HOST). */
  host: string;
  /** A silent TCP connection is closed after this long (STATUS_TIMEOUT). */
  idleTimeoutMs: number;
  /** Connections one remote address may hold open across all the listeners (DEVICE_CONNECTIONS_PER_IP). */
  connectionsPerIp: number;
  log: FastifyBaseLogger;
  logLevel: string;
}

/** The open device listeners of a process, all feeding one sink. */
export class DeviceListeners {
  readonly #options: DeviceListenersOptions;
  readonly #open: { protocol: DeviceProtocol; listener: Listener }[] = [];
  readonly #connectionsPerAddress: ConnectionsPerAddress;

  constructor(options: DeviceListenersOptions) {
    this.#options = options;
    this.#connectionsPerAddress = new ConnectionsPerAddress(options.connectionsPerIp);
  }

  /** Opens a listener for the protocol; port 0 takes a free port. Answers the port bound. */
  async listen(protocol: DeviceProtocol, port: number): Promise<number> {
    const { sink, host, log } = this.#options;
    const connectionsPerAddress = this.#connectionsPerAddress;
    const listener =
      protocol === 'osmand'
        ? await listenOsmAnd({ port, host, sink, log, logLevel: this.#options.logLevel, connectionsPerAddress })
        : await listenTcp({ protocol: TCP_PROTOCOLS[protocol], port, host, sink, log, idleTimeoutMs: this.#options.idleTimeoutMs, connectionsPerAddress });
    this.#open.push({ protocol, listener });
    return listener.port;
  }

  /** Stops accepting and closes every device connection. */
  async close(): Promise<void> {
    const open = this.#open.splice(0);
    await Promise.all(open.map(({ listener }) => listener.close()));
  }
}
