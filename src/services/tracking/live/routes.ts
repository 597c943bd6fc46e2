import websocket from '@fastify/websocket';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { HttpApp } from '../../../platform/http/app.ts';
import { AppError } from '../errors.ts';
import { IDENTITY_HEADERS, requireIdentity } from '../../../platform/http/identity.ts';
import type { LiveHub } from './hub.ts';
import { errorResponses } from '../../../platform/http/schemas.ts';

/** Clients have nothing to say on the socket; anything larger than this from them closes it (1009). */
const MAX_CLIENT_MESSAGE_BYTES = 4096;

/**
 * GET /api/socket: the WebSocket of live updates. The gateway has authenticated the upgrade
 * request by then (bearer, cookie or ?token=), and refused the cookie from pages of other sites (it
 * sees the Host the browser used, which a service behind the proxy does not); a refusal is an
 * ordinary HTTP answer, before any upgrade.
 */
export async function registerLiveRoutes(app: HttpApp, hub: LiveHub): Promise<void> {
  // Added before the plugin's own preClose hook, which would close the sockets without a code.
  app.addHook('preClose', async () => hub.stop());
  await app.register(websocket, {
    options: { maxPayload: MAX_CLIENT_MESSAGE_BYTES },
    // A malformed or oversized frame is the client's fault, and ws has already closed with 1002 or
    // 1009: not worth an error line per bad client. Anything else (the handler failing) is ours.
    errorHandler: (error, socket, request) => {
      const code: unknown = (error as Error & { code?: unknown }).code;
      const fromClient = typeof code === 'string' && code.startsWith('WS_ERR_');
      request.log[fromClient ? 'debug' : 'error']({ err: error }, fromClient ? 'live: the client sent a bad frame' : 'live: socket failed');
      socket.terminate();
    },
  });
  // The plugin ends a refused upgrade's connection only when its own onRequest hook ran; the
  // gateway's runs first and may refuse (401) before it, which would leave the connection open.
  app.addHook('onResponse', (request, _reply, done) => {
    if (isUpgrade(request)) request.raw.socket.destroy();
    done();
  });

  app.route({
    method: 'GET',
    url: '/api/socket',
    schema: {
      tags: ['live'],
      summary: 'Live updates over WebSocket: positions, events and devices as they happen (docs/live-updates.md)',
      description:
        'Upgrade with a bearer token, the access_token cookie or ?token=. Messages are JSON: {"positions": [...]} on connect ' +
        '(latest of each device the user may see positions of), then {"positions"}, {"events"}, {"devices"} as they happen, ' +
        'and {} every 55 s. Close codes: 4401 session revoked or token expired, 4408 slow consumer, 1001 server shutting down.',
      response: {
        101: Type.Null({ description: 'Switching Protocols' }),
        ...errorResponses(401, 403, 426, 429),
      },
    },
    preValidation: async (request) => {
      const identity = requireIdentity(request);
      if (!hub.mayConnect(identity.userId)) throw new AppError('RATE_LIMITED', 'Too many live connections for this account');
    },
    handler: async () => {
      throw new AppError('WEBSOCKET_REQUIRED');
    },
    wsHandler: (socket, request) => hub.connect(socket, requireIdentity(request), tokenExpiresAt(request)),
  });
}

/** Node hands such a request to the 'upgrade' listeners: its connection speaks HTTP no more, whatever the answer. */
function isUpgrade(request: FastifyRequest): boolean {
  return request.headers.upgrade !== undefined && /\bupgrade\b/i.test(request.headers.connection ?? '');
}

/** Trusted like X-User-Id: only requests with an identity reach here, and those carry the internal token. */
function tokenExpiresAt(request: FastifyRequest): number | undefined {
  const value = Number(request.headers[IDENTITY_HEADERS.tokenExpires]);
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
}
