import { createPublicKey } from 'node:crypto';
import type { JsonWebKey } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { request } from 'undici';
import type { EventBus } from '../platform/bus.ts';
import { IDENTITY_HEADERS } from '../platform/http/identity.ts';
import { AccessTokenVerifier } from '../services/auth/tokens/access-tokens.ts';
import { followRevocations } from '../services/auth/tokens/revocations.ts';
import type { RevokedSession } from '../services/auth/events.ts';

const POLL_INTERVAL_MS = 1000;

export interface RemoteVerifier {
  verifier: AccessTokenVerifier;
  stop(): void;
}

/**
 * A gateway without the auth module in its process verifies tokens with the auth service's JWKS.
 * Revocations arrive through the bus when Redis connects the processes; without Redis it polls.
 */
export async function connectRemoteVerifier(options: {
  authUrl: string;
  issuer: string;
  internalToken: string;
  bus: EventBus;
  pollRevocations: boolean;
  log: FastifyBaseLogger;
}): Promise<RemoteVerifier> {
  const { authUrl, internalToken } = options;
  const jwks = (await getJson(`${authUrl}/api/auth/.well-known/jwks.json`, internalToken)) as { keys: JsonWebKey[] };
  const jwk = jwks.keys[0];
  if (!jwk) throw new Error(`the auth service at ${authUrl} published no signing key`);
  const fetchRevocations = async () =>
    ((await getJson(`${authUrl}/api/auth/internal/revoked-sessions`, internalToken)) as { sessions: RevokedSession[] }).sessions;
  const revocations = followRevocations(options.bus, await fetchRevocations());
  const verifier = new AccessTokenVerifier(createPublicKey({ key: jwk, format: 'jwk' }), options.issuer, revocations);
  if (!options.pollRevocations) return { verifier, stop: () => {} };

  const timer = setInterval(() => {
    fetchRevocations().then(
      (sessions) => sessions.forEach((session) => revocations.add(session.id, session.until)),
      (error: unknown) => options.log.warn({ err: error }, 'revocation poll failed'),
    );
  }, POLL_INTERVAL_MS);
  timer.unref();
  return { verifier, stop: () => clearInterval(timer) };
}

async function getJson(url: string, internalToken: string): Promise<unknown> {
  let lastError: unknown;
  // The auth service may still be starting beside us.
  for (let attempt = 0; attempt < 30; attempt++) {
    try {
      const response = await request(url, { headers: { [IDENTITY_HEADERS.internalToken]: internalToken } });
      if (response.statusCode === 200) return await response.body.json();
      await response.body.dump();
      lastError = new Error(`${url} answered ${response.statusCode}`);
    } catch (error) {
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw lastError;
}
