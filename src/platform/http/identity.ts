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
} as const;

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
  app.addHook('onRequest', async (request) => {
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
  });
}

export function requireIdentity(request: FastifyRequest): Identity {
  if (!request.identity) throw new AppError('UNAUTHORIZED');
  return request.identity;
}
