import type { Kysely } from 'kysely';
import type { ModuleContext, ServiceModule } from '../../platform/module.ts';
import { registerTokenCoreRoutes } from './routes.ts';
import { SessionRepository } from './sessions/repository.ts';
import { SessionService } from './sessions/service.ts';
import type { AuthTables } from './tables.ts';
import { AccessTokenIssuer, AccessTokenVerifier } from './tokens/access-tokens.ts';
import { followRevocations } from './tokens/revocations.ts';
import { loadSigningKey } from './tokens/signing-key.ts';
import type { SigningKey } from './tokens/signing-key.ts';
import { LocalUserDirectory } from './users/directory.ts';
import type { UserDirectory } from './users/directory.ts';
import { UserRepository } from './users/repository.ts';
import { AccountService } from './users/service.ts';

export { authMigrations } from './migrations/index.ts';

/** What other modules and the gateway may use of the auth module. */
export interface AuthApi {
  users: UserDirectory;
  accounts: AccountService;
  sessions: SessionService;
  accessTokens: AccessTokenIssuer;
  verifier: AccessTokenVerifier;
  signingKey: SigningKey;
}

export interface AuthModule extends ServiceModule {
  api: AuthApi;
}

/** Creates the module once its migrations have run. */
export async function createAuthModule(ctx: ModuleContext): Promise<AuthModule> {
  const { config, database, bus } = ctx;
  const db = database.db as Kysely<AuthTables>;
  const signingKey = await loadSigningKey(config.jwtPrivateKeyPem, config.dataDir);
  const sessions = new SessionService(new SessionRepository(db), bus, config.ttl);
  const userRepository = new UserRepository(db);
  const users = new LocalUserDirectory(userRepository);
  const accounts = new AccountService(userRepository, sessions, bus);
  const accessTokens = new AccessTokenIssuer(signingKey.privateKey, config.publicUrl, config.ttl.accessToken);
  // Seeded from the database, so a restarted process still refuses tokens of sessions revoked before it started.
  const revocations = followRevocations(bus, await sessions.stillRelevantRevocations());
  const verifier = new AccessTokenVerifier(signingKey.publicKey, config.publicUrl, revocations);

  return {
    name: 'auth',
    api: { users, accounts, sessions, accessTokens, signingKey, verifier },
    registerRoutes(app) {
      registerTokenCoreRoutes(app, { database, signingKey, sessions });
    },
  };
}
