import type { FastifyRequest } from 'fastify';
import { secretMatcher } from '../crypto.ts';
import { AppError } from './errors.ts';
import type { HttpApp } from './app.ts';

/** Who is calling, as established by the gateway. */
export interface Identity {
  userId: number;
  email: string;
  sessionId: string;
}

/** Headers the gateway sets after authenticating; clients can never set them (the gateway strips X-User-*). */
export const IDENTITY_HEADERS = {
  userId: 'x-user-id',
  email: 'x-user-email',
  sessionId: 'x-user-session',
  internalToken: 'x-internal-token',
  /**
   * On the live socket's upgrade request: when the access token (or the account) that opened it
   * expires, in epoch milliseconds. The socket outlives the request, so the service needs it.
   */
  tokenExpires: 'x-user-token-expires',
} as const;

/** The HttpOnly cookie that carries the access token of a browser signed in (DESIGN §5.2). */
export const ACCESS_TOKEN_COOKIE = 'access_token';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated user, or null. */
    identity: Identity | null;
    /** True for a service-to-service call: the internal token without a user. */
    fromService: boolean;
  }
}

/**
 * Services trust X-User-Id only beside a valid X-Internal-Token, so a request sent straight to a
 * service with a forged X-User-Id carries no identity.
 */
export function installIdentity(app: HttpApp, internalToken: string): void {
  const isInternalToken = secretMatcher(internalToken);
  app.decorateRequest('identity', null);
  app.decorateRequest('fromService', false);
  app.addHook('onRequest', (request, _reply, done) => {
    // Where the gateway runs in this process it has already put the caller on the request; only a
    // call forwarded from another process needs its headers and internal token checked.
    if (request.identity === null) readForwardedIdentity(request, isInternalToken);
    done();
  });
}

function readForwardedIdentity(request: FastifyRequest, isInternalToken: (presented: string) => boolean): void {
  const presented = request.headers[IDENTITY_HEADERS.internalToken];
  if (typeof presented !== 'string' || !isInternalToken(presented)) return;
  const userId = Number(request.headers[IDENTITY_HEADERS.userId]);
  const email = request.headers[IDENTITY_HEADERS.email];
  const sessionId = request.headers[IDENTITY_HEADERS.sessionId];
  if (Number.isSafeInteger(userId) && userId > 0) {
    request.identity = {
      userId,
      email: typeof email === 'string' ? email : '',
      sessionId: typeof sessionId === 'string' ? sessionId : '',
    };
  } else {
    request.fromService = true;
  }
}

const BEARER = /^Bearer\s+(\S+)$/i;

/** The token of an `Authorization: Bearer <token>` header; undefined for any other header or none. */
export function bearerToken(header: string | undefined): string | undefined {
  return header === undefined ? undefined : BEARER.exec(header.trim())?.[1];
}

export function requireIdentity(request: FastifyRequest): Identity {
  if (!request.identity) throw new AppError('UNAUTHORIZED');
  return request.identity;
}
