import assert from 'node:assert/strict';
import { STATUS_CODES } from 'node:http';
import type { LightMyRequestResponse } from 'fastify';
import type { Server } from '../../src/server.ts';
import type { TestLogin } from './server.ts';

/**
 * The error body every failure shares (DESIGN §5.1): asserts the status, the stable code, the
 * body's own statusCode, its reason phrase, that there is a message, and, when given, what the message says.
 */
export function assertError(response: LightMyRequestResponse, status: number, code: string, message?: RegExp): void {
  assert.equal(response.statusCode, status, response.body);
  const body = response.json();
  assert.equal(body.code, code, response.body);
  assert.equal(body.statusCode, status, response.body);
  assert.equal(body.error, STATUS_CODES[status], response.body);
  assert.equal(typeof body.message, 'string', response.body);
  if (message) assert.match(body.message, message);
}

/** A session started by the auth module directly. */
export interface SignedIn extends TestLogin {
  email: string;
}

/** A session started through POST /api/auth/login, as a client starts one: it has a refresh token. */
export interface SignedInWithPassword extends Omit<SignedIn, 'sessionId'> {
  refreshToken: string;
}

/**
 * Signs a user in. Without a password the auth module starts the session directly (the user is
 * created, verified, if new; no mail, no rate limit). With one, the existing user logs in through
 * POST /api/auth/login, which must answer 200.
 */
export async function signIn(server: Pick<Server, 'auth' | 'app'>, email: string, options?: { administrator?: boolean }): Promise<SignedIn>;
export async function signIn(server: Pick<Server, 'auth' | 'app'>, email: string, options: { password: string }): Promise<SignedInWithPassword>;
export async function signIn(
  server: Pick<Server, 'auth' | 'app'>,
  email: string,
  options: { administrator?: boolean; password?: string } = {},
): Promise<SignedIn | SignedInWithPassword> {
  if (options.password !== undefined) {
    const response = await server.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email, password: options.password } });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json();
    return { email, userId: body.user.id, token: body.accessToken, refreshToken: body.refreshToken, authorization: { authorization: `Bearer ${body.accessToken}` } };
  }
  const auth = server.auth;
  if (!auth) throw new Error('the auth module is not running');
  const existing = await auth.api.users.findByEmail(email);
  const userId = existing?.id ?? (await auth.api.accounts.create({ email, administrator: options.administrator, emailVerified: true })).id;
  const sessionId = await auth.api.sessions.start({ userId });
  const token = await auth.api.accessTokens.issue({ userId, email: email.toLowerCase(), sessionId });
  return { email, userId, sessionId, token, authorization: { authorization: `Bearer ${token}` } };
}
