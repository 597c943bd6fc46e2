import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type { Registry } from 'prom-client';
import type { Config, ServiceName } from '../config.ts';
import type { DomainEvents, EventBus, Topic } from './bus.ts';
import type { Database } from './db/database.ts';
import type { ModuleMigrations } from './db/migrations.ts';
import type { RouteAccessTable } from './http/access.ts';
import type { HttpApp } from './http/app.ts';
import type { InternalClient } from './http/internal-client.ts';
import type { UserCounts } from './http/user-counts.ts';
import type { Outbox } from './outbox/outbox.ts';
import type { QueueMetrics } from './work/metrics.ts';

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
  /** Where a module's durable-work queue reports its depth, age, dead letters and failures (platform/work/metrics.ts); its settings are `config.work`. */
  queueMetrics?: QueueMetrics;
  /** The process's one Redis connection for commands (REDIS_URL), shared by every module; the platform opens and closes it. */
  redis?: Redis;
  /** The per-user counts of the modules running in other processes this one can reach (their *_URL); absent where a test builds a module by hand. */
  remoteCounts?: UserCounts;
}

/**
 * A service module as main runs it: its HTTP routes and lifecycle. Its typed interface is its own
 * `api`; everything main must know before creating it is in its descriptor.
 */
export interface ServiceModule {
  name: ServiceName;
  registerRoutes(app: HttpApp): Promise<void> | void;
  start?(): Promise<void>;
  stop?(): Promise<void>;
}

/**
 * What modules offer each other, by name: each providing module adds its entry by declaration
 * merging (`declare module '…/platform/module.ts' { interface Provisions { devices: DeviceAccessApi } }`),
 * so the platform knows no service.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by declaration merging
export interface Provisions {}

export type Provision = keyof Provisions & string;

/** The provisions a module needs: in-process, remote, or undefined where this process can reach neither. */
export type Needs<N extends Provision> = { [K in N]: Provisions[K] | undefined };

/** What a remote adapter is given to reach the module's process. */
export interface RemoteContext {
  /** Calls the module's process (its URL, e.g. DEVICES_URL) with the internal token; the platform closes it. */
  client: InternalClient;
  /** This process's bus. */
  bus: EventBus;
  /** Whether Redis carries the other processes' hints to `bus` (REDIS_URL); without it an adapter cannot follow their changes. */
  hintsArrive: boolean;
  log: FastifyBaseLogger;
}

/**
 * The facts a module acts on and how, given the created module: the topics are known to every
 * process (each records a fact for every consumer, wherever it runs), the handlers run where the
 * module runs. A handler is idempotent (a crash after its effect runs it again) and should stop
 * when `signal` aborts (its timeout passed, or the process stops).
 */
export type FactHandlers<M> = { readonly [T in Topic]?: (module: M, payload: DomainEvents[T], signal: AbortSignal) => Promise<void> | void };

export interface ModuleDescriptor<P extends Provision, N extends Provision, M extends ServiceModule> {
  name: ServiceName;
  migrations: ModuleMigrations;
  /** Every route of the module and who may call it; a gateway fronting the module elsewhere routes by it. */
  routeAccess: RouteAccessTable;
  /** The facts the module acts on and its handler of each (DESIGN §1), declared here once. */
  consumes: FactHandlers<M>;
  /** What the module offers other modules, if anything. */
  provides?: P;
  /** What it offers, from the created module. */
  provide?(module: M): Provisions[P];
  /** The same offer reached over HTTP, for a process that runs other modules needing it but not this one. */
  remote?(ctx: RemoteContext): Provisions[P];
  /** The per-user counts the module keeps (billing's usage), reached over HTTP, for a process that reports them without running it. */
  remoteCounts?(client: InternalClient): UserCounts;
  /** What the module uses of others; those of them running in this process are created first. */
  needs: readonly N[];
  /** Creates the module once its migrations have run. */
  create(ctx: ModuleContext, needs: Needs<N>): Promise<M>;
}

/** Any module's descriptor, as main handles the list of them. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each descriptor's own types are checked where it is defined
export type AnyModuleDescriptor = Omit<ModuleDescriptor<any, any, ServiceModule>, 'consumes'> & { consumes: FactHandlers<any> };

/** A module's static descriptor: plain data and factories, importable without creating anything. */
export function defineModule<M extends ServiceModule, N extends Provision = never, P extends Provision = never>(
  descriptor: ModuleDescriptor<P, N, M>,
): ModuleDescriptor<P, N, M> {
  return descriptor;
}
