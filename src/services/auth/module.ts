import path from 'node:path';
import type { Kysely } from 'kysely';
import { ConfigError } from '../../config.ts';
import { createMailer } from '../../platform/mail.ts';
import { defineModule } from '../../platform/module.ts';
import type { ModuleContext, ServiceModule } from '../../platform/module.ts';
import { chooseRateLimiter } from '../../platform/rate-limit.ts';
import type { RateLimiter } from '../../platform/rate-limit.ts';
import { DeadLetterService } from '../../platform/work/dead-letter-service.ts';
import { ProfileService } from './account/service.ts';
import { UserAdminService } from './admin/service.ts';
import { cookiePolicy } from './cookies.ts';
import { AuthKeys } from './keys.ts';
import { LegalDocuments } from './legal/documents.ts';
import { LegalService } from './legal/service.ts';
import { SignInService } from './login/service.ts';
import { MailNotifier } from './mail/notifier.ts';
import { SocialAccounts } from './openid/accounts.ts';
import { configureProviders } from './openid/providers/registry.ts';
import { OpenIdRepository } from './openid/repository.ts';
import { OpenIdService } from './openid/service.ts';
import { SignInStates } from './openid/states.ts';
import { PasswordResetService } from './password-reset/service.ts';
import { authMigrations } from './migrations/index.ts';
import { RegistrationService } from './registration/service.ts';
import { authRouteAccess } from './route-access.ts';
import { registerAuthRoutes } from './routes.ts';
import { RefreshTokenService } from './sessions/refresh-tokens.ts';
import { RefreshTokenRepository, SessionRepository } from './sessions/repository.ts';
import { SessionService } from './sessions/service.ts';
import type { AuthTables } from './tables.ts';
import { AccessTokenIssuer, AccessTokenVerifier } from './tokens/access-tokens.ts';
import { OneTimeTokenRepository } from './tokens/one-time-repository.ts';
import { OneTimeTokens } from './tokens/one-time-tokens.ts';
import { followRevocations } from './tokens/revocations.ts';
import { loadSigningKey } from './tokens/signing-key.ts';
import type { SigningKey } from './tokens/signing-key.ts';
import { EmailCodes } from './two-factor/email-codes.ts';
import { TwoFactorRepository } from './two-factor/repository.ts';
import { TwoFactorService } from './two-factor/service.ts';
import { LocalUserDirectory } from './users/directory.ts';
import type { CachingUserDirectory } from './users/directory.ts';
import { ClientHashShares, MAX_HASHES_PER_CLIENT } from './users/hash-shares.ts';
import { passwordProblem } from './users/password-policy.ts';
import { RemoteUserDirectory } from './users/remote-directory.ts';
import { UserRepository } from './users/repository.ts';
import { AccountService } from './users/service.ts';
import { UserStatusCache } from './users/status-cache.ts';

export { authMigrations };

declare module '../../platform/module.ts' {
  interface Provisions {
    /** Who a user is and what they may do, remembered in memory. */
    users: CachingUserDirectory;
  }
  interface RunningModules {
    auth: AuthModule;
  }
}

/** What other modules and the gateway may use of the auth module. */
export interface AuthApi {
  users: CachingUserDirectory;
  accounts: AccountService;
  sessions: SessionService;
  accessTokens: AccessTokenIssuer;
  verifier: AccessTokenVerifier;
  signingKey: SigningKey;
}

export interface AuthModule extends ServiceModule {
  api: AuthApi;
  /** Resolves once the mail work started so far (looking accounts up, issuing links, sending) has finished: for tools and tests. */
  mailSettled(): Promise<void>;
}

const PURGE_INTERVAL_MS = 3_600_000;

/** Creates the module once its migrations have run. */
export async function createAuthModule(ctx: ModuleContext): Promise<AuthModule> {
  const { config, database, bus, log } = ctx;
  const db = database.db as Kysely<AuthTables>;
  const signingKey = await loadSigningKey(config.jwtPrivateKeyPem, config.dataDir);
  const keys = AuthKeys.load(config.totpEncryptionKey, config.dataDir);
  const sessions = new SessionService(new SessionRepository(db), bus, config.ttl);
  const userRepository = new UserRepository(db);
  const users = new LocalUserDirectory(userRepository, bus);
  const accounts = new AccountService(userRepository, sessions, bus, ctx.outbox);
  if (config.admin) {
    const problem = passwordProblem(config.admin.password);
    if (problem) throw new ConfigError('ADMIN_PASSWORD', problem);
    const { user, outcome, replacedUserId } = await accounts.ensureAdministrator(config.admin.email, config.admin.password);
    if (outcome === 'replaced') {
      log.warn(
        { userId: user.id, replacedUserId },
        'ADMIN_EMAIL named an existing account without administrator rights: that account was deleted with everything it made (devices, shares, notification rules and targets, saved commands), and a new administrator with ADMIN_PASSWORD holds the address',
      );
    }
  }

  const accessTokens = new AccessTokenIssuer(signingKey.privateKey, config.publicUrl, config.ttl.accessToken);
  // Seeded from the database, so a restarted process still refuses tokens of sessions revoked before it started.
  const revocations = followRevocations(bus, await sessions.stillRelevantRevocations());
  const verifier = new AccessTokenVerifier(signingKey.publicKey, config.publicUrl, revocations);

  const limiter: RateLimiter = chooseRateLimiter(config, ctx.redis);
  const mail = new MailNotifier(
    createMailer({ smtpUrl: config.mail.smtpUrl, from: config.mail.from, outboxDir: path.join(config.dataDir, 'outbox'), log }),
    log,
  );
  const oneTimeTokens = new OneTimeTokens(new OneTimeTokenRepository(db), keys);
  const refreshTokens = new RefreshTokenService(new RefreshTokenRepository(db), sessions, keys, config.ttl.refreshToken, log);
  const twoFactor = new TwoFactorService({
    repository: new TwoFactorRepository(db),
    keys,
    emailCodes: new EmailCodes({
      oneTimeTokens,
      mail,
      appName: config.appName,
      setupTtlSeconds: config.ttl.totpSetup,
      codeTtlSeconds: config.ttl.twoFactorTempToken,
    }),
    sessions,
    limiter,
    issuer: config.appName,
    setupTtlSeconds: config.ttl.totpSetup,
  });
  const statuses = new UserStatusCache(userRepository);
  const legalDocuments = new LegalDocuments(config.dataDir);
  const profiles = new ProfileService({ users: userRepository, accounts, sessions, twoFactor, statuses, limiter, bus });
  const signIn = new SignInService({
    users: userRepository,
    sessions,
    refreshTokens,
    accessTokens,
    verifier,
    twoFactor,
    oneTimeTokens,
    statuses,
    limiter,
    hashShares: new ClientHashShares(config.rateLimits ? MAX_HASHES_PER_CLIENT : Infinity),
    tempTokenTtlSeconds: config.ttl.twoFactorTempToken,
  });
  const registration = new RegistrationService({
    users: userRepository,
    accounts,
    oneTimeTokens,
    mail,
    legal: legalDocuments,
    limiter,
    registrationEnabled: config.registrationEnabled,
    appName: config.appName,
    webUrl: config.webUrl,
    verificationTtlSeconds: config.ttl.emailVerification,
  });
  const passwordReset = new PasswordResetService({
    users: userRepository,
    sessions,
    oneTimeTokens,
    mail,
    limiter,
    appName: config.appName,
    webUrl: config.webUrl,
    resetTtlSeconds: config.ttl.passwordReset,
  });

  const openIdRepository = new OpenIdRepository(db);
  const openId = new OpenIdService({
    providers: configureProviders(config.oidc, config.publicUrl),
    states: new SignInStates(openIdRepository),
    accounts: new SocialAccounts({ repository: openIdRepository, users: userRepository, accounts, registrationEnabled: config.registrationEnabled }),
    signIn,
    limiter,
    webUrl: config.webUrl,
    appScheme: config.appScheme,
    log,
  });

  let purgeTimer: NodeJS.Timeout | undefined;
  const purge = async () => {
    try {
      await sessions.purgeEnded();
      await oneTimeTokens.purgeExpired();
      await openId.purgeExpired();
    } catch (error) {
      log.warn({ err: error }, 'purging ended sessions, expired tokens and sign-in states failed');
    }
  };

  return {
    name: 'auth',
    api: { users, accounts, sessions, accessTokens, signingKey, verifier },
    mailSettled: () => mail.settled(),
    registerRoutes(app) {
      return registerAuthRoutes(app, {
        database,
        signingKey,
        sessions,
        users,
        userRepository,
        signIn,
        registration,
        passwordReset,
        profiles,
        twoFactor,
        legalDocuments,
        legal: new LegalService(legalDocuments, userRepository),
        admin: new UserAdminService({ users: userRepository, sessions, twoFactor, statuses, bus }),
        deadLetters: new DeadLetterService(database, bus),
        openId,
        cookies: cookiePolicy(config.publicUrl, config.ttl),
      });
    },
    async start() {
      purgeTimer = setInterval(() => void purge(), PURGE_INTERVAL_MS);
      purgeTimer.unref();
    },
    async stop() {
      clearInterval(purgeTimer);
      await mail.stop();
    },
  };
}

export const authModule = defineModule({
  name: 'auth',
  migrations: authMigrations,
  routeAccess: authRouteAccess,
  consumes: {},
  provides: 'users',
  provide: (module: AuthModule) => module.api.users,
  // With Redis the auth service's user-changed events reach this process, so the directory's cache can follow them.
  remote: ({ client, bus, hintsArrive }) => new RemoteUserDirectory({ client, changes: hintsArrive ? bus : undefined }),
  needs: [],
  create: createAuthModule,
});
