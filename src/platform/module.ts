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

/**
 * The created module of each name, added by each module the same way
 * (`interface RunningModules { auth: AuthModule }`): main hands out the modules a process runs
 * (to the CLI, tests and benchmarks) by name, without knowing any of them.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by declaration merging
export interface RunningModules {}

/** The modules of this process by name; undefined for one it does not run. */
export type ModulesByName = { readonly [K in keyof RunningModules]: RunningModules[K] | undefined };

/**
 * What tests replace in a module (its clock, its providers), by the module's name, added by each
 * module that has some the same way (`interface ModuleHooks { notifications: NotificationsTestHooks }`).
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by declaration merging
export interface ModuleHooks {}

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

export interface ModuleDescriptor<P extends Provision, N extends Provision, M extends ServiceModule, H = never> {
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
  /** Creates the module once its migrations have run; `hooks` are what a test replaces (ModuleHooks). */
  create(ctx: ModuleContext, needs: Needs<N>, hooks?: H): Promise<M>;
}

/** Any module's descriptor, as main handles the list of them. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each descriptor's own types are checked where it is defined
export type AnyModuleDescriptor = Omit<ModuleDescriptor<any, any, ServiceModule, any>, 'consumes'> & { consumes: FactHandlers<any> };

/** A module's static descriptor: plain data and factories, importable without creating anything. */
export function defineModule<M extends ServiceModule, N extends Provision = never, P extends Provision = never, H = never>(
  descriptor: ModuleDescriptor<P, N, M, H>,
): ModuleDescriptor<P, N, M, H> {
  return descriptor;
}

/** What the gateway receives from main: it fronts the modules, whether they run here or elsewhere. */
export interface FrontContext {
  config: Config;
  bus: EventBus;
  log: FastifyBaseLogger;
  internalToken: string;
  /** Whether Redis carries the other processes' hints to `bus` (REDIS_URL). */
  hintsArrive: boolean;
  /** The modules this process runs. */
  running: ModulesByName;
  /** Every module's routes and who may call each, for those it forwards to another process. */
  routeAccess: Record<ServiceName, RouteAccessTable>;
  /** Calls the process of a module running elsewhere (its *_URL) with the internal token; the platform closes it. */
  clientOf(name: ServiceName): InternalClient;
}

/** The gateway as main runs it: hooks in front of every route, and routes after the modules' own. */
export interface FrontModule {
  /** Installed before the modules' routes: what every request passes first. */
  registerHooks(app: HttpApp): Promise<void> | void;
  /** Installed after them: what answers the paths this process's modules do not. */
  registerRoutes(app: HttpApp): Promise<void> | void;
  stop?(): Promise<void> | void;
}

/**
 * The gateway's descriptor (DESIGN §1: the gateway is a module too, the one in `SERVICES` that runs
 * no service): it has no tables and acts on no fact, but like the others says what it needs.
 */
export interface FrontDescriptor<N extends Provision, M extends FrontModule> {
  name: 'gateway';
  /** The modules running elsewhere whose routes this process serves through the gateway. */
  fronts(config: Config): ServiceName[];
  /** What it uses of the modules, from this process or over HTTP. */
  needs: readonly N[];
  create(ctx: FrontContext, needs: Needs<N>): Promise<M>;
}

export function defineFront<M extends FrontModule, N extends Provision = never>(descriptor: FrontDescriptor<N, M>): FrontDescriptor<N, M> {
  return descriptor;
}
