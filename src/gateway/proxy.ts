import replyFrom from '@fastify/reply-from';
import type { FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import type { ServiceName } from '../config.ts';
import type { RouteAccessTable } from '../platform/http/access.ts';
import { REQUEST_ID_HEADER } from '../platform/http/app.ts';
import type { HttpApp } from '../platform/http/app.ts';
import { AppError } from '../platform/http/errors.ts';
import { LIVE_SOCKET_PATH } from './authenticate.ts';
import { acceptUpgrades, forwardUpgrade, pendingUpgrade } from './upgrade-proxy.ts';

/** The service answers and logs under the gateway's request id, so one id follows a request through every process. */
function forwardRequestId(request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  request.headers[REQUEST_ID_HEADER] = request.id;
  done();
}

/** A service this process forwards to: its base URL and its route table. */
export interface Upstream {
  url: string;
  routes: RouteAccessTable;
}

/**
 * Split mode: a gateway-only process answers each route of the services it fronts, as their route
 * tables declare them, by forwarding the request, body untouched (webhook signatures cover the raw
 * bytes), to the service. Matching the very routes the service registers gives every path the
 * service's own answer to "which route is this": unknown paths are 404 here, and each route's
 * declared access is known before the request leaves.
 */
export async function installProxy(app: HttpApp, upstreams: Partial<Record<ServiceName, Upstream>>): Promise<void> {
  // The live socket's upgrade needs its own forwarding; only a process that proxies tracking sees one.
  if (upstreams.tracking) acceptUpgrades(app);
  // A context of its own: the raw bodies are for the forwarded routes only, not for the modules this process runs.
  await app.register(async (proxy) => {
    await proxy.register(replyFrom, { undici: { connections: 128, pipelining: 1, keepAliveTimeout: 30_000 } });
    proxy.removeAllContentTypeParsers();
    // The body stays the raw stream, which reply-from pipes to the upstream as it is.
    proxy.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

    // OPTIONS stays unrouted: services answer none, and the web app's preflights are the gateway's (cross-origin.ts).
    for (const [service, upstream] of Object.entries(upstreams) as [ServiceName, Upstream][]) {
      for (const route of Object.keys(upstream.routes)) {
        const [method, url] = route.split(' ') as [HTTPMethods, string];
        proxy.route({
          method,
          url,
          schema: { hide: true },
          onRequest: forwardRequestId,
          handler: (request, reply) => forward(request, reply, service, upstream.url),
        });
      }
    }
  });
}

function forward(request: FastifyRequest, reply: FastifyReply, service: ServiceName, upstream: string) {
  const upgrade = pendingUpgrade(request);
  if (upgrade) {
    if (request.routeOptions.url !== LIVE_SOCKET_PATH) throw new AppError('NOT_FOUND', `No WebSocket at ${request.url.split('?')[0]}`);
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
}
