import { Type } from 'typebox';
import type { ModuleContext, ServiceModule } from '../../platform/module.ts';
import type { ModuleMigrations } from '../../platform/db/migrations.ts';

export const billingMigrations: ModuleMigrations = { module: 'billing', migrations: {} };

const BillingHealth = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
  service: Type.Literal('billing'),
  database: Type.Optional(Type.String()),
});

export async function createBillingModule(ctx: ModuleContext): Promise<ServiceModule> {
  return {
    name: 'billing',
    registerRoutes(app) {
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
    },
  };
}
