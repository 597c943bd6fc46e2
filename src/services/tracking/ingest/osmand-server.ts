import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { createHttpApp } from '../../../platform/http/app.ts';
import { AppError } from '../errors.ts';
import { decodeOsmAnd } from '../protocols/osmand/decoder.ts';
import { enforcePlausibility } from '../protocols/plausibility.ts';
import { ProtocolError } from '../protocols/types.ts';
import type { ConnectionsPerAddress } from './connection-limit.ts';
import { DeviceRefusedError } from './sink.ts';
import type { IngestSink } from './sink.ts';
import type { Listener } from './tcp-server.ts';

/** Traccar Client posts one report at a time; a JSON batch of locations stays far below this. */
const BODY_LIMIT = 64 * 1024;

/**
 * The OsmAnd protocol (Traccar Client and OsmAnd-compatible apps): one report per HTTP request, on
 * any path, as a query string, a form body or Traccar Client's JSON. 200 once the position is
 * durable, 400 for a report without an id or with a malformed, overlong or implausible value, 404
 * for an unknown or disabled device. The app's own request log stays at warn: a report per device
 * per few seconds would drown everything else.
 */
export async function listenOsmAnd(options: {
  port: number;
  host: string;
  sink: IngestSink;
  log: FastifyBaseLogger;
  logLevel: string;
  connectionsPerAddress: ConnectionsPerAddress;
}): Promise<Listener> {
  const { sink, log, connectionsPerAddress } = options;
  const app = createHttpApp({ logLevel: options.logLevel === 'info' ? 'warn' : options.logLevel, bodyLimit: BODY_LIMIT, trustProxy: undefined });
  app.server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const admission = connectionsPerAddress.open(address);
    if (!admission.accepted) {
      if (admission.firstRefusal) log.warn({ protocol: 'osmand', remote: address }, 'device connection refused: too many connections from this address');
      socket.destroy();
      return;
    }
    socket.once('close', () => connectionsPerAddress.close(address));
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  app.route({
    method: ['GET', 'POST'],
    url: '/*',
    handler: async (request, reply) => {
      let message;
      try {
        const now = new Date();
        message = decodeOsmAnd(
          {
            query: request.query as Record<string, string | string[] | undefined>,
            contentType: request.headers['content-type'],
            body: request.body as Buffer | undefined,
          },
          now,
        );
        enforcePlausibility(message, now);
      } catch (error) {
        if (error instanceof ProtocolError) throw new AppError('BAD_REQUEST', error.message);
        throw error;
      }
      const device = await sink.identify(message.uniqueId);
      if (!device) throw new AppError('NOT_FOUND', 'Unknown or disabled device');
      try {
        await sink.accept(device, 'osmand', message, new Date());
      } catch (error) {
        if (error instanceof DeviceRefusedError) throw new AppError('NOT_FOUND', 'Unknown or disabled device');
        throw error;
      }
      reply.code(200).send();
    },
  });
  await app.listen({ port: options.port, host: options.host });
  const address = app.server.address();
  return {
    port: typeof address === 'object' && address ? address.port : options.port,
    close: () => app.close(),
  };
}
