import path from 'node:path';
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { Registry } from 'prom-client';
import { SERVICE_NAMES } from './config.ts';
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
import type { FactHandlers, FrontModule, ModuleContext, ModuleHooks, ModulesByName, Needs, Provision, Provisions, ServiceModule } from './platform/module.ts';
import { Outbox } from './platform/outbox/outbox.ts';
import { openRedisConnections } from './platform/redis.ts';
import { readOrCreateSecret } from './platform/secrets.ts';
import { DeadLetterRepository } from './platform/work/dead-letters.ts';
import { QueueMetrics } from './platform/work/metrics.ts';
import { FACT_CONSUMERS, GATEWAY, MODULE_ROUTE_ACCESS, MODULES, wiringOrder } from './modules.ts';

/** The modules this process runs, by name (`server.auth`…), for in-process callers such as the CLI, tests and benchmarks. */
export interface Server extends ModulesByName {
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
  /** Stops accepting, finishes in-flight requests, then releases modules, Redis and the database. */
  close(): Promise<void>;
}

export interface ServerOptions {
  /** A database opened (and owned) by the caller, e.g. a test's fresh one. */
  database?: Database;
  /** What tests replace in modules, by module name (e.g. notifications' push providers and clock). */
  hooks?: Partial<ModuleHooks>;
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

  const gateway = config.gateway ? GATEWAY : undefined;
  const served = [...config.services, ...(gateway?.fronts(config) ?? [])];
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
  const needed = new Set<Provision>([...local.flatMap((descriptor) => descriptor.needs), ...(gateway?.needs ?? [])]);
  for (const descriptor of MODULES) {
    const url = config.upstreams[descriptor.name];
    if (config.services.includes(descriptor.name) || !url || !descriptor.remote || !needed.has(descriptor.provides)) continue;
    Object.assign(provisions, {
      [descriptor.provides]: descriptor.remote({ client: clientOf(descriptor.name, url), bus, hintsArrive: redis !== undefined, log: app.log }),
    });
  }
  const modules: ServiceModule[] = [];
  const started: ServiceModule[] = [];
  let front: FrontModule | undefined;
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
        const module = await descriptor.create(ctx, needs, options.hooks?.[descriptor.name as keyof ModuleHooks]);
        modules.push(module);
        for (const [topic, handle] of Object.entries(descriptor.consumes) as [Topic, FactHandlers<ServiceModule>[Topic]][]) {
          outbox.consume(descriptor.name, topic, (payload, signal) => handle?.(module, payload as never, signal));
        }
        if (descriptor.provides && descriptor.provide) Object.assign(provisions, { [descriptor.provides]: descriptor.provide(module) });
      }
    }
    const running = runningModules(modules);

    await app.register(cookie);
    await registerApiDocs(app, config);
    if (gateway) {
      front = await gateway.create(
        { config, bus, log: app.log, internalToken, hintsArrive: redis !== undefined, running, routeAccess: MODULE_ROUTE_ACCESS, clientOf: (name) => clientOf(name, config.upstreams[name] as string) },
        needsOf(gateway, provisions),
      );
      await front.registerHooks(app);
    }
    installIdentity(app, internalToken);
    if (modules.length > 0) enforceRouteAccess(app, async (userId) => (await provisions.users?.get(userId))?.administrator === true);
    for (const module of modules) await module.registerRoutes(app);
    await front?.registerRoutes(app);
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
    await front?.stop?.();
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
    ...runningModules(modules),
    async close() {
      await metricsListener?.close();
      await app.close();
      await outbox?.stop();
      for (const module of [...modules].reverse()) await module.stop?.();
      await front?.stop?.();
      await Promise.allSettled([...clients.values()].map((client) => client.close()));
      await redis?.close();
      if (ownsDatabase) await database?.close();
    },
  };
}

/** The provisions a module needs, as this process has them. */
function needsOf<N extends Provision>(descriptor: { needs: readonly N[] }, provisions: Partial<Provisions>): Needs<N> {
  return Object.fromEntries(descriptor.needs.map((need) => [need, provisions[need]])) as Needs<N>;
}

/** The created modules by name, each module's entry undefined where this process does not run it. */
function runningModules(modules: readonly ServiceModule[]): ModulesByName {
  return Object.fromEntries(SERVICE_NAMES.map((name) => [name, modules.find((module) => module.name === name)])) as ModulesByName;
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
