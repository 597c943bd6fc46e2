import type { Kysely } from 'kysely';
import type { Database } from '../../platform/db/database.ts';
import { defineModule } from '../../platform/module.ts';
import type { ModuleContext, ServiceModule } from '../../platform/module.ts';
import { registerHealthRoute } from '../../platform/http/health.ts';
import { registerUserCountsRoute, remoteUserCounts } from '../../platform/http/user-counts.ts';
import type { UserCounts } from '../../platform/http/user-counts.ts';
import { chooseRateLimiter } from '../../platform/rate-limit.ts';
import type { UserDirectory } from '../auth/users/directory.ts';
import type { Entitlement } from '../billing/module.ts';
import type { DeviceAccessApi } from './access.ts';
import { DeviceCaches } from './caches.ts';
import { unavailableUserDirectory } from '../auth/users/directory.ts';
import { registerClaimTokenRoutes } from './claim-tokens/routes.ts';
import { ClaimTokenService } from './claim-tokens/service.ts';
import { DeviceAccessResolver } from './grants.ts';
import { registerInternalDeviceRoutes } from './internal/routes.ts';
import { devicesMigrations } from './migrations/index.ts';
import { remoteDevices } from './remote.ts';
import { devicesRouteAccess } from './route-access.ts';
import { registerDeviceRoutes } from './routes.ts';
import { DeviceService } from './service.ts';
import { SharingService } from './sharing.ts';
import { DevicesStore } from './store.ts';
import { toRecord } from './views.ts';
import type { DevicesTables } from './tables.ts';

export { devicesMigrations };

/** The devices' attributes read from a database holding the devices module's tables: for an administrator's command line tool. */
export function localDeviceAttributes(database: Database): (ids: readonly number[]) => Promise<Map<number, Readonly<Record<string, unknown>>>> {
  const store = new DevicesStore(database.db as Kysely<DevicesTables>);
  return async (ids) => new Map((await store.devices.findByIds(ids)).map((row) => [row.id, toRecord(row).attributes]));
}

declare module '../../platform/module.ts' {
  interface Provisions {
    /** "Who may see which device", and the device facts tracking maintains. */
    devices: DeviceAccessApi;
  }
  interface RunningModules {
    devices: DevicesModule;
  }
}

export interface DevicesDeps {
  /** The auth module's directory; undefined when auth runs in another process and no remote directory is given. */
  users: UserDirectory | undefined;
  /** Billing's plans; undefined when billing runs in another process and no BILLING_URL is given (no plan limits then). */
  entitlement?: Entitlement | undefined;
}

/** What devices counts per user for billing's usage: the devices they own, the shares of those devices. */
const DEVICE_COUNTS = ['devices', 'shares'] as const;
type DeviceCount = (typeof DEVICE_COUNTS)[number];
const DEVICES_USAGE_ROUTE = '/api/devices/internal/usage/:userId';

export interface DevicesModule extends ServiceModule {
  api: DeviceAccessApi;
  /** Removes a deleted account's devices and shares (the `auth.user.deleted` fact). */
  removeUserData(userId: number): Promise<void>;
}

/** Creates the module once its migrations have run. */
export async function createDevicesModule(ctx: ModuleContext, deps: DevicesDeps): Promise<DevicesModule> {
  const { config, database, bus, log } = ctx;
  if (!deps.users) log.warn('devices: no user directory in this process; device routes answer 502 until one is wired');
  const users = deps.users ?? unavailableUserDirectory;
  // The validate-token counters: shared by every instance through REDIS_URL when set, else this process's own.
  const rateLimiter = chooseRateLimiter(config, ctx.redis);
  const store = new DevicesStore(database.db as Kysely<DevicesTables>);
  // Every instance follows the changes through the bus; several instances on one database need REDIS_URL.
  const caches = new DeviceCaches(bus);
  const plans = deps.entitlement;
  if (!plans) log.warn('devices: no billing module in this process and no BILLING_URL; plan limits are not enforced');
  const devices = new DeviceService(store, users, bus, caches, ctx.outbox, { registration: config.deviceRegistration, devicesPerUser: config.limits.devicesPerUser, plans });
  const sharing = new SharingService(store, users, bus, config.limits, plans);
  const counts: UserCounts<DeviceCount> = {
    devices: (userId) => store.devices.countOwnedBy(userId),
    shares: (userId) => store.devices.countSharesGrantedBy(userId),
  };
  plans?.usage?.contribute(counts);
  const claimTokens = new ClaimTokenService(store, bus);
  const access = new DeviceAccessResolver(store.devices, users, caches.grants);

  const api: DeviceAccessApi = {
    accessFor: (userId, scope) => access.accessFor(userId, scope),
    exists: (deviceId) => devices.exists(deviceId),
    findByUniqueId: (uniqueId) => devices.findByUniqueId(uniqueId),
    getDevices: (ids) => devices.getDevices(ids),
    viewsFor: (deviceAccess, ids) => devices.viewsFor(deviceAccess, ids),
    updateStatus: (deviceId, update) => devices.updateStatus(deviceId, update),
    updateStatuses: (batch) => devices.updateStatuses(batch),
  };

  return {
    name: 'devices',
    api,
    removeUserData: (userId) => devices.removeUserData(userId),
    registerRoutes(app) {
      registerHealthRoute(app, 'devices', database);
      registerDeviceRoutes(app, { devices, sharing, claimTokens, rateLimiter });
      registerClaimTokenRoutes(app, { claimTokens });
      registerInternalDeviceRoutes(app, { access, devices: api });
      registerUserCountsRoute(app, DEVICES_USAGE_ROUTE, counts);
    },
  };
}

export const devicesModule = defineModule({
  name: 'devices',
  migrations: devicesMigrations,
  routeAccess: devicesRouteAccess,
  consumes: {
    'auth.user.deleted': (module, { userId }) => module.removeUserData(userId),
  },
  provides: 'devices',
  provide: (module: DevicesModule) => module.api,
  remote: ({ client }) => remoteDevices(client),
  remoteCounts: (client) => remoteUserCounts(client, DEVICES_USAGE_ROUTE, DEVICE_COUNTS),
  needs: ['users', 'entitlement'],
  create: createDevicesModule,
});
