import type { FastifyBaseLogger } from 'fastify';
import { listenAsConfigured } from '../../../platform/listen-errors.ts';
import { gl200Protocol } from '../protocols/gl200.ts';
import { gt06Protocol } from '../protocols/gt06.ts';
import { galileoProtocol } from '../protocols/galileo.ts';
import { gps103Protocol } from '../protocols/gps103.ts';
import { h02Protocol } from '../protocols/h02.ts';
import { jt808Protocol } from '../protocols/jt808.ts';
import { meitrackProtocol } from '../protocols/meitrack.ts';
import { ruptelaProtocol } from '../protocols/ruptela.ts';
import { suntechProtocol } from '../protocols/suntech.ts';
import { tk103Protocol } from '../protocols/tk103.ts';
import { teltonikaProtocol } from '../protocols/teltonika.ts';
import { watchProtocol } from '../protocols/watch.ts';
import { wialonProtocol } from '../protocols/wialon.ts';
import type { TcpProtocol, TcpProtocolName } from '../protocols/types.ts';
import { ConnectionsPerAddress } from './connection-limit.ts';
import { listenOsmAnd } from './osmand-server.ts';
import type { IngestSink } from './sink.ts';
import { listenTcp } from './tcp-server.ts';
import type { Listener } from './tcp-server.ts';
import type { CommandChannel } from './device-link.ts';
import { listenUdp } from './udp-server.ts';

/** The protocols a process can listen for, each on its Traccar port (`<NAME>_PORT`). */
export const DEVICE_PROTOCOLS = ['osmand', 'gt06', 'teltonika', 'h02', 'jt808', 'gps103', 'tk103', 'wialon', 'watch', 'meitrack', 'suntech', 'ruptela', 'galileo', 'gl200'] as const satisfies readonly ('osmand' | TcpProtocolName)[];
export type DeviceProtocol = (typeof DEVICE_PROTOCOLS)[number];

export const TCP_PROTOCOLS: Record<Exclude<DeviceProtocol, 'osmand'>, TcpProtocol> = {
  gt06: gt06Protocol,
  teltonika: teltonikaProtocol,
  h02: h02Protocol,
  jt808: jt808Protocol,
  gps103: gps103Protocol,
  tk103: tk103Protocol,
  wialon: wialonProtocol,
  watch: watchProtocol,
  meitrack: meitrackProtocol,
  suntech: suntechProtocol,
  ruptela: ruptelaProtocol,
  galileo: galileoProtocol,
  gl200: gl200Protocol,
};

/** Protocols whose devices commonly report over UDP too: they also get a UDP listener on the same port. */
export const UDP_PROTOCOLS: ReadonlySet<DeviceProtocol> = new Set<DeviceProtocol>(['gps103', 'tk103', 'wialon', 'meitrack', 'gl200']);

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
  /** Offered the TCP connections, for commands. */
  commands?: CommandChannel;
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

  /**
   * Opens a listener for the protocol; port 0 takes a free port. Answers the port bound. A port
   * already taken fails with a ConfigError naming the protocol's variable (`<NAME>_PORT`).
   */
  async listen(protocol: DeviceProtocol, port: number): Promise<number> {
    const { sink, host, log } = this.#options;
    const connectionsPerAddress = this.#connectionsPerAddress;
    const settings = { portVariable: `${protocol.toUpperCase()}_PORT`, port, hostVariable: 'HOST', host };
    const udpProtocol = protocol !== 'osmand' && UDP_PROTOCOLS.has(protocol) ? TCP_PROTOCOLS[protocol] : undefined;
    const listener = await listenAsConfigured({ ...settings, transport: udpProtocol ? 'TCP' : undefined }, () =>
      protocol === 'osmand'
        ? listenOsmAnd({ port, host, sink, log, logLevel: this.#options.logLevel, connectionsPerAddress })
        : listenTcp({ protocol: TCP_PROTOCOLS[protocol], port, host, sink, log, idleTimeoutMs: this.#options.idleTimeoutMs, connectionsPerAddress, commands: this.#options.commands }),
    );
    this.#open.push({ protocol, listener });
    if (udpProtocol) {
      // Same port number as the TCP listener, so a free port taken for TCP is the UDP port too.
      const udp = await listenAsConfigured({ ...settings, port: listener.port, transport: 'UDP' }, () =>
        listenUdp({ protocol: udpProtocol, port: listener.port, host, sink, log }),
      );
      this.#open.push({ protocol, listener: udp });
    }
    return listener.port;
  }

  /** Stops accepting and closes every device connection. */
  async close(): Promise<void> {
    const open = this.#open.splice(0);
    await Promise.all(open.map(({ listener }) => listener.close()));
  }
}
