import type { FastifyBaseLogger } from 'fastify';
import { listenAsConfigured } from '../../../platform/listen-errors.ts';
import { protocolEntry } from '../protocols/registry.ts';
import type { DeviceProtocol, Transport } from '../protocols/registry.ts';
import { ConnectionsPerAddress } from './connection-limit.ts';
import type { IngestDevice, IngestSink } from './sink.ts';
import { listenTcp } from './tcp-server.ts';
import type { Listener } from './tcp-server.ts';
import type { CommandChannel } from './device-link.ts';
import { listenUdp } from './udp-server.ts';

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
  /**
   * Told the protocol of each device a listener identifies, before any of its messages is stored (commands go by it).
   * Once per TCP connection, so the decoded frames that follow never pass through it.
   */
  identified?: (device: IngestDevice, protocol: DeviceProtocol) => Promise<void>;
}

/** The open device listeners of a process, all feeding one sink. */
export class DeviceListeners {
  readonly #options: DeviceListenersOptions;
  readonly #open: { protocol: DeviceProtocol; transport: Transport; listener: Listener }[] = [];
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
    const { host, log } = this.#options;
    const sink = this.#sinkFor(protocol);
    const connectionsPerAddress = this.#connectionsPerAddress;
    const entry = protocolEntry(protocol);
    if (!entry) throw new Error(`no protocol ${protocol} in the registry`);
    const settings = { portVariable: entry.port.variable, port, hostVariable: 'HOST', host };
    // Decoders and OsmAnd's HTTP server are loaded here, where their listener starts: a process without one never loads them.
    const decoder = await entry.decoder?.();
    const udp = decoder && entry.transports.includes('udp');
    const listener = await listenAsConfigured({ ...settings, transport: udp ? 'TCP' : undefined }, async () => {
      if (decoder) return listenTcp({ protocol: decoder, port, host, sink, log, idleTimeoutMs: this.#options.idleTimeoutMs, connectionsPerAddress, commands: this.#options.commands });
      const { listenOsmAnd } = await import('./osmand-server.ts');
      return listenOsmAnd({ port, host, sink, log, logLevel: this.#options.logLevel, connectionsPerAddress });
    });
    this.#open.push({ protocol, transport: decoder ? 'tcp' : 'http', listener });
    if (udp) {
      // Same port number as the TCP listener, so a free port taken for TCP is the UDP port too.
      const udpListener = await listenAsConfigured({ ...settings, port: listener.port, transport: 'UDP' }, () =>
        listenUdp({ protocol: decoder, port: listener.port, host, sink, log }),
      );
      this.#open.push({ protocol, transport: 'udp', listener: udpListener });
    }
    return listener.port;
  }

  /** The sink as the protocol's listeners see it: `identified` is told of each device they identify. */
  #sinkFor(protocol: DeviceProtocol): IngestSink {
    const { sink, identified } = this.#options;
    if (!identified) return sink;
    return {
      identify: async (uniqueId) => {
        const device = await sink.identify(uniqueId);
        if (device) await identified(device, protocol);
        return device;
      },
      accept: (device, name, message, receivedAt) => sink.accept(device, name, message, receivedAt),
      connected: (device) => sink.connected(device),
      disconnected: (device) => sink.disconnected(device),
    };
  }

  /** The listeners open now, by protocol and transport. */
  opened(): { protocol: DeviceProtocol; transport: Transport; port: number }[] {
    return this.#open.map(({ protocol, transport, listener }) => ({ protocol, transport, port: listener.port }));
  }

  /** Stops accepting and closes every device connection. */
  async close(): Promise<void> {
    const open = this.#open.splice(0);
    await Promise.all(open.map(({ listener }) => listener.close()));
  }
}
