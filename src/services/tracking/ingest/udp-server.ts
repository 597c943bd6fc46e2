import dgram from 'node:dgram';
import type { FastifyBaseLogger } from 'fastify';
import { enforcePlausibility } from '../protocols/plausibility.ts';
import { ProtocolError } from '../protocols/types.ts';
import type { DecodedMessage, TcpProtocol } from '../protocols/types.ts';
import { DeviceRefusedError } from './sink.ts';
import type { IngestDevice, IngestSink } from './sink.ts';
import type { Listener } from './tcp-server.ts';

export interface UdpListenerOptions {
  protocol: TcpProtocol;
  port: number;
  host: string;
  sink: IngestSink;
  log: FastifyBaseLogger;
  /** Datagrams being decoded or stored at once; more are dropped (the device sends again). */
  maxInFlight?: number;
}

const DEFAULT_MAX_IN_FLIGHT = 10_000;

/** The device of a datagram: every UDP message names its device, there is no session to remember it. */
async function identify(sink: IngestSink, message: DecodedMessage): Promise<IngestDevice | undefined> {
  if (message.uniqueId === undefined) return undefined;
  for (const uniqueId of [message.uniqueId, ...(message.uniqueIdAlternatives ?? [])]) {
    const device = await sink.identify(uniqueId);
    if (device) return device;
  }
  return undefined;
}

/**
 * One protocol's UDP listener, on the same port as its TCP one. Each datagram holds whole frames,
 * decoded as on a fresh connection; each message must identify its device. The answer goes back to
 * the sender's address once the message is durable, as over TCP. A bad or unknown-device datagram
 * is dropped without an answer (logged at debug: UDP has no connection to close, and a scanner
 * must not fill the log).
 */
export async function listenUdp(options: UdpListenerOptions): Promise<Listener> {
  const { protocol, sink, log } = options;
  const maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
  const socket = dgram.createSocket(options.host.includes(':') ? 'udp6' : 'udp4');
  let inFlight = 0;
  let closing = false;
  // Resolves close() once the last datagram in flight is answered.
  let idle: (() => void) | undefined;

  const handle = async (datagram: Buffer, remote: dgram.RemoteInfo) => {
    const answers: Buffer[] = [];
    try {
      const { frames } = protocol.splitFrames(datagram, {});
      for (const frame of frames) {
        const now = new Date();
        const message = protocol.decode(frame, {}, now);
        enforcePlausibility(message, now);
        const device = await identify(sink, message);
        if (!device) {
          log.debug({ protocol: protocol.name, remote: remote.address, uniqueId: message.uniqueId }, 'device datagram dropped: unknown or disabled device');
          break;
        }
        await sink.accept(device, protocol.name, message, new Date());
        if (message.ack) answers.push(message.ack);
      }
    } catch (error) {
      if (error instanceof ProtocolError || error instanceof DeviceRefusedError) {
        log.debug({ protocol: protocol.name, remote: remote.address, err: error }, 'device datagram dropped');
      } else {
        log.warn({ protocol: protocol.name, remote: remote.address, err: error }, 'device datagram could not be stored');
      }
    }
    // What was stored before a bad frame is still answered, as over TCP.
    if (answers.length > 0) socket.send(Buffer.concat(answers), remote.port, remote.address);
  };

  socket.on('message', (datagram, remote) => {
    if (closing || inFlight >= maxInFlight) return;
    inFlight += 1;
    void handle(datagram, remote).finally(() => {
      inFlight -= 1;
      if (inFlight === 0) idle?.();
    });
  });
  socket.on('error', (error) => log.warn({ protocol: protocol.name, err: error }, 'device UDP socket error'));

  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(options.port, options.host, () => {
      socket.off('error', reject);
      resolve();
    });
  });
  return {
    port: socket.address().port,
    /** Takes no more datagrams and answers those in flight once they are stored, then closes the socket. */
    async close() {
      closing = true;
      if (inFlight > 0) await new Promise<void>((resolve) => (idle = resolve));
      await new Promise<void>((resolve) => socket.close(() => resolve()));
    },
  };
}
