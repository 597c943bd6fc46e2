import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { enforcePlausibility } from '../protocols/plausibility.ts';
import { ProtocolError } from '../protocols/types.ts';
import type { ConnectionState, DecodedMessage, TcpProtocol } from '../protocols/types.ts';
import type { CommandChannel, DeviceLink } from './device-link.ts';
import type { ConnectionsPerAddress } from './connection-limit.ts';
import { ReceiveBuffer } from './receive-buffer.ts';
import { DeviceRefusedError } from './sink.ts';
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
  /** Shared by the process's listeners: a connection beyond its address's share is closed at once. */
  connectionsPerAddress: ConnectionsPerAddress;
  /** Where connections are offered for commands and the devices' answers reported. */
  commands?: CommandChannel;
}

export interface Listener {
  port: number;
  close(): Promise<void>;
}

const DEFAULT_MAX_BUFFER = 64 * 1024;

/** A message handed to the sink, and what to answer once it is durable. */
interface Unacknowledged {
  stored: Promise<unknown>;
  ack: Buffer | undefined;
}

/**
 * One protocol's TCP listener. Each connection's bytes are split into frames and decoded in order.
 * The frames of one read are handed to the sink together (so they share a group commit), and their
 * acknowledgements are written in frame order, each only after the sink has made its message durable.
 * Garbage, a bad checksum, an implausible value (see plausibility.ts), an unknown device or an
 * overfull buffer closes the connection, logged once; what was stored before the bad frame is still
 * acknowledged.
 */
export async function listenTcp(options: TcpListenerOptions): Promise<Listener> {
  const { protocol, sink, log } = options;
  const maxBuffer = options.maxBufferBytes ?? DEFAULT_MAX_BUFFER;
  // Each open connection and how it ends gracefully (close()).
  const connections = new Map<net.Socket, () => Promise<void>>();

  const server = net.createServer((socket) => {
    const address = socket.remoteAddress ?? '';
    const admission = options.connectionsPerAddress.open(address);
    if (!admission.accepted) {
      if (admission.firstRefusal) log.warn({ protocol: protocol.name, remote: address }, 'device connection refused: too many connections from this address');
      socket.destroy();
      return;
    }
    socket.setNoDelay(true);
    socket.setTimeout(options.idleTimeoutMs, () => drop('idle timeout', undefined, 'info'));
    const state: ConnectionState = {};
    let device: IngestDevice | undefined;
    const buffer = new ReceiveBuffer();
    let busy = false;
    // The latest run of drain(), which a graceful close waits for.
    let handled: Promise<void> = Promise.resolve();
    let dropped = false;
    let closing = false;
    let unacknowledged: Unacknowledged[] = [];
    // The connection as commands see it, offered once the device's login is answered.
    let link: DeviceLink | undefined;
    let linkPending = false;
    const write = (frame: Buffer): boolean => {
      if (dropped || socket.destroyed || socket.writableEnded) return false;
      socket.write(frame);
      return true;
    };

    const drop = (reason: string, error?: unknown, level: 'warn' | 'info' = 'warn') => {
      if (dropped) return;
      dropped = true;
      log[level]({ protocol: protocol.name, remote: socket.remoteAddress, uniqueId: state.uniqueId, err: error }, `device connection closed: ${reason}`);
      socket.destroy();
    };

    /** Writes the acknowledgements of the messages handed over so far, in order; false once the connection is gone. */
    const acknowledge = async (): Promise<boolean> => {
      const waiting = unacknowledged;
      unacknowledged = [];
      for (const { stored, ack } of waiting) {
        try {
          await stored;
        } catch (error) {
          if (error instanceof DeviceRefusedError) drop(error.message);
          else drop('the message could not be stored', error);
          return false;
        }
        if (ack && !socket.destroyed) socket.write(ack);
      }
      return !socket.destroyed;
    };

    const identify = async (uniqueIds: readonly string[]): Promise<boolean> => {
      if (!(await acknowledge())) return false;
      let identified: IngestDevice | undefined;
      for (const uniqueId of uniqueIds) {
        identified = await sink.identify(uniqueId);
        if (identified) break;
      }
      if (!identified) {
        if (protocol.loginReply) socket.write(protocol.loginReply(false));
        drop(`unknown or disabled device ${uniqueIds.join(' / ')}`);
        return false;
      }
      if (device) sink.disconnected(device);
      if (device && link) options.commands?.detach(device.id, link);
      link = undefined;
      linkPending = options.commands !== undefined;
      device = identified;
      state.uniqueId = identified.uniqueId;
      sink.connected(identified);
      return true;
    };

    const handle = async (message: DecodedMessage): Promise<boolean> => {
      const uniqueIds = message.uniqueId === undefined ? [] : [message.uniqueId, ...(message.uniqueIdAlternatives ?? [])];
      const identifying = uniqueIds.length > 0 && !uniqueIds.includes(device?.uniqueId as string);
      if (identifying && !(await identify(uniqueIds))) return false;
      if (!device) {
        if (message.positions.length > 0 || message.statuses.length > 0) {
          drop('data before the device identified itself');
          return false;
        }
        // Nothing to store (e.g. a time request before the login): answer at once.
        unacknowledged.push({ stored: Promise.resolve(), ack: message.ack });
        return true;
      }
      if (options.commands && carriesResult(message)) {
        const commandId = await options.commands.answered(device.id, message.answerTo);
        if (commandId !== undefined) linkAnswer(message, commandId);
      }
      // Every message counts (status online), even one with nothing to store; a Teltonika-style
      // login reply is the login's acknowledgement, sent once the device shows online.
      const stored = sink.accept(device, protocol.name, message, new Date());
      // Awaited in acknowledge(); a rejection after the connection is gone is nobody's to handle.
      stored.catch(() => undefined);
      unacknowledged.push({ stored, ack: identifying && protocol.loginReply ? protocol.loginReply(true) : message.ack });
      return true;
    };

    const drain = async () => {
      busy = true;
      socket.pause();
      try {
        for (;;) {
          const { frames, consumed } = protocol.splitFrames(buffer.view(), state);
          if (frames.length === 0) break;
          buffer.consume(consumed);
          for (const frame of frames) {
            const now = new Date();
            const message = protocol.decode(frame, state, now);
            enforcePlausibility(message, now);
            if (!(await handle(message))) return;
          }
          if (!(await acknowledge())) return;
          if (linkPending && device) {
            linkPending = false;
            link = { protocol, uniqueId: device.uniqueId, write };
            options.commands?.attach(device.id, link);
          }
        }
      } catch (error) {
        const badData = error instanceof ProtocolError;
        if (badData) await acknowledge();
        drop(badData ? `bad data (${error.message})` : 'processing failed', badData ? undefined : error);
        return;
      } finally {
        busy = false;
      }
      if (!socket.destroyed && !closing) socket.resume();
    };

    socket.on('data', (chunk: Buffer) => {
      if (closing) return;
      if (buffer.length + chunk.length > maxBuffer) return drop(`buffer over ${maxBuffer} bytes without a whole frame`);
      buffer.append(chunk);
      if (!busy) handled = drain();
    });
    // Reads no more, lets the frames being handled be stored and acknowledged, then ends the connection
    // once those acknowledgements are written: the device sends the rest to whichever instance it reaches next.
    connections.set(socket, async () => {
      closing = true;
      socket.pause();
      await handled;
      if (!socket.destroyed) {
        await new Promise<void>((resolve) => {
          socket.once('close', () => resolve());
          socket.end(() => resolve());
        });
      }
      socket.destroy();
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      connections.delete(socket);
      options.connectionsPerAddress.close(address);
      if (device) sink.disconnected(device);
      if (device && link) options.commands?.detach(device.id, link);
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    /** Stops accepting and ends every connection once what it had sent is stored and acknowledged. */
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all([...connections.values()].map((end) => end()));
      await closed;
    },
  };
}

function carriesResult(message: DecodedMessage): boolean {
  return message.statuses.some((status) => typeof status.attributes['result'] === 'string')
    || message.positions.some((position) => typeof position.attributes['result'] === 'string');
}

/** The answer's `result` names its command (attributes.commandId), which the commandResult event carries on. */
function linkAnswer(message: DecodedMessage, commandId: number): void {
  for (const report of [...message.statuses, ...message.positions]) {
    if (typeof report.attributes['result'] === 'string') report.attributes['commandId'] = commandId;
  }
}
