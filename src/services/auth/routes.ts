import { Type } from 'typebox';
import type { HttpApp } from '../../platform/http/app.ts';
import { AppError } from '../../platform/http/errors.ts';
import { registerHealthRoute } from '../../platform/http/health.ts';
import type { Database } from '../../platform/db/database.ts';
import type { SigningKey } from './tokens/signing-key.ts';
import type { SessionService } from './sessions/service.ts';

const Jwks = Type.Object({ keys: Type.Array(Type.Record(Type.String(), Type.Unknown())) });
const RevokedSessions = Type.Object({
  sessions: Type.Array(Type.Object({ id: Type.String(), until: Type.Integer() })),
});

export interface AuthRouteDeps {
  database: Database;
  signingKey: SigningKey;
  sessions: SessionService;
}

export function registerTokenCoreRoutes(app: HttpApp, deps: AuthRouteDeps): void {
  registerHealthRoute(app, '/api/auth/health', 'auth', deps.database, 'auth');

  app.get(
    '/api/auth/.well-known/jwks.json',
    { schema: { tags: ['auth'], summary: 'Public keys that verify access tokens (JWKS)', response: { 200: Jwks } } },
    async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300');
      return { keys: [deps.signingKey.jwk] };
    },
  );

  app.get(
    '/api/auth/internal/revoked-sessions',
    {
      schema: {
        tags: ['internal'],
        summary: 'Revocations still relevant to token checks (services only, X-Internal-Token)',
        response: { 200: RevokedSessions },
      },
    },
    async (request) => {
      if (!request.fromService) throw new AppError('FORBIDDEN');
      return { sessions: await deps.sessions.stillRelevantRevocations() };
    },
  );
}
