import path from 'node:path';
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import type { Config, ServiceName } from './config.ts';
import { EventBus } from './platform/bus.ts';
import type { Topic } from './platform/bus.ts';
import { randomToken } from './platform/crypto.ts';
import { openDatabase } from './platform/db/database.ts';
import type { Database } from './platform/db/database.ts';
import { migrateModules } from './platform/db/migrations.ts';
import type { ModuleMigrations } from './platform/db/migrations.ts';
import { enforceRouteAccess, grantAccess, installRouteAccess, SECURITY_SCHEMES } from './platform/http/access.ts';
import type { RouteAccessTable } from './platform/http/access.ts';
import { createHttpApp } from './platform/http/app.ts';
import { Outbox } from './platform/outbox/outbox.ts';
import type { FactConsumers } from './platform/outbox/outbox.ts';
import type { HttpApp } from './platform/http/app.ts';
import { installIdentity } from './platform/http/identity.ts';
import { listenMetrics, measureProcess } from './platform/metrics.ts';
import type { MetricsListener } from './platform/metrics.ts';
import type { ModuleContext, ServiceModule } from './platform/module.ts';
import { connectRedis } from './platform/redis.ts';
import { readOrCreateSecret } from './platform/secrets.ts';
import { installAuthentication } from './gateway/authenticate.ts';
import { allowWebAppOrigin } from './gateway/cross-origin.ts';
import { installProxy } from './gateway/proxy.ts';
import type { Upstream } from './gateway/proxy.ts';
import { connectRemoteVerifier } from './gateway/remote-verifier.ts';
import { authMigrations, createAuthModule } from './services/auth/module.ts';
import type { AuthModule } from './services/auth/module.ts';
import type { CachingUserDirectory } from './services/auth/users/directory.ts';
import { RemoteUserDirectory } from './services/auth/users/remote-directory.ts';
import { authRouteAccess } from './services/auth/route-access.ts';
import { billingMigrations, createBillingModule } from './services/billing/module.ts';
import type { BillingModule } from './services/billing/module.ts';
import { billingRouteAccess } from './services/billing/route-access.ts';
import { createDevicesModule, devicesConsumes, devicesMigrations } from './services/devices/module.ts';
import type { DevicesModule } from './services/devices/module.ts';
import { devicesRouteAccess } from './services/devices/route-access.ts';
import { createTrackingModule, trackingConsumes, trackingMigrations } from './services/tracking/module.ts';
import type { TrackingModule } from './services/tracking/module.ts';
import { trackingRouteAccess } from './services/tracking/route-access.ts';

/** Migrations of every module, in dependency order (auth at the bottom). */
export const MODULE_MIGRATIONS: Record<ServiceName, ModuleMigrations> = {
  auth: authMigrations,
  devices: devicesMigrations,
  tracking: trackingMigrations,
  billing: billingMigrations,
};

/** Which modules act on each fact, known to every process whatever it runs: a fact is recorded once per consumer. */
export const FACT_CONSUMERS: FactConsumers = factConsumers({ devices: devicesConsumes, tracking: trackingConsumes });

function factConsumers(declarations: Record<string, readonly Topic[]>): FactConsumers {
  const consumers: Partial<Record<Topic, string[]>> = {};
  for (const [module, topics] of Object.entries(declarations)) for (const topic of topics) (consumers[topic] ??= []).push(module);
  return consumers;
}

/** Every module's routes and who may call each: a gateway-only process routes and authenticates from these. */
export const MODULE_ROUTE_ACCESS: Record<ServiceName, RouteAccessTable> = {
  auth: authRouteAccess,
  devices: devicesRouteAccess,
  tracking: trackingRouteAccess,
  billing: billingRouteAccess,
};

export interface Server {
  app: HttpApp;
  config: Config;
  database: Database | undefined;
  bus: EventBus;
  /** Facts between modules; undefined in a gateway-only process. */
  outbox: Outbox | undefined;
  /** The process's Prometheus metrics, which modules register on. */
  metrics: Registry;
  /** Where the metrics listener serves them (METRICS_PORT, METRICS_HOST); undefined when METRICS_PORT is 0. */
  metricsUrl: string | undefined;
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
  const metrics = new Registry();
  if (config.metrics.port > 0) measureProcess(app, metrics);
  const redis: Redis[] = config.redisUrl ? [connectRedis(config.redisUrl), connectRedis(config.redisUrl)] : [];
  const [publisher, subscriber] = redis;
  if (publisher && subscriber) await bus.connect(publisher, subscriber, config.eventChannel);

  // The gateway fronts the modules that run elsewhere, at their URLs.
  const proxied: Partial<Record<ServiceName, Upstream>> = {};
  if (config.gateway) {
    for (const [name, url] of Object.entries(config.upstreams) as [ServiceName, string][]) {
      if (!config.services.includes(name)) proxied[name] = { url, routes: MODULE_ROUTE_ACCESS[name] };
    }
  }
  const served = [...config.services, ...(Object.keys(proxied) as ServiceName[])];
  installRouteAccess(app, served.map((name) => MODULE_ROUTE_ACCESS[name]));

  const ownsDatabase = !options.database && config.services.length > 0;
  const database = config.services.length > 0 ? (options.database ?? openDatabase(config.database)) : undefined;
  const outbox = database && new Outbox({ database, consumers: FACT_CONSUMERS, bus, log: app.log });
  const cleanups: (() => Promise<void> | void)[] = [];
  const modules: ServiceModule[] = [];
  const started: ServiceModule[] = [];
  let auth: AuthModule | undefined;
  let devices: DevicesModule | undefined;
  let tracking: TrackingModule | undefined;
  let billing: BillingModule | undefined;
  let users: CachingUserDirectory | undefined;
  let metricsListener: MetricsListener | undefined;

  try {
    if (database && outbox) {
      await migrateModules(database, config.services.map((name) => MODULE_MIGRATIONS[name]));
      const ctx: ModuleContext = { config, database, bus, outbox, log: app.log, internalToken, metrics };
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
    if (modules.length > 0) enforceRouteAccess(app, async (userId) => (await users?.get(userId))?.administrator === true);
    for (const module of modules) await module.registerRoutes(app);
    if (Object.keys(proxied).length > 0) await installProxy(app, proxied);
    await app.ready();
    for (const module of modules) {
      await module.start?.();
      started.push(module);
    }
    outbox?.start();
    if (config.metrics.port > 0) metricsListener = await listenMetrics(metrics, { ...config.metrics, logLevel: config.logLevel });
  } catch (error) {
    await outbox?.stop();
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
    outbox,
    metrics,
    metricsUrl: metricsListener?.url,
    auth,
    devices,
    tracking,
    billing,
    async close() {
      await metricsListener?.close();
      await app.close();
      await outbox?.stop();
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
      components: { securitySchemes: SECURITY_SCHEMES },
    },
  });
  await app.register(async (docs) => {
    docs.addHook('onRoute', (route) => grantAccess(route, 'public'));
    await docs.register(swaggerUi, { routePrefix: '/docs' });
  });
  app.get('/openapi.json', { schema: { hide: true }, config: { access: 'public' } }, async () => app.swagger());
}
