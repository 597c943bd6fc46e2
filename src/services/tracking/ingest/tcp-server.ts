import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { ProtocolError } from '../protocols/types.ts';
import type { ConnectionState, DecodedMessage, TcpProtocol } from '../protocols/types.ts';
import type { IngestDevice, IngestSink } from './sink.ts';

export interface TcpListenerOptions {
  protocol: TcpProtocol;
  port: number;
  host: string;
  sink: IngestSink;
  log: FastifyBaseLogger;
  /** Bytes a connection may hold without a whole frame before it is dropped. */
  maxBufferBytes?: number;
  /** A connection silent this long is closed. */
  idleTimeoutMs: number;
}

export interface Listener {
  port: number;
  close(): Promise<void>;
}

const DEFAULT_MAX_BUFFER = 64 * 1024;

/**
 * One protocol's TCP listener. Each connection's bytes are split into frames and decoded in order;
 * a frame's acknowledgement is written only after the sink has made its positions durable.
 * Garbage, a bad checksum, an unknown device or an overfull buffer closes the connection, logged once.
 */
export async function listenTcp(options: TcpListenerOptions): Promise<Listener> {
  const { protocol, sink, log } = options;
  const maxBuffer = options.maxBufferBytes ?? DEFAULT_MAX_BUFFER;
  const sockets = new Set<net.Socket>();

  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.setNoDelay(true);
    socket.setTimeout(options.idleTimeoutMs, () => socket.destroy());
    const state: ConnectionState = {};
    let device: IngestDevice | undefined;
    let buffer: Buffer = Buffer.alloc(0);
    let busy = false;

    const drop = (reason: string, error?: unknown) => {
      if (socket.destroyed) return;
      log.warn({ protocol: protocol.name, remote: socket.remoteAddress, uniqueId: state.uniqueId, err: error }, `device connection closed: ${reason}`);
      socket.destroy();
    };

    const handle = async (message: DecodedMessage): Promise<boolean> => {
      if (message.uniqueId !== undefined && message.uniqueId !== device?.uniqueId) {
        const identified = await sink.identify(message.uniqueId);
        if (!identified) {
          if (protocol.loginReply) socket.write(protocol.loginReply(false));
          drop(`unknown or disabled device ${message.uniqueId}`);
          return false;
        }
        if (device) sink.disconnected(device);
        device = identified;
        state.uniqueId = identified.uniqueId;
        sink.connected(identified);
        if (protocol.loginReply) socket.write(protocol.loginReply(true));
      }
      if (message.positions.length > 0 || message.statuses.length > 0) {
        if (!device) {
          drop('data before the device identified itself');
          return false;
        }
        await sink.accept(device, protocol.name, message, new Date());
      }
      if (message.ack && !socket.destroyed) socket.write(message.ack);
      return true;
    };

    const drain = async () => {
      busy = true;
      socket.pause();
      try {
        for (;;) {
          const { frames, consumed } = protocol.splitFrames(buffer, state);
          if (frames.length === 0) break;
          buffer = buffer.subarray(consumed);
          for (const frame of frames) {
            if (!(await handle(protocol.decode(frame, state, new Date())))) return;
          }
        }
      } catch (error) {
        drop(error instanceof ProtocolError ? `bad data (${error.message})` : 'processing failed', error instanceof ProtocolError ? undefined : error);
        return;
      } finally {
        busy = false;
      }
      if (!socket.destroyed) socket.resume();
    };

    socket.on('data', (chunk: Buffer) => {
      buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
      if (buffer.length > maxBuffer) return drop(`buffer over ${maxBuffer} bytes without a whole frame`);
      if (!busy) void drain();
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      sockets.delete(socket);
      if (device) sink.disconnected(device);
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
