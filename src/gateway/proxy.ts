import replyFrom from '@fastify/reply-from';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceName } from '../config.ts';
import { REQUEST_ID_HEADER } from '../platform/http/app.ts';
import type { HttpApp } from '../platform/http/app.ts';
import { AppError } from '../platform/http/errors.ts';
import { LIVE_SOCKET_PATH } from './authenticate.ts';
import { ownerOf, pathOf } from './routing.ts';
import { acceptUpgrades, forwardUpgrade, pendingUpgrade } from './upgrade-proxy.ts';

const PROXIED_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** The service answers and logs under the gateway's request id, so one id follows a request through every process. */
function forwardRequestId(request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  request.headers[REQUEST_ID_HEADER] = request.id;
  done();
}

/**
 * Split mode: a gateway-only process forwards every request, body untouched (webhook signatures
 * cover the raw bytes), to the service that owns its path.
 */
export async function installProxy(app: HttpApp, upstreams: Partial<Record<ServiceName, string>>): Promise<void> {
  await app.register(replyFrom, { undici: { connections: 128, pipelining: 1, keepAliveTimeout: 30_000 } });
  app.removeAllContentTypeParsers();
  // The body stays the raw stream, which reply-from pipes to the upstream as it is.
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
  // The live socket's upgrade needs its own forwarding; only a process that proxies tracking sees one.
  if (upstreams.tracking) acceptUpgrades(app);

  // OPTIONS stays here: services answer none, and the web app's preflights are the gateway's (cross-origin.ts).
  app.route({
    method: PROXIED_METHODS,
    url: '/*',
    schema: { hide: true },
    onRequest: forwardRequestId,
    handler: (request, reply) => {
      const service = ownerOf(pathOf(request.url));
      const upstream = service ? upstreams[service] : undefined;
      if (!upstream) throw new AppError('NOT_FOUND', `Route ${request.method} ${pathOf(request.url)} not found`);
      const upgrade = pendingUpgrade(request);
      if (upgrade) {
        if (pathOf(request.url) !== LIVE_SOCKET_PATH) throw new AppError('NOT_FOUND', `No WebSocket at ${pathOf(request.url)}`);
        return forwardUpgrade(request, reply, upgrade, upstream).catch((error: unknown) => {
          request.log.warn({ err: error, upstream: service }, 'upstream failed the upgrade');
          throw new AppError('UPSTREAM_UNAVAILABLE');
        });
      }
      return reply.from(`${upstream}${request.url}`, {
        onError: (failedReply, { error }) => {
          request.log.warn({ err: error, upstream: service }, 'upstream failed');
          failedReply.send(new AppError('UPSTREAM_UNAVAILABLE'));
        },
      });
    },
  });
}
