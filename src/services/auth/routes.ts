import { Type } from 'typebox';
import type { HttpApp } from '../../platform/http/app.ts';
import { registerHealthRoute } from '../../platform/http/health.ts';
import type { Database } from '../../platform/db/database.ts';
import { registerAccountRoutes } from './account/routes.ts';
import type { ProfileService } from './account/service.ts';
import { registerAdminRoutes } from './admin/routes.ts';
import type { UserAdminService } from './admin/service.ts';
import { registerDeadLetterRoutes } from '../../platform/work/dead-letter-routes.ts';
import type { DeadLetterService } from '../../platform/work/dead-letter-service.ts';
import type { CookiePolicy } from './cookies.ts';
import { registerInternalUserRoutes } from './internal/routes.ts';
import type { LegalDocuments } from './legal/documents.ts';
import { registerLegalRoutes } from './legal/routes.ts';
import type { LegalService } from './legal/service.ts';
import { registerSignInRoutes } from './login/routes.ts';
import type { SignInService } from './login/service.ts';
import { registerOpenIdRoutes } from './openid/routes.ts';
import type { OpenIdService } from './openid/service.ts';
import { registerPasswordResetRoutes } from './password-reset/routes.ts';
import type { PasswordResetService } from './password-reset/service.ts';
import { registerRegistrationRoutes } from './registration/routes.ts';
import type { RegistrationService } from './registration/service.ts';
import type { SessionService } from './sessions/service.ts';
import type { SigningKey } from './tokens/signing-key.ts';
import { registerTwoFactorRoutes } from './two-factor/routes.ts';
import type { TwoFactorService } from './two-factor/service.ts';
import type { UserDirectory } from './users/directory.ts';
import type { UserRepository } from './users/repository.ts';

const Jwks = Type.Object({ keys: Type.Array(Type.Record(Type.String(), Type.Unknown())) });
const RevokedSessions = Type.Object({
  sessions: Type.Array(Type.Object({ id: Type.String(), until: Type.Integer() })),
});

export interface AuthRouteDeps {
  database: Database;
  signingKey: SigningKey;
  sessions: SessionService;
  users: UserDirectory;
  userRepository: UserRepository;
  signIn: SignInService;
  registration: RegistrationService;
  passwordReset: PasswordResetService;
  profiles: ProfileService;
  twoFactor: TwoFactorService;
  legalDocuments: LegalDocuments;
  legal: LegalService;
  admin: UserAdminService;
  /** The platform's dead letters, administered here with the accounts (docs/architecture.md, "Durable work"). */
  deadLetters: DeadLetterService;
  openId: OpenIdService;
  cookies: CookiePolicy;
}

export async function registerAuthRoutes(app: HttpApp, deps: AuthRouteDeps): Promise<void> {
  registerTokenCoreRoutes(app, deps);
  registerSignInRoutes(app, { signIn: deps.signIn, profiles: deps.profiles, cookies: deps.cookies });
  registerRegistrationRoutes(app, deps.registration);
  registerPasswordResetRoutes(app, deps.passwordReset);
  registerAccountRoutes(app, deps.profiles, deps.cookies);
  registerTwoFactorRoutes(app, deps.twoFactor, deps.userRepository);
  registerLegalRoutes(app, deps.legalDocuments, deps.legal, deps.profiles);
  registerAdminRoutes(app, deps.admin);
  registerDeadLetterRoutes(app, deps.deadLetters);
  registerInternalUserRoutes(app, deps.users);
  await registerOpenIdRoutes(app, { openId: deps.openId, profiles: deps.profiles, cookies: deps.cookies });
}

function registerTokenCoreRoutes(app: HttpApp, deps: Pick<AuthRouteDeps, 'database' | 'signingKey' | 'sessions'>): void {
  registerHealthRoute(app, 'auth', deps.database);

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
    async () => ({ sessions: await deps.sessions.stillRelevantRevocations() }),
  );
}
