import type { LightMyRequestResponse } from 'fastify';
import { Secret, TOTP } from 'otpauth';
import type { TestServer } from '../../../support/server.ts';

/** Meets every password rule. */
export const PASSWORD = 'Sturdy-Lantern-42';

/** A user made directly through the account service (no mail, no rate limit). */
export async function createUser(
  server: TestServer,
  user: { email: string; password?: string; verified?: boolean; administrator?: boolean; name?: string },
): Promise<number> {
  const row = await server.auth!.api.accounts.create({
    email: user.email,
    password: user.password ?? PASSWORD,
    name: user.name ?? null,
    administrator: user.administrator,
    emailVerified: user.verified ?? true,
  });
  return row.id;
}

export function postJson(server: Pick<TestServer, 'app'>, url: string, payload: unknown, headers: Record<string, string> = {}) {
  return server.app.inject({ method: 'POST', url, payload: payload as object, headers });
}

export function login(server: Pick<TestServer, 'app'>, email: string, password = PASSWORD, headers: Record<string, string> = {}) {
  return postJson(server, '/api/auth/login', { email, password }, headers);
}

export function cookie(response: LightMyRequestResponse, name: string) {
  return (response.cookies as { name: string; value: string; path?: string; maxAge?: number; httpOnly?: boolean; sameSite?: string; secure?: boolean; expires?: Date }[]).find(
    (candidate) => candidate.name === name,
  );
}

export function totpAt(base32Secret: string, timestamp: number): string {
  return TOTP.generate({ secret: Secret.fromBase32(base32Secret), algorithm: 'SHA1', digits: 6, period: 30, timestamp });
}

/** Reads the user row as stored, to prove a refused request changed nothing. */
export async function storedUser(server: TestServer, email: string) {
  return server.auth!.api.users.findByEmail(email);
}
