import type { FastifyReply, FastifyRequest } from 'fastify';
import { ACCESS_TOKEN_COOKIE, bearerToken } from '../../platform/http/identity.ts';

export const REFRESH_TOKEN_COOKIE = 'refresh_token';
/** The refresh token goes only to auth endpoints, never to devices, tracking or billing. */
const REFRESH_COOKIE_PATH = '/api/auth';
/**
 * Readable by scripts and secret-free: it says only that this browser holds a sign-in, so the web
 * app asks for the profile then and never sends a request bound to fail with 401 when signed out.
 * It lives as long as the refresh token, which can bring an expired access token back.
 */
const SIGNED_IN_COOKIE = 'signed_in';

export interface CookiePolicy {
  /** Secure when PUBLIC_URL is https. */
  secure: boolean;
  accessTtlSeconds: number;
  refreshTtlSeconds: number;
}

export function cookiePolicy(publicUrl: string, ttl: { accessToken: number; refreshToken: number }): CookiePolicy {
  return { secure: publicUrl.startsWith('https:'), accessTtlSeconds: ttl.accessToken, refreshTtlSeconds: ttl.refreshToken };
}

/** The tokens HttpOnly (no script reads them), all SameSite=Lax (no cross-site POST carries them). */
export function setSessionCookies(reply: FastifyReply, policy: CookiePolicy, tokens: { accessToken: string; refreshToken: string }): void {
  reply.setCookie(ACCESS_TOKEN_COOKIE, tokens.accessToken, {
    httpOnly: true,
    sameSite: 'lax',
    secure: policy.secure,
    path: '/',
    maxAge: policy.accessTtlSeconds,
  });
  reply.setCookie(REFRESH_TOKEN_COOKIE, tokens.refreshToken, {
    httpOnly: true,
    sameSite: 'lax',
    secure: policy.secure,
    path: REFRESH_COOKIE_PATH,
    maxAge: policy.refreshTtlSeconds,
  });
  reply.setCookie(SIGNED_IN_COOKIE, '1', { sameSite: 'lax', secure: policy.secure, path: '/', maxAge: policy.refreshTtlSeconds });
}

export function clearSessionCookies(reply: FastifyReply, policy: CookiePolicy): void {
  reply.clearCookie(ACCESS_TOKEN_COOKIE, { httpOnly: true, sameSite: 'lax', secure: policy.secure, path: '/' });
  reply.clearCookie(REFRESH_TOKEN_COOKIE, { httpOnly: true, sameSite: 'lax', secure: policy.secure, path: REFRESH_COOKIE_PATH });
  reply.clearCookie(SIGNED_IN_COOKIE, { sameSite: 'lax', secure: policy.secure, path: '/' });
}

/** The bearer header wins over the cookie, as at the gateway. */
export function presentedAccessToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header !== undefined) return bearerToken(header);
  return request.cookies?.[ACCESS_TOKEN_COOKIE] || undefined;
}

export function clientInfo(request: FastifyRequest): { ip: string; userAgent: string | undefined } {
  return { ip: request.ip, userAgent: request.headers['user-agent'] };
}
