import type { Kysely } from 'kysely';
import { defineModule } from '../../platform/module.ts';
import type { ModuleContext, ServiceModule } from '../../platform/module.ts';
import { registerHealthRoute } from '../../platform/http/health.ts';
import type { UserDirectory } from '../auth/users/directory.ts';
import type { DeviceAccessApi } from '../devices/access.ts';
import { unavailableDevices, unavailableUsers } from './access.ts';
import type { TrackingApi } from './api.ts';
import { registerEventRoutes } from './events/routes.ts';
import { EventService } from './events/service.ts';
import { registerGeofenceRoutes } from './geofences/routes.ts';
import { GeofenceService } from './geofences/service.ts';
import { GeofenceLimits } from './ingest/geofence-limits.ts';
import { DeviceListeners } from './ingest/listeners.ts';
import type { DeviceProtocol } from './ingest/listeners.ts';
import { meteredSink } from './ingest/metered-sink.ts';
import { IngestPipeline } from './ingest/pipeline.ts';
import { engineSettings } from './ingest/settings.ts';
import { LiveHub } from './live/hub.ts';
import type { LiveOptions } from './live/hub.ts';
import { registerLiveRoutes } from './live/routes.ts';
import { trackingMigrations } from './migrations/index.ts';
import { registerPositionRoutes } from './positions/routes.ts';
import { PositionService } from './positions/service.ts';
import { trackingRouteAccess } from './route-access.ts';
import { TrackingStore } from './store.ts';
import type { TrackingTables } from './tables.ts';

export { trackingMigrations };

export interface TrackingDeps {
  /** The devices module's interface ("who may see what"); undefined when devices runs in another process and no remote one is given. */
  devices: DeviceAccessApi | undefined;
  /** The auth module's directory (read-only accounts may not change geofences or delete positions). */
  users: UserDirectory | undefined;
  /** Live update tuning (docs/live-updates.md); tests shorten the keepalive. */
  live?: Partial<LiveOptions>;
}

export interface TrackingModule extends ServiceModule {
  api: TrackingApi;
  /** Device ingestion: the pipeline behind the listeners, and extra listeners (tests and benchmarks take free ports). */
  ingestion: {
    pipeline: IngestPipeline;
    /** Opens a listener beside the configured ones (port 0: a free port), closed by stop(); answers the port bound. */
    listen(protocol: DeviceProtocol, port: number): Promise<number>;
  };
}

/** Creates the module once its migrations have run. */
export async function createTrackingModule(ctx: ModuleContext, deps: TrackingDeps): Promise<TrackingModule> {
  const { config, database, bus, log } = ctx;
  if (!deps.devices) log.warn('tracking: no devices interface in this process; tracking routes answer 502 until one is wired');
  const devices = deps.devices ?? unavailableDevices;
  const users = deps.users ?? unavailableUsers;
  const store = new TrackingStore(database.db as Kysely<TrackingTables>, database.engine);
  const positions = new PositionService(store, devices, users, log);
  const events = new EventService(store, devices);
  const geofences = new GeofenceService(store, devices, users, bus, config.limits);
  const live = new LiveHub({ bus, devices, positions, log }, deps.live);

  const geofenceLimits = new GeofenceLimits({
    containing: (ownerId, point) => geofences.containing(ownerId, point),
    load: (ownerId) => store.geofences.listOfOwners([ownerId]),
  });
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
    settings: engineSettings(config.eventDefaults),
    statusTimeout: config.statusTimeout,
    batchSize: config.ingest.batchSize,
    batchDelayMs: config.ingest.batchDelay,
  });
  const listeners = new DeviceListeners({
    sink: ctx.metrics ? meteredSink(pipeline, ctx.metrics) : pipeline,
    host: config.host,
    idleTimeoutMs: config.statusTimeout * 1000,
    connectionsPerIp: config.ingest.connectionsPerIp,
    log,
    logLevel: config.logLevel,
  });

  // Every instance's ingestion lets go of a deleted device at the hint; one instance removes its data from the fact,
  // after letting go locally too (and finishing the device's writes).
  bus.on('devices.device.deleted', ({ deviceId }) => pipeline.forgetDevice(deviceId));
  ctx.outbox.consume('tracking', 'devices.device.deleted', async ({ deviceId }) => {
    await pipeline.forgetDevice(deviceId);
    await positions.removeDevice(deviceId);
  });
  // Disabled, re-enabled or given other attributes: read again at once rather than within the TTL.
  bus.on('devices.access.changed', ({ deviceIds }) => pipeline.devicesChanged(deviceIds));
  bus.on('auth.user.deleted', ({ userId }) => {
    geofenceLimits.forget(userId);
    geofences.forgetOwner(userId);
  });
  // Speed limits of geofences changed here or in another process: read again on next use.
  bus.on('tracking.geofences.changed', ({ ownerId }) => geofenceLimits.forget(ownerId));
  ctx.outbox.consume('tracking', 'auth.user.deleted', ({ userId }) => geofences.removeUser(userId));
  bus.on('tracking.geofences.changed', (event) => geofences.onChanged(event));

  return {
    name: 'tracking',
    api: {
      storePositions: (batch) => positions.storeBatch(batch),
      storeEvents: (batch) => events.storeBatch(batch),
      geofencesContaining: (ownerId, point) => geofences.containing(ownerId, point),
    },
    async registerRoutes(app) {
      registerHealthRoute(app, '/api/tracking/health', 'tracking', database, 'tracking');
      registerPositionRoutes(app, positions);
      registerEventRoutes(app, events);
      registerGeofenceRoutes(app, geofences);
      await registerLiveRoutes(app, live, [config.publicUrl, config.webUrl]);
    },
    ingestion: {
      pipeline,
      listen: (protocol, port) => listeners.listen(protocol, port),
    },
    async start() {
      // Without the devices module no device can be identified: the listeners would refuse everything.
      if (!deps.devices) {
        log.warn('tracking: no devices interface in this process; the device listeners stay closed');
        return;
      }
      await pipeline.start();
      for (const [protocol, port] of Object.entries(config.devicePorts) as [DeviceProtocol, number][]) {
        if (port > 0) await listeners.listen(protocol, port);
      }
    },
    async stop() {
      await pipeline.stop(() => listeners.close());
    },
  };
}

export const trackingModule = defineModule({
  name: 'tracking',
  migrations: trackingMigrations,
  routeAccess: trackingRouteAccess,
  consumes: ['auth.user.deleted', 'devices.device.deleted'],
  needs: ['devices', 'users'],
  create: createTrackingModule,
});
