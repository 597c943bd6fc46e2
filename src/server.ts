import path from 'node:path';
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Redis } from 'ioredis';
import type { Config, ServiceName } from './config.ts';
import { EventBus } from './platform/bus.ts';
import { randomToken } from './platform/crypto.ts';
import { openDatabase } from './platform/db/database.ts';
import type { Database } from './platform/db/database.ts';
import { migrateModules } from './platform/db/migrations.ts';
import type { ModuleMigrations } from './platform/db/migrations.ts';
import { createHttpApp } from './platform/http/app.ts';
import type { HttpApp } from './platform/http/app.ts';
import { installIdentity } from './platform/http/identity.ts';
import type { ModuleContext, ServiceModule } from './platform/module.ts';
import { connectRedis } from './platform/redis.ts';
import { readOrCreateSecret } from './platform/secrets.ts';
import { installAuthentication } from './gateway/authenticate.ts';
import { allowWebAppOrigin } from './gateway/cross-origin.ts';
import { installProxy } from './gateway/proxy.ts';
import { connectRemoteVerifier } from './gateway/remote-verifier.ts';
import { authMigrations, createAuthModule } from './services/auth/module.ts';
import type { AuthModule } from './services/auth/module.ts';
import type { CachingUserDirectory } from './services/auth/users/directory.ts';
import { RemoteUserDirectory } from './services/auth/users/remote-directory.ts';
import { billingMigrations, createBillingModule } from './services/billing/module.ts';
import type { BillingModule } from './services/billing/module.ts';
import { createDevicesModule, devicesMigrations } from './services/devices/module.ts';
import type { DevicesModule } from './services/devices/module.ts';
import { createTrackingModule, trackingMigrations } from './services/tracking/module.ts';
import type { TrackingModule } from './services/tracking/module.ts';

/** Migrations of every module, in dependency order (auth at the bottom). */
export const MODULE_MIGRATIONS: Record<ServiceName, ModuleMigrations> = {
  auth: authMigrations,
  devices: devicesMigrations,
  tracking: trackingMigrations,
  billing: billingMigrations,
};

export interface Server {
  app: HttpApp;
  config: Config;
  database: Database | undefined;
  bus: EventBus;
  /** The modules this process runs, for in-process callers such as the CLI, tests and benchmarks. */
  auth: AuthModule | undefined;
  devices: DevicesModule | undefined;
  tracking: TrackingModule | undefined;
  billing: BillingModule | undefined;
  /** Stops accepting, finishes in-flight requests, then releases modules, Redis and the database. */
  close(): Promise<void>;
}

export interface ServerOptions {
  /** A database opened (and owned) by the caller, e.g. a test's fresh one. */
  database?: Database;
}

/** Builds the process SERVICES asks for: any subset of the modules, with or without the gateway. */
export async function createServer(config: Config, options: ServerOptions = {}): Promise<Server> {
  const app = createHttpApp({ logLevel: config.logLevel, bodyLimit: config.bodyLimit, trustProxy: config.trustProxy });
  const internalToken =
    config.internalToken ?? readOrCreateSecret(path.join(config.dataDir, 'internal-token'), () => randomToken(32));
  const bus = new EventBus(app.log);
  const redis: Redis[] = config.redisUrl ? [connectRedis(config.redisUrl), connectRedis(config.redisUrl)] : [];
  const [publisher, subscriber] = redis;
  if (publisher && subscriber) await bus.connect(publisher, subscriber, config.eventChannel);

  const ownsDatabase = !options.database && config.services.length > 0;
  const database = config.services.length > 0 ? (options.database ?? openDatabase(config.database)) : undefined;
  const cleanups: (() => Promise<void> | void)[] = [];
  const modules: ServiceModule[] = [];
  const started: ServiceModule[] = [];
  let auth: AuthModule | undefined;
  let devices: DevicesModule | undefined;
  let tracking: TrackingModule | undefined;
  let billing: BillingModule | undefined;
  let users: CachingUserDirectory | undefined;

  try {
    if (database) {
      await migrateModules(database, config.services.map((name) => MODULE_MIGRATIONS[name]));
      const ctx: ModuleContext = { config, database, bus, log: app.log, internalToken };
      if (config.services.includes('auth')) modules.push((auth = await createAuthModule(ctx)));
      users = auth?.api.users ?? remoteUsers(config, internalToken, bus, cleanups);
      if (config.services.includes('devices')) modules.push((devices = await createDevicesModule(ctx, { users })));
      if (config.services.includes('tracking')) modules.push((tracking = await createTrackingModule(ctx, { devices: devices?.api, users })));
      if (config.services.includes('billing')) modules.push((billing = await createBillingModule(ctx, { users })));
    }

    await app.register(cookie);
    await registerApiDocs(app, config);
    if (config.gateway) {
      await allowWebAppOrigin(app, config);
      if (auth) {
        installAuthentication(app, auth.api.verifier, internalToken, auth.api.users);
      } else {
        const authUrl = config.upstreams.auth as string;
        const remote = await connectRemoteVerifier({
          authUrl,
          issuer: config.publicUrl,
          internalToken,
          bus,
          pollRevocations: !config.redisUrl,
          log: app.log,
        });
        cleanups.push(remote.stop);
        // The services of this process share their directory with the gateway; a gateway alone makes its own.
        users ??= remoteUserDirectory(authUrl, config, internalToken, bus, cleanups);
        installAuthentication(app, remote.verifier, internalToken, users);
      }
    }
    installIdentity(app, internalToken);
    for (const module of modules) await module.registerRoutes(app);
    const missing = Object.fromEntries(Object.entries(config.upstreams).filter(([name]) => !config.services.includes(name as ServiceName)));
    if (config.gateway && Object.keys(missing).length > 0) await installProxy(app, missing);
    await app.ready();
    for (const module of modules) {
      await module.start?.();
      started.push(module);
    }
  } catch (error) {
    for (const module of started.reverse()) await module.stop?.().catch(() => {});
    for (const cleanup of cleanups) await cleanup();
    await Promise.allSettled([app.close(), ...redis.map((connection) => connection.quit())]);
    if (ownsDatabase) await database?.close();
    throw error;
  }

  return {
    app,
    config,
    database,
    bus,
    auth,
    devices,
    tracking,
    billing,
    async close() {
      await app.close();
      for (const module of [...modules].reverse()) await module.stop?.();
      for (const cleanup of cleanups) await cleanup();
      await Promise.allSettled(redis.map((connection) => connection.quit()));
      if (ownsDatabase) await database?.close();
    },
  };
}

/** In a process without the auth module, users are looked up over HTTP at AUTH_URL. */
function remoteUsers(config: Config, internalToken: string, bus: EventBus, cleanups: (() => Promise<void> | void)[]): CachingUserDirectory | undefined {
  return config.upstreams.auth ? remoteUserDirectory(config.upstreams.auth, config, internalToken, bus, cleanups) : undefined;
}

function remoteUserDirectory(
  authUrl: string,
  config: Config,
  internalToken: string,
  bus: EventBus,
  cleanups: (() => Promise<void> | void)[],
): CachingUserDirectory {
  // With Redis the auth service's user-changed events reach this process, so its cache can follow them.
  const directory = new RemoteUserDirectory({ authUrl, internalToken, changes: config.redisUrl ? bus : undefined });
  cleanups.push(() => directory.close());
  return directory;
}

async function registerApiDocs(app: HttpApp, config: Config): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Trackstack API',
        version: '0.1.0',
        description: 'Auth, devices, tracking and billing behind one gateway. Errors share one body: {statusCode, error, code, message, details?}.',
      },
      servers: [{ url: config.publicUrl }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          cookie: { type: 'apiKey', in: 'cookie', name: 'access_token' },
        },
      },
      security: [{ bearer: [] }, { cookie: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
