import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.ts';
import { EventBus } from '../../src/platform/bus.ts';
import type { ModuleContext } from '../../src/platform/module.ts';
import { Outbox } from '../../src/platform/outbox/outbox.ts';
import { FACT_CONSUMERS } from '../../src/modules.ts';
import { createServer } from '../../src/server.ts';
import type { Server } from '../../src/server.ts';
import type { NotificationsTestHooks } from '../../src/services/notifications/module.ts';
import type { TrackingTestHooks } from '../../src/services/tracking/module.ts';
import { PROTOCOL_REGISTRY } from '../../src/services/tracking/protocols/registry.ts';
import { signIn } from './api.ts';
import type { SharedTestDatabase, TestEngine } from './engines.ts';

export const TEST_INTERNAL_TOKEN = 'test-internal-token-0123456789abcdef';

/**
 * This test process's own Redis channel for domain events: test files run side by side against one
 * Redis, each on databases of its own, and must not hear each other (ids collide across databases).
 */
export const TEST_EVENT_CHANNEL = `trackstack-test:${process.pid}:${Date.now()}`;

/** Device listeners off: tests running side by side would otherwise contend for Traccar's ports. */
export const NO_DEVICE_LISTENERS: Readonly<Record<string, string>> = Object.fromEntries(PROTOCOL_REGISTRY.map(({ port }) => [port.variable, '0']));

/** The metrics listener off, for the same reason (METRICS_PORT 9464). */
export const NO_METRICS = { METRICS_PORT: '0' } as const;

/** The environment of instances scaled out on one database and one Redis. */
export function scaledOutEnv(shared: SharedTestDatabase, redisUrl: string): Record<string, string> {
  return {
    DATA_DIR: shared.dataDir,
    DATABASE_URL: shared.url,
    REDIS_URL: redisUrl,
    EVENT_CHANNEL: TEST_EVENT_CHANNEL,
    LOG_LEVEL: 'silent',
    INTERNAL_TOKEN: TEST_INTERNAL_TOKEN,
    RATE_LIMITS: 'off',
    ...NO_DEVICE_LISTENERS,
    ...NO_METRICS,
  };
}

/**
 * A gateway-only process in front of `upstream`, which serves every module: its data folder is the
 * services' (same keys), with no listeners beyond the gateway's.
 */
export function gatewayOnlyEnv(upstream: string, dataDir: string, env: Record<string, string> = {}): Record<string, string> {
  return {
    SERVICES: 'gateway',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    INTERNAL_TOKEN: TEST_INTERNAL_TOKEN,
    AUTH_URL: upstream,
    DEVICES_URL: upstream,
    TRACKING_URL: upstream,
    BILLING_URL: upstream,
    NOTIFICATIONS_URL: upstream,
    ...NO_DEVICE_LISTENERS,
    ...NO_METRICS,
    ...env,
  };
}

export interface TestServer extends Server {
  dataDir: string;
  /** Creates a verified user and a session, and returns its bearer token: `signIn` (./api.ts). */
  login(user: { email: string; administrator?: boolean }): Promise<TestLogin>;
  dispose(): Promise<void>;
}

export interface TestLogin {
  userId: number;
  sessionId: string;
  token: string;
  authorization: { authorization: string };
}

/** The all-in-one server on a fresh database of the engine, configured as from the environment. */
/** What a test replaces: notifications' push providers, clock and host resolution; tracking's clock. */
export interface TestServerOptions {
  pushSenders?: NotificationsTestHooks['pushSenders'];
  notificationsClock?: NotificationsTestHooks['now'];
  notificationsLookup?: NotificationsTestHooks['lookup'];
  trackingClock?: TrackingTestHooks['clock'];
}

export async function startTestServer(engine: TestEngine, env: Record<string, string> = {}, options: TestServerOptions = {}): Promise<TestServer> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'trackstack-test-'));
  const testDatabase = await engine.createDatabase();
  const config = loadConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: testDatabase.url,
    LOG_LEVEL: 'silent',
    INTERNAL_TOKEN: TEST_INTERNAL_TOKEN,
    EVENT_CHANNEL: TEST_EVENT_CHANNEL,
    ...NO_DEVICE_LISTENERS,
    ...NO_METRICS,
    ...env,
  });
  const hooks = {
    notifications: { pushSenders: options.pushSenders, now: options.notificationsClock, lookup: options.notificationsLookup },
    tracking: { clock: options.trackingClock },
  };
  const server = await createServer(config, { database: testDatabase.database, hooks }).catch(async (error: unknown) => {
    await testDatabase.dispose();
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  });
  return {
    ...server,
    dataDir,
    login: (user) => signIn(server, user.email, { administrator: user.administrator }),
    async dispose() {
      await server.close();
      await testDatabase.dispose();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * The context of another instance of some modules on the test server's database, as a second
 * process would have. It shares `bus` (the server's by default) and consumes no facts: the
 * server's own modules do.
 */
export function instanceContext(server: TestServer, bus: EventBus = server.bus): ModuleContext {
  const database = server.database;
  if (!database) throw new Error('the test server runs no module');
  const outbox = new Outbox({ database, consumers: FACT_CONSUMERS, bus: new EventBus(server.app.log), log: server.app.log });
  return { config: server.config, database, bus, outbox, log: server.app.log, internalToken: TEST_INTERNAL_TOKEN };
}
