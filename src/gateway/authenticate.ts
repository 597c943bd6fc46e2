import type { FastifyRequest } from 'fastify';
import type { HttpApp } from '../platform/http/app.ts';
import { AppError } from '../platform/http/errors.ts';
import { ACCESS_TOKEN_COOKIE, IDENTITY_HEADERS, bearerToken } from '../platform/http/identity.ts';
import '../services/auth/errors.ts'; // declares INVALID_TOKEN and ACCOUNT_EXPIRED, which the gateway raises
import type { AccessTokenVerifier, VerifiedAccessToken } from '../services/auth/tokens/access-tokens.ts';
import type { CachingUserDirectory, UserAccess } from '../services/auth/users/directory.ts';
import { pageOriginCheck } from './own-pages.ts';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
export const LIVE_SOCKET_PATH = '/api/socket';

interface PresentedToken {
  token: string;
  fromCookie: boolean;
}

/** The bearer header wins over the cookie; the WebSocket route also takes `?token=` (browsers cannot set headers there). */
function presentedToken(request: FastifyRequest, isSocket: boolean): PresentedToken | undefined {
  const header = request.headers.authorization;
  if (header !== undefined) return { token: bearerToken(header) ?? '', fromCookie: false };
  const cookie = request.cookies?.[ACCESS_TOKEN_COOKIE];
  if (cookie) return { token: cookie, fromCookie: true };
  if (isSocket) {
    const token = (request.query as Record<string, unknown> | undefined)?.token;
    if (typeof token === 'string' && token) return { token, fromCookie: false };
  }
  return undefined;
}

/**
 * The gateway's front door: strips identity headers a client sent, authenticates the access token,
 * refuses an account whose expiration time has passed (compared with the clock of this request),
 * and passes the user on, as `request.identity` in this process and as X-User-* headers beside the
 * internal token for a service behind the proxy. What a route asks for is its declared access
 * (platform/http/access.ts), on the module's route in this process or on the proxy's route in a
 * gateway-only one. A token verified before, of a user the directory remembers, is answered without
 * a promise, because this runs on every request. `pageOrigins` (PUBLIC_URL, WEB_URL) are the sites
 * whose pages may use the cookie to change state or open the live socket, beside the request's own host.
 */
export function installAuthentication(
  app: HttpApp,
  verifier: AccessTokenVerifier,
  internalToken: string,
  users: CachingUserDirectory,
  pageOrigins: readonly string[],
): void {
  const fromOwnPage = pageOriginCheck(pageOrigins);
  app.addHook('onRequest', (request, _reply, done) => {
    const headers = request.headers;
    for (const name of Object.keys(headers)) if (name.startsWith('x-user-')) delete headers[name];
    delete headers[IDENTITY_HEADERS.internalToken];

    const access = request.routeOptions.config.access;
    // No route: the 404 handler answers, with or without a token. Nor does an anonymous route care who calls.
    if (access === undefined || request.routeOptions.config.anonymous === true) return done();
    // Service-to-service routes are never reachable through the gateway.
    if (access === 'service') return done(new AppError('NOT_FOUND', `Route ${request.method} ${request.url.split('?')[0]} not found`));
    const isPublic = access === 'public';
    const isSocket = request.routeOptions.url === LIVE_SOCKET_PATH;
    const presented = presentedToken(request, isSocket);
    if (!presented) return done(isPublic ? undefined : new AppError('UNAUTHORIZED'));
    const admit = (verified: VerifiedAccessToken | null, account?: UserAccess) =>
      admitVerified(request, { isSocket, isPublic, presented, verified, account, internalToken, fromOwnPage });
    const withAccount = (verified: VerifiedAccessToken | null) => {
      if (!verified) return done(admit(null));
      const remembered = users.peek(verified.userId);
      if (remembered) return done(admit(verified, remembered));
      users.get(verified.userId).then(
        (account) => done(admit(verified, account)),
        // Without the account a public path is answered as for anyone.
        (error: unknown) => done(isPublic ? undefined : (error as Error)),
      );
    };
    const known = presented.token ? verifier.verifyCached(presented.token) : null;
    if (known !== undefined) return withAccount(known);
    verifier.verify(presented.token).then(withAccount, done);
  });
}

/** The outcome for a presented token: undefined to go on (the caller is now on the request), or the error to answer. */
function admitVerified(
  request: FastifyRequest,
  { isSocket, isPublic, presented, verified, account, internalToken, fromOwnPage }: {
    isSocket: boolean;
    isPublic: boolean;
    presented: PresentedToken;
    verified: VerifiedAccessToken | null;
    /** The token's user as the directory knows them; undefined for a deleted one (its sessions are revoked). */
    account?: UserAccess;
    internalToken: string;
    fromOwnPage: (request: FastifyRequest) => boolean;
  },
): AppError | undefined {
  if (!verified) return isPublic ? undefined : new AppError('INVALID_TOKEN');
  // Login and refresh refuse an expired account; its access tokens stop here from the moment it expires.
  const accountExpiry = account?.expirationTime ?? null;
  if (accountExpiry !== null && accountExpiry <= Date.now()) return isPublic ? undefined : new AppError('ACCOUNT_EXPIRED');
  if (presented.fromCookie) {
    // A page of another site can open a WebSocket, or send a request, that carries the cookie; a bearer or ?token= it cannot forge.
    if (isSocket && !fromOwnPage(request)) return new AppError('FORBIDDEN', 'Pages of other sites may not open the socket with the session cookie');
    if (!SAFE_METHODS.has(request.method)) {
      if (!fromOwnPage(request)) return new AppError('FORBIDDEN', 'Pages of other sites may not change state with the session cookie');
      // A cross-site form can send the cookie but not this content type.
      if (!isJson(request)) return new AppError('FORBIDDEN', 'Cookie-authenticated requests that change state must send Content-Type: application/json');
    }
  }
  request.identity = { userId: verified.userId, email: verified.email, sessionId: verified.sessionId };
  const headers = request.headers;
  headers[IDENTITY_HEADERS.userId] = String(verified.userId);
  headers[IDENTITY_HEADERS.email] = verified.email;
  headers[IDENTITY_HEADERS.sessionId] = verified.sessionId;
  headers[IDENTITY_HEADERS.internalToken] = internalToken;
  // The socket outlives this request: the service closes it when the token or the account expires.
  if (isSocket) headers[IDENTITY_HEADERS.tokenExpires] = String(accountExpiry === null ? verified.expiresAt : Math.min(verified.expiresAt, accountExpiry));
  return undefined;
}

function isJson(request: FastifyRequest): boolean {
  return /^application\/json\b/i.test(request.headers['content-type'] ?? '');
}
