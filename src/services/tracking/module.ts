import type { Kysely } from 'kysely';
import { defineModule } from '../../platform/module.ts';
import { chooseRateLimiter } from '../../platform/rate-limit.ts';
import type { ModuleContext, ServiceModule } from '../../platform/module.ts';
import { registerHealthRoute } from '../../platform/http/health.ts';
import { registerUserCountsRoute, remoteUserCounts } from '../../platform/http/user-counts.ts';
import type { UserCounts } from '../../platform/http/user-counts.ts';
import type { UserDirectory } from '../auth/users/directory.ts';
import type { Entitlement } from '../billing/module.ts';
import type { DeviceAccessApi } from '../devices/access.ts';
import { HistoryCut } from './history-cut.ts';
import { unavailableDevices } from '../devices/access.ts';
import { unavailableUserDirectory } from '../auth/users/directory.ts';
import type { TrackingApi } from './api.ts';
import { CommandDelivery } from './commands/delivery.ts';
import { ProtocolMemory } from './commands/protocol-memory.ts';
import { CommandRepository } from './commands/repository.ts';
import { registerCommandRoutes } from './commands/routes.ts';
import { CommandService } from './commands/service.ts';
import { registerEventRoutes } from './events/routes.ts';
import { EventService } from './events/service.ts';
import { registerGeofenceRoutes } from './geofences/routes.ts';
import { GeofenceService } from './geofences/service.ts';
import { GeofenceLimits } from './ingest/geofence-limits.ts';
import { DeviceListeners } from './ingest/listeners.ts';
import type { DeviceProtocol } from './protocols/registry.ts';
import { meteredSink } from './ingest/metered-sink.ts';
import { IngestPipeline } from './ingest/pipeline.ts';
import { engineSettings } from './ingest/settings.ts';
import { LiveHub } from './live/hub.ts';
import type { LiveOptions } from './live/hub.ts';
import { registerLiveRoutes } from './live/routes.ts';
import { trackingMigrations } from './migrations/index.ts';
import { registerPositionRoutes } from './positions/routes.ts';
import { ReportQueryRepository } from './reports/query-repository.ts';
import { registerReportRoutes } from './reports/routes.ts';
import { ReportService } from './reports/service.ts';
import { RetentionJob } from './retention/job.ts';
import { keepEverything, planRetention } from './retention/policy.ts';
import type { RetentionPolicy } from './retention/policy.ts';
import { PositionService } from './positions/service.ts';
import { SegmentationRepository } from './reports/segmentation/repository.ts';
import { Segmentation } from './reports/segmentation/service.ts';
import type { SegmentedPosition } from './reports/segmentation/machine.ts';
import type { StoredPosition } from './engine/index.ts';
import { trackingRouteAccess } from './route-access.ts';
import { TrackingStore } from './store.ts';
import type { TrackingTables } from './tables.ts';
import { systemClock } from './throttled-writer.ts';
import type { Clock } from './throttled-writer.ts';

export { trackingMigrations };

export interface TrackingDeps {
  /** The devices module's interface ("who may see what"); undefined when devices runs in another process and no remote one is given. */
  devices: DeviceAccessApi | undefined;
  /** The auth module's directory (read-only accounts may not change geofences or delete positions). */
  users: UserDirectory | undefined;
  /** Billing's plans (geofence limit, history cut); undefined when billing runs elsewhere without BILLING_URL: no plan limits. */
  entitlement?: Entitlement | undefined;
  /** How long each owner's history stays; by default the owner's plan (entitlement), without billing everything stays. */
  retention?: RetentionPolicy;
  /** Live update tuning (docs/live-updates.md); tests shorten the keepalive. */
  live?: Partial<LiveOptions>;
}

/** What tracking counts per user for billing's usage: their geofences. */
const TRACKING_COUNTS = ['geofences'] as const;
type TrackingCount = (typeof TRACKING_COUNTS)[number];
const TRACKING_USAGE_ROUTE = '/api/tracking/internal/usage/:userId';

declare module '../../platform/module.ts' {
  interface RunningModules {
    tracking: TrackingModule;
  }
  interface ModuleHooks {
    tracking: TrackingTestHooks;
  }
}

export interface TrackingTestHooks {
  /** Times ingestion, commands and retention (tests move it instead of waiting). */
  clock?: Clock | undefined;
}

export interface TrackingModule extends ServiceModule {
  api: TrackingApi;
  /** Removes a deleted device's positions, events and commands (the `devices.device.deleted` fact), after its writes in flight. */
  removeDeviceData(deviceId: number): Promise<void>;
  /** Removes a deleted account's geofences and commands (the `auth.user.deleted` fact). */
  removeUserData(userId: number): Promise<void>;
  /** Device ingestion: the pipeline behind the listeners, and extra listeners (tests and benchmarks take free ports). */
  /** The history retention job (docs/tracking.md, "Retention"), scheduled by start() every RETENTION_INTERVAL. */
  retention: RetentionJob;
  /** Trips, stops and hourly sums from the stored positions (docs/reports.md, "Segmentation"). */
  segmentation: Segmentation;
  ingestion: {
    pipeline: IngestPipeline;
    /** Opens a listener beside the configured ones (port 0: a free port), closed by stop(); answers the port bound. */
    listen(protocol: DeviceProtocol, port: number): Promise<number>;
  };
}

/** Creates the module once its migrations have run. */
export async function createTrackingModule(ctx: ModuleContext, deps: TrackingDeps, hooks: TrackingTestHooks = {}): Promise<TrackingModule> {
  const { config, database, bus, log } = ctx;
  const clock = hooks.clock ?? systemClock;
  const now = () => clock.now();
  if (!deps.devices) log.warn('tracking: no devices interface in this process; tracking routes answer 502 until one is wired');
  const devices = deps.devices ?? unavailableDevices;
  const users = deps.users ?? unavailableUserDirectory;
  const store = new TrackingStore(database.db as Kysely<TrackingTables>);
  const plans = deps.entitlement;
  if (!plans) log.warn('tracking: no billing module in this process and no BILLING_URL; plan limits and history cuts are not applied');
  const historyCut = new HistoryCut(plans, devices);
  const positions = new PositionService(store, devices, users, historyCut, log);
  const events = new EventService(store, devices, historyCut, ctx.outbox);
  const reports = new ReportService({
    store,
    reports: new ReportQueryRepository(database.db as Kysely<TrackingTables>),
    devices,
    users,
    historyCut,
    plans,
    limits: config.reports,
  });
  const geofences = new GeofenceService(store, devices, users, bus, config.limits, plans);
  const counts: UserCounts<TrackingCount> = { geofences: async (userId) => (await store.geofences.usageOf(userId)).geofences };
  plans?.usage?.contribute(counts);
  const live = new LiveHub({ bus, devices, positions, log }, deps.live);
  const commandRepository = new CommandRepository(database.db as Kysely<TrackingTables>);
  const protocols = new ProtocolMemory(commandRepository, now);
  const delivery = new CommandDelivery({
    repository: commandRepository,
    bus,
    redis: ctx.redis,
    keyPrefix: config.eventChannel,
    ttlMs: config.commandTtl * 1000,
    maxQueuedPerDevice: config.commands.queuedPerDevice,
    now,
    log,
  });
  const commands = new CommandService({
    repository: commandRepository,
    sendRate: { limiter: chooseRateLimiter(config, ctx.redis), sendsPerMinute: config.commands.sendsPerMinute },
    maxQueuedPerDevice: config.commands.queuedPerDevice,
    protocols,
    delivery,
    devices,
    users,
    features: plans && { assertCommandsAllowed: (userId) => plans.assertFeature(userId, 'commands') },
    now,
  });

  const geofenceLimits = new GeofenceLimits({
    containing: (ownerId, point) => geofences.containing(ownerId, point),
    load: (ownerId) => store.geofences.listOfOwners([ownerId]),
  });
  const eventSettings = engineSettings(config.eventDefaults);
  const segmentationRepository = new SegmentationRepository(database.db as Kysely<TrackingTables>);
  const segmentation = new Segmentation({
    repository: segmentationRepository,
    deviceAttributes: async (ids) => new Map((await devices.getDevices(ids)).map((device) => [device.id, device.attributes])),
    settings: eventSettings,
    delayMs: config.segmentation.delayMs,
    clock,
    log,
  });
  const segmentStored = (stored: readonly StoredPosition[]) => {
    if (config.segmentation.enabled) segmentation.positionsStored(stored.filter((position): position is SegmentedPosition => position.id !== null));
  };
  const pipeline = new IngestPipeline({
    storage: {
      storePositions: (batch) => positions.storeRows(batch),
      storeEvents: (batch) => events.storeBatch(batch),
      latestPosition: async (deviceId) => (await store.positions.latestOf([deviceId]))[0],
      devicesWithPositions: () => store.positions.deviceIdsWithLatest(),
    },
    devices,
    geofences: geofenceLimits,
    bus,
    log,
    settings: eventSettings,
    statusTimeout: config.statusTimeout,
    batchSize: config.ingest.batchSize,
    batchDelayMs: config.ingest.batchDelay,
    clock,
    positionsStored: segmentStored,
  });
  const retention = new RetentionJob({
    db: database.db as Kysely<TrackingTables>,
    policy: deps.retention ?? (plans ? planRetention(plans) : keepEverything),
    ownersOf: async (deviceIds) => new Map((await devices.getDevices(deviceIds)).map((device) => [device.id, device.ownerId])),
    chunkSize: config.retention.chunkSize,
    commandHistoryMs: config.commands.historyDays > 0 ? config.commands.historyDays * 86_400_000 : undefined,
    clock,
    metrics: ctx.metrics,
    log,
    reports: segmentationRepository,
  });
  const listeners = new DeviceListeners({
    sink: ctx.metrics ? meteredSink(pipeline, ctx.metrics) : pipeline,
    commands: delivery,
    identified: (device, protocol) => protocols.record(device.id, protocol),
    host: config.host,
    idleTimeoutMs: config.statusTimeout * 1000,
    connectionsPerIp: config.ingest.connectionsPerIp,
    log,
    logLevel: config.logLevel,
  });

  // Every instance's ingestion lets go of a deleted device at the hint; one instance removes its data from the fact,
  // after letting go locally too (and finishing the device's writes).
  bus.on('devices.device.deleted', ({ deviceId }) => {
    protocols.forget(deviceId);
    return pipeline.forgetDevice(deviceId);
  });
  // Disabled, re-enabled or given other attributes: read again at once rather than within the TTL.
  bus.on('devices.access.changed', ({ deviceIds }) => pipeline.devicesChanged(deviceIds));
  bus.on('auth.user.deleted', ({ userId }) => {
    geofenceLimits.forget(userId);
    geofences.forgetOwner(userId);
  });
  // Speed limits of geofences changed here or in another process: read again on next use.
  bus.on('tracking.geofences.changed', ({ ownerId }) => geofenceLimits.forget(ownerId));
  bus.on('tracking.geofences.changed', (event) => geofences.onChanged(event));

  return {
    name: 'tracking',
    api: {
      storePositions: async (batch) => {
        const ids = await positions.storeBatch(batch);
        segmentStored(batch.map((position, index) => ({ ...position, id: ids[index] as number })));
        return ids;
      },
      storeEvents: (batch) => events.storeBatch(batch),
      geofencesContaining: (ownerId, point) => geofences.containing(ownerId, point),
    },
    async removeDeviceData(deviceId) {
      await pipeline.forgetDevice(deviceId);
      await segmentation.forgetDevice(deviceId);
      await segmentation.removeDevice(deviceId);
      await positions.removeDevice(deviceId);
      await commandRepository.removeDevice(deviceId);
    },
    async removeUserData(userId) {
      await geofences.removeUser(userId);
      await commandRepository.removeUser(userId);
    },
    async registerRoutes(app) {
      registerHealthRoute(app, 'tracking', database);
      registerUserCountsRoute(app, TRACKING_USAGE_ROUTE, counts);
      registerPositionRoutes(app, positions);
      registerEventRoutes(app, events);
      registerGeofenceRoutes(app, geofences);
      registerCommandRoutes(app, commands);
      registerReportRoutes(app, reports);
      await registerLiveRoutes(app, live);
    },
    retention,
    segmentation,
    ingestion: {
      pipeline,
      listen: (protocol, port) => listeners.listen(protocol, port),
    },
    async start() {
      // Ingestion may write into this month and the next ones at once.
      await retention.preparePartitions();
      // Without the devices module no device can be identified: the listeners would refuse everything.
      if (!deps.devices) {
        log.warn('tracking: no devices interface in this process; the device listeners stay closed');
        return;
      }
      if (config.retention.interval > 0) retention.start(config.retention.interval * 1000);
      await pipeline.start();
      if (config.segmentation.enabled) void segmentation.start();
      delivery.start();
      for (const [protocol, port] of Object.entries(config.devicePorts) as [DeviceProtocol, number][]) {
        if (port > 0) await listeners.listen(protocol, port);
      }
    },
    async stop() {
      delivery.stop();
      await retention.stop();
      await pipeline.stop(() => listeners.close());
      await segmentation.stop();
    },
  };
}

export const trackingModule = defineModule({
  name: 'tracking',
  migrations: trackingMigrations,
  routeAccess: trackingRouteAccess,
  consumes: {
    'auth.user.deleted': (module, { userId }) => module.removeUserData(userId),
    'devices.device.deleted': (module, { deviceId }) => module.removeDeviceData(deviceId),
  },
  remoteCounts: (client) => remoteUserCounts(client, TRACKING_USAGE_ROUTE, TRACKING_COUNTS),
  needs: ['devices', 'users', 'entitlement'],
  create: createTrackingModule,
});
