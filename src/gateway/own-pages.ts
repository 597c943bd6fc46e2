import type { FastifyRequest } from 'fastify';

/**
 * Whether a request comes from a page of this server, judged by its `Origin`: the origin of
 * PUBLIC_URL or WEB_URL, or the request's own scheme and host (the server reached under another of
 * its names, e.g. 127.0.0.1 where PUBLIC_URL says localhost). A request without `Origin` is not from
 * a page of another site (browsers send it on every WebSocket and every unsafe request), so it passes.
 *
 * The own-host rule cannot be turned against a user: a browser writes `Host` from the address it
 * sends to and no page may set it, so Origin equal to it means the page was loaded from that very
 * address. A client forging both has no victim's cookie to use, and a name of an attacker's that
 * resolves to this server (DNS rebinding) matches itself but gets no cookie: the browser keeps
 * ours for our host name. X-Forwarded-Host and -Proto count only from TRUST_PROXY addresses.
 */
export function pageOriginCheck(configuredUrls: readonly string[]): (request: FastifyRequest) => boolean {
  const configured = new Set(configuredUrls.map((url) => new URL(url).origin));
  return (request) => {
    const origin = request.headers.origin;
    if (origin === undefined || configured.has(origin)) return true;
    return origin === `${request.protocol}://${request.host.toLowerCase()}`;
  };
}
