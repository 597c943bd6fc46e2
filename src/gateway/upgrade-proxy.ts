import http from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { HttpApp } from '../platform/http/app.ts';

/** An upgrade request's connection, held until the proxy route decides what to do with it. */
export interface PendingUpgrade {
  socket: Duplex;
  head: Buffer;
}

const PENDING = Symbol('pending upgrade');
type UpgradeRequest = IncomingMessage & { [PENDING]?: PendingUpgrade };

/** An upstream that has not answered the upgrade by then is treated as down. */
const UPSTREAM_TIMEOUT_MS = 10_000;
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection']);

/**
 * reply-from proxies HTTP only, so upgrade requests (the /api/socket WebSocket) take this path:
 * each is dispatched through Fastify like any request, so the gateway's hooks authenticate it and
 * a refusal is an ordinary HTTP answer written on the connection; the proxy route then forwards an
 * accepted upgrade with `forwardUpgrade`, which pipes the raw bytes both ways once the upstream
 * has switched protocols (frames pass untouched, TCP carries the backpressure).
 */
export function acceptUpgrades(app: HttpApp): void {
  const tunnels = new Set<Duplex>();
  const onUpgrade = (request: UpgradeRequest, socket: Duplex, head: Buffer) => {
    // Node removes its own error listener before emitting 'upgrade'.
    socket.on('error', () => socket.destroy());
    tunnels.add(socket);
    socket.on('close', () => tunnels.delete(socket));
    request[PENDING] = { socket, head };
    const response = new http.ServerResponse(request);
    response.assignSocket(socket as Socket);
    response.shouldKeepAlive = false;
    // An HTTP answer (a refusal) ends the connection; a forwarded upgrade never finishes this response.
    response.on('finish', () => socket.end());
    app.routing(request, response);
  };
  app.server.on('upgrade', onUpgrade);
  // Tunnels would hold server.close() open until their clients leave; clients reconnect elsewhere.
  app.addHook('preClose', async () => {
    app.server.removeListener('upgrade', onUpgrade);
    for (const socket of tunnels) socket.destroy();
  });
}

export function pendingUpgrade(request: FastifyRequest): PendingUpgrade | undefined {
  return (request.raw as UpgradeRequest)[PENDING];
}

/**
 * Sends the upgrade request, with the headers the gateway's hooks left on it, to `upstream`. On
 * 101 the client's and the upstream's connections are joined; any other answer is relayed as it
 * is. Rejects when the upstream cannot be reached.
 */
export function forwardUpgrade(request: FastifyRequest, reply: FastifyReply, upgrade: PendingUpgrade, upstream: string): Promise<FastifyReply | undefined> {
  return new Promise((resolve, reject) => {
    const url = new URL(request.url, upstream);
    const outgoing = http.request(url, { method: 'GET', headers: { ...request.headers, host: url.host }, timeout: UPSTREAM_TIMEOUT_MS });
    outgoing.on('timeout', () => outgoing.destroy(new Error('the upstream did not answer the upgrade in time')));
    outgoing.on('error', reject);
    outgoing.on('upgrade', (response: IncomingMessage, upstreamSocket: Socket, upstreamHead: Buffer) => {
      reply.hijack();
      const { socket, head } = upgrade;
      upstreamSocket.on('error', () => upstreamSocket.destroy());
      upstreamSocket.on('close', () => socket.destroy());
      socket.on('close', () => upstreamSocket.destroy());
      socket.write(switchingProtocols(response));
      if (upstreamHead.length > 0) socket.write(upstreamHead);
      if (head.length > 0) upstreamSocket.write(head);
      upstreamSocket.setNoDelay(true);
      socket.pipe(upstreamSocket).pipe(socket);
      resolve(undefined);
    });
    outgoing.on('response', (response: IncomingMessage) => {
      reply.code(response.statusCode ?? 502).headers(endToEnd(response.headers));
      resolve(reply.send(response));
    });
    outgoing.end();
  });
}

function switchingProtocols(response: IncomingMessage): string {
  let head = `HTTP/1.1 101 ${response.statusMessage || 'Switching Protocols'}\r\n`;
  const raw = response.rawHeaders;
  for (let index = 0; index + 1 < raw.length; index += 2) head += `${raw[index]}: ${raw[index + 1]}\r\n`;
  return head + '\r\n';
}

function endToEnd(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) kept[name] = value;
  return kept;
}
