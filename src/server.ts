import path from 'node:path';
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { Registry } from 'prom-client';
import type { Config, ServiceName } from './config.ts';
import { EventBus } from './platform/bus.ts';
import type { Topic } from './platform/bus.ts';
import { randomToken } from './platform/crypto.ts';
import { openDatabase } from './platform/db/database.ts';
import type { Database } from './platform/db/database.ts';
import { migrateModules } from './platform/db/migrations.ts';
import { enforceRouteAccess, grantAccess, installRouteAccess, SECURITY_SCHEMES } from './platform/http/access.ts';
import { createHttpApp } from './platform/http/app.ts';
import type { HttpApp } from './platform/http/app.ts';
import { installIdentity } from './platform/http/identity.ts';
import { listenAsConfigured } from './platform/listen-errors.ts';
import { keepDataDirPrivate } from './platform/private-files.ts';
import { InternalClient } from './platform/http/internal-client.ts';
import type { UserCounts } from './platform/http/user-counts.ts';
import { listenMetrics, measureProcess } from './platform/metrics.ts';
import type { MetricsListener } from './platform/metrics.ts';
import type { AnyModuleDescriptor, FactHandlers, ModuleContext, ModuleDescriptor, Provision, Provisions, ServiceModule } from './platform/module.ts';
import { Outbox } from './platform/outbox/outbox.ts';
import { openRedisConnections } from './platform/redis.ts';
import { readOrCreateSecret } from './platform/secrets.ts';
import { DeadLetterRepository } from './platform/work/dead-letters.ts';
import { QueueMetrics } from './platform/work/metrics.ts';
import { installAuthentication } from './gateway/authenticate.ts';
import { allowWebAppOrigin } from './gateway/cross-origin.ts';
import { installProxy } from './gateway/proxy.ts';
import { installWebApp } from './gateway/web-app.ts';
import type { Upstream } from './gateway/proxy.ts';
import { connectRemoteVerifier } from './gateway/remote-verifier.ts';
import { FACT_CONSUMERS, MODULE_ROUTE_ACCESS, MODULES, wiringOrder } from './modules.ts';
import { authModule } from './services/auth/module.ts';
import type { AuthModule } from './services/auth/module.ts';
import { billingModule } from './services/billing/module.ts';
import type { BillingModule } from './services/billing/module.ts';
import { devicesModule } from './services/devices/module.ts';
import type { DevicesModule } from './services/devices/module.ts';
import { createNotificationsModule, notificationsModule } from './services/notifications/module.ts';
import type { HostLookup, NotificationsDeps, NotificationsModule, PushSenders } from './services/notifications/module.ts';
import { createTrackingModule, trackingModule } from './services/tracking/module.ts';
import type { TrackingDeps, TrackingModule } from './services/tracking/module.ts';
import type { Clock } from './services/tracking/throttled-writer.ts';

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
  notifications: NotificationsModule | undefined;
  /** Stops accepting, finishes in-flight requests, then releases modules, Redis and the database. */
  close(): Promise<void>;
}

export interface ServerOptions {
  /** A database opened (and owned) by the caller, e.g. a test's fresh one. */
  database?: Database;
  /** The push providers notifications send through (tests give local ones). */
  pushSenders?: PushSenders;
  /** The clock of notifications' deliveries (tests move it instead of waiting). */
  notificationsClock?: () => number;
  /** How notifications resolves the hosts of webhook URLs and Web Push endpoints (tests give names of their own). */
  notificationsLookup?: HostLookup;
  /** The clock of tracking's ingestion, commands and retention (tests move it instead of waiting). */
  trackingClock?: Clock;
}

/** Builds the process SERVICES asks for: any subset of the modules, with or without the gateway. */
export async function createServer(config: Config, options: ServerOptions = {}): Promise<Server> {
  const app = createHttpApp({ logLevel: config.logLevel, bodyLimit: config.bodyLimit, trustProxy: config.trustProxy });
  const loosened = keepDataDirPrivate(config.dataDir);
  if (loosened !== undefined) app.log.warn({ dataDir: config.dataDir, mode: loosened.toString(8) }, 'DATA_DIR was open to group or others; narrowed to 0700');
  const internalToken =
    config.internalToken ?? readOrCreateSecret(path.join(config.dataDir, 'internal-token'), () => randomToken(32));
  const bus = new EventBus(app.log);
  const metrics = new Registry();
  if (config.metrics.port > 0) measureProcess(app, metrics);
  const redis = config.redisUrl ? openRedisConnections(config.redisUrl, config.eventChannel) : undefined;
  if (redis) await bus.connect(redis.commands, redis.subscriber, config.eventChannel);

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
  const queueMetrics = database && new QueueMetrics(metrics, new DeadLetterRepository(database));
  const outbox = database && new Outbox({ database, consumers: FACT_CONSUMERS, bus, log: app.log, metrics: queueMetrics, ...config.work });
  const local = wiringOrder(config.services);
  const clients = new Map<ServiceName, InternalClient>();
  const clientOf = (name: ServiceName, url: string): InternalClient => {
    let client = clients.get(name);
    if (!client) clients.set(name, (client = new InternalClient({ baseUrl: url, internalToken, service: name })));
    return client;
  };
  // What this process's modules and gateway need of modules running elsewhere comes through those modules' remote adapters.
  const provisions: Partial<Provisions> = {};
  const needed = new Set<Provision>([...local.flatMap((descriptor) => descriptor.needs), ...(config.gateway ? (['users'] as const) : [])]);
  for (const descriptor of MODULES) {
    const url = config.upstreams[descriptor.name];
    if (config.services.includes(descriptor.name) || !url || !descriptor.remote || !needed.has(descriptor.provides)) continue;
    Object.assign(provisions, {
      [descriptor.provides]: descriptor.remote({ client: clientOf(descriptor.name, url), bus, hintsArrive: redis !== undefined, log: app.log }),
    });
  }
  const cleanups: (() => Promise<void> | void)[] = [];
  const modules: ServiceModule[] = [];
  const started: ServiceModule[] = [];
  let metricsListener: MetricsListener | undefined;

  try {
    if (database && outbox) {
      await migrateModules(database, local.map((descriptor) => descriptor.migrations));
      const remoteCounts: UserCounts = {};
      for (const descriptor of MODULES) {
        const url = config.upstreams[descriptor.name];
        if (config.services.includes(descriptor.name) || !url || !descriptor.remoteCounts) continue;
        Object.assign(remoteCounts, descriptor.remoteCounts(clientOf(descriptor.name, url)));
      }
      const ctx: ModuleContext = { config, database, bus, outbox, log: app.log, internalToken, metrics, queueMetrics, redis: redis?.commands, remoteCounts };
      for (const descriptor of local) {
        const needs = needsOf(descriptor, provisions);
        const module = await createModule(descriptor, ctx, needs, options);
        modules.push(module);
        for (const [topic, handle] of Object.entries(descriptor.consumes) as [Topic, FactHandlers<ServiceModule>[Topic]][]) {
          outbox.consume(descriptor.name, topic, (payload, signal) => handle?.(module, payload as never, signal));
        }
        if (descriptor.provides && descriptor.provide) Object.assign(provisions, { [descriptor.provides]: descriptor.provide(module) });
      }
    }
    const auth = createdModule(modules, authModule);

    await app.register(cookie);
    await registerApiDocs(app, config);
    if (config.gateway) {
      await allowWebAppOrigin(app, config);
      // The gateway reads accounts from the directory the services of this process use.
      const users = provisions.users;
      if (!users) throw new Error('the gateway has no user directory');
      if (auth) {
        installAuthentication(app, auth.api.verifier, internalToken, users, [config.publicUrl, config.webUrl]);
      } else {
        const remote = await connectRemoteVerifier({
          auth: clientOf('auth', config.upstreams.auth as string),
          issuer: config.publicUrl,
          bus,
          pollRevocations: !redis,
          log: app.log,
        });
        cleanups.push(remote.stop);
        installAuthentication(app, remote.verifier, internalToken, users, [config.publicUrl, config.webUrl]);
      }
    }
    installIdentity(app, internalToken);
    if (modules.length > 0) enforceRouteAccess(app, async (userId) => (await provisions.users?.get(userId))?.administrator === true);
    for (const module of modules) await module.registerRoutes(app);
    if (Object.keys(proxied).length > 0) await installProxy(app, proxied);
    if (config.gateway) installWebApp(app, config);
    await app.ready();
    for (const module of modules) {
      await module.start?.();
      started.push(module);
    }
    outbox?.start();
    if (config.metrics.port > 0) {
      const { port, host } = config.metrics;
      metricsListener = await listenAsConfigured({ portVariable: 'METRICS_PORT', port, hostVariable: 'METRICS_HOST', host }, () =>
        listenMetrics(metrics, { ...config.metrics, logLevel: config.logLevel }),
      );
    }
  } catch (error) {
    await outbox?.stop();
    for (const module of started.reverse()) await module.stop?.().catch(() => {});
    for (const cleanup of cleanups) await cleanup();
    await Promise.allSettled([app.close(), ...[...clients.values()].map((client) => client.close()), redis?.close()]);
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
    auth: createdModule(modules, authModule),
    devices: createdModule(modules, devicesModule),
    tracking: createdModule(modules, trackingModule),
    billing: createdModule(modules, billingModule),
    notifications: createdModule(modules, notificationsModule),
    async close() {
      await metricsListener?.close();
      await app.close();
      await outbox?.stop();
      for (const module of [...modules].reverse()) await module.stop?.();
      for (const cleanup of cleanups) await cleanup();
      await Promise.allSettled([...clients.values()].map((client) => client.close()));
      await redis?.close();
      if (ownsDatabase) await database?.close();
    },
  };
}

/** The provisions a module needs, as this process has them. */
function needsOf(descriptor: AnyModuleDescriptor, provisions: Partial<Provisions>): Partial<Provisions> {
  return Object.fromEntries(descriptor.needs.map((need: Provision) => [need, provisions[need]]));
}

/** Creates a module, with the test seams `options` sets (push providers, host lookup, clocks) for the modules that take them. */
async function createModule(descriptor: AnyModuleDescriptor, ctx: ModuleContext, needs: Partial<Provisions>, options: ServerOptions): Promise<ServiceModule> {
  if (descriptor === notificationsModule && (options.pushSenders || options.notificationsClock || options.notificationsLookup)) {
    return createNotificationsModule(ctx, needs as NotificationsDeps, { pushSenders: options.pushSenders, now: options.notificationsClock, lookup: options.notificationsLookup });
  }
  if (descriptor === trackingModule && options.trackingClock) return createTrackingModule(ctx, needs as TrackingDeps, options.trackingClock);
  return descriptor.create(ctx, needs);
}

/** The module `descriptor` created in this process, if it runs here. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any provisions: only the module's type matters here
function createdModule<M extends ServiceModule>(modules: readonly ServiceModule[], descriptor: ModuleDescriptor<any, any, M>): M | undefined {
  return modules.find((module) => module.name === descriptor.name) as M | undefined;
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
