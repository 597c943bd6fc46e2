import type { Kysely } from 'kysely';
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
import { registerPositionRoutes } from './positions/routes.ts';
import { PositionService } from './positions/service.ts';
import { TrackingStore } from './store.ts';
import type { TrackingTables } from './tables.ts';

export { trackingMigrations } from './migrations/index.ts';

export interface TrackingDeps {
  /** The devices module's interface ("who may see what"); undefined when devices runs in another process and no remote one is given. */
  devices: DeviceAccessApi | undefined;
  /** The auth module's directory (read-only accounts may not change geofences or delete positions). */
  users: UserDirectory | undefined;
}

export interface TrackingModule extends ServiceModule {
  api: TrackingApi;
}

/** Creates the module once its migrations have run. */
export async function createTrackingModule(ctx: ModuleContext, deps: TrackingDeps): Promise<TrackingModule> {
  const { database, bus, log } = ctx;
  if (!deps.devices) log.warn('tracking: no devices interface in this process; tracking routes answer 502 until one is wired');
  const devices = deps.devices ?? unavailableDevices;
  const users = deps.users ?? unavailableUsers;
  const store = new TrackingStore(database.db as Kysely<TrackingTables>, database.engine);
  const positions = new PositionService(store, devices, users, log);
  const events = new EventService(store, devices);
  const geofences = new GeofenceService(store, devices, users, bus);

  bus.on('devices.device.deleted', ({ deviceId }) => positions.removeDevice(deviceId));
  bus.on('auth.user.deleted', ({ userId }) => geofences.removeUser(userId));
  bus.on('tracking.geofences.changed', (event) => geofences.onChanged(event));

  return {
    name: 'tracking',
    api: {
      storePositions: (batch) => positions.storeBatch(batch),
      storeEvents: (batch) => events.storeBatch(batch),
      geofencesContaining: (ownerId, point) => geofences.containing(ownerId, point),
    },
    registerRoutes(app) {
      registerHealthRoute(app, '/api/tracking/health', 'tracking', database, 'tracking');
      registerPositionRoutes(app, positions);
      registerEventRoutes(app, events);
      registerGeofenceRoutes(app, geofences);
    },
  };
}
