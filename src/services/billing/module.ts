import type { Kysely } from 'kysely';
import { Type } from 'typebox';
import { defineModule } from '../../platform/module.ts';
import type { ModuleContext, ServiceModule } from '../../platform/module.ts';
import type { UserDirectory } from '../auth/users/directory.ts';
import { CachedEntitlement } from './entitlement.ts';
import type { Entitlement } from './entitlement.ts';
import { billingMigrations } from './migrations/index.ts';
import { loadPlanCatalog } from './plans/catalog.ts';
import { registerPlanRoutes } from './plans/routes.ts';
import { UsageRegistry } from './plans/usage.ts';
import { createRemoteEntitlement } from './remote-entitlement.ts';
import { BillingRepository } from './repository.ts';
import { billingRouteAccess } from './route-access.ts';
import { registerSubscriptionRoutes } from './routes.ts';
import { BillingService } from './service.ts';
import type { BillingTables } from './tables.ts';
import { createWebhookVerifiers, registerWebhookRoutes } from './webhooks.ts';

export { billingMigrations };
export type { Entitlement, HistoryWindow, PlanFeature, PlanLimit } from './entitlement.ts';
export type { SubscriptionCheck } from './subscription-check.ts';
export type { CountedLimit, PlanView } from './plans/catalog.ts';
export type { PlanGrant } from './plans/grant.ts';
export type { UsageCounter, UsageRegistry } from './plans/usage.ts';

declare module '../../platform/module.ts' {
  interface Provisions {
    /** "Is user U subscribed", which plan applies, and the limit and feature checks of plans (docs/plans.md). */
    entitlement: Entitlement;
  }
  interface RunningModules {
    billing: BillingModule;
  }
}

/** What other modules may use of the billing module. */
export interface BillingApi {
  /** The user's subscription and plan, from memory after the first read, and the checks built on them. */
  entitlement: Entitlement;
}

export interface BillingModule extends ServiceModule {
  api: BillingApi;
}

export interface BillingDependencies {
  /**
   * Tells administrators and whether a user exists: the auth module's directory in-process, a remote one in split
   * mode. Undefined without either (split mode without AUTH_URL): administrators are then not recognised and
   * user ids are not checked.
   */
  users: UserDirectory | undefined;
}

/** Cache of per-user records behind the entitlement API; change notices from any instance evict entries at once. */
const ENTITLEMENT_CACHE = { ttlMs: 60_000, maxEntries: 100_000 };
const PRUNE_INTERVAL_MS = 24 * 3600_000;

const BillingHealth = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
  service: Type.Literal('billing'),
  database: Type.Optional(Type.String()),
});

/** Creates the module once its migrations have run. */
export async function createBillingModule(ctx: ModuleContext, deps: BillingDependencies): Promise<BillingModule> {
  const log = ctx.log.child({ module: 'billing' });
  if (deps.users === undefined) {
    log.warn('billing runs without a user directory: administrators are not recognised and user ids are not checked');
  }
  const catalog = loadPlanCatalog(ctx.config.plans.file);
  const verifiers = createWebhookVerifiers(ctx.config, log);
  const repository = new BillingRepository(ctx.database.db as Kysely<BillingTables>);
  const service = new BillingService({ repository, catalog, users: deps.users, bus: ctx.bus, facts: ctx.outbox, log });
  const usage = new UsageRegistry(log);
  // The counts of modules in other processes; those running here contribute theirs as they are created.
  usage.contributeRemote(ctx.remoteCounts ?? {});
  const entitlement = new CachedEntitlement({
    load: (userId) => service.entitlementState(userId),
    catalog,
    graceDays: ctx.config.plans.graceDays,
    usage,
    ...ENTITLEMENT_CACHE,
  });
  ctx.bus.on('billing.subscription.changed', ({ userId }) => entitlement.invalidate(userId));
  // An administrator is held to no plan: a change of the flag shows at once.
  ctx.bus.on('auth.user.changed', ({ userId }) => entitlement.invalidate(userId));
  let pruneTimer: NodeJS.Timeout | undefined;
  let pruning: Promise<void> = Promise.resolve();

  const prune = () => {
    pruning = service.pruneWebhookEvents().then(
      () => undefined,
      (error: unknown) => log.error({ err: error }, 'pruning old webhook events failed'),
    );
  };

  return {
    name: 'billing',
    api: { entitlement },
    async registerRoutes(app) {
      app.get(
        '/health',
        { schema: { tags: ['billing'], summary: 'Health of the billing service', response: { 200: BillingHealth } } },
        async () => {
          const connected = await ctx.database.ping();
          return {
            status: connected ? ('ok' as const) : ('degraded' as const),
            service: 'billing' as const,
            database: connected ? 'connected' : 'disconnected',
          };
        },
      );
      registerSubscriptionRoutes(app, { service, entitlement, usage });
      registerPlanRoutes(app, { service, entitlement });
      await registerWebhookRoutes(app, { verifiers, service });
    },
    async start() {
      prune();
      pruneTimer = setInterval(prune, PRUNE_INTERVAL_MS);
      pruneTimer.unref();
    },
    async stop() {
      clearInterval(pruneTimer);
      await pruning;
    },
  };
}

export const billingModule = defineModule({
  name: 'billing',
  migrations: billingMigrations,
  routeAccess: billingRouteAccess,
  consumes: {},
  provides: 'entitlement',
  provide: (module: BillingModule) => module.api.entitlement,
  remote: ({ client, bus }) => createRemoteEntitlement({ client, bus }),
  needs: ['users'],
  create: createBillingModule,
});
