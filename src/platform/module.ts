import type { FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import type { Config, ServiceName } from '../config.ts';
import type { EventBus } from './bus.ts';
import type { Database } from './db/database.ts';
import type { HttpApp } from './http/app.ts';
import type { Outbox } from './outbox/outbox.ts';

/** What every service module receives from main. */
export interface ModuleContext {
  config: Config;
  database: Database;
  bus: EventBus;
  /** Facts other modules must act on, recorded in the transaction of the change (DESIGN §1). */
  outbox: Outbox;
  log: FastifyBaseLogger;
  internalToken: string;
  /** Where the module registers its Prometheus metrics (platform/metrics.ts); absent where a test builds a module by hand. */
  metrics?: Registry;
}

/**
 * A service module as main runs it: its HTTP routes and lifecycle. Its migrations are a separate
 * export (they run before the module is created); its typed interface is its own `api`.
 */
export interface ServiceModule {
  name: ServiceName;
  registerRoutes(app: HttpApp): Promise<void> | void;
  start?(): Promise<void>;
  stop?(): Promise<void>;
}
