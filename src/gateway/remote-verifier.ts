import { createPublicKey } from 'node:crypto';
import type { JsonWebKey } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { EventBus } from '../platform/bus.ts';
import type { InternalClient } from '../platform/http/internal-client.ts';
import { AccessTokenVerifier } from '../services/auth/tokens/access-tokens.ts';
import { followRevocations } from '../services/auth/tokens/revocations.ts';
import type { RevokedSession } from '../services/auth/events.ts';

const POLL_INTERVAL_MS = 1000;
/** At start the auth service may still be starting beside us: ask for about 6 seconds. */
const STARTUP_WAIT = { retries: 30, retryDelayMs: 200 };

export interface RemoteVerifier {
  verifier: AccessTokenVerifier;
  stop(): void;
}

/**
 * A gateway without the auth module in its process verifies tokens with the auth service's JWKS.
 * Revocations arrive through the bus when Redis connects the processes; without Redis it polls.
 */
export async function connectRemoteVerifier(options: {
  /** Reaches the auth service (AUTH_URL). */
  auth: InternalClient;
  issuer: string;
  bus: EventBus;
  pollRevocations: boolean;
  log: FastifyBaseLogger;
}): Promise<RemoteVerifier> {
  const { auth } = options;
  const jwks = await auth.json<{ keys: JsonWebKey[] }>('/api/auth/.well-known/jwks.json', STARTUP_WAIT);
  const jwk = jwks.keys[0];
  if (!jwk) throw new Error('the auth service published no signing key');
  const fetchRevocations = async (startup?: typeof STARTUP_WAIT) =>
    (await auth.json<{ sessions: RevokedSession[] }>('/api/auth/internal/revoked-sessions', startup)).sessions;
  const revocations = followRevocations(options.bus, await fetchRevocations(STARTUP_WAIT));
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
