import type { ModuleContext, ServiceModule } from '../../platform/module.ts';
import type { ModuleMigrations } from '../../platform/db/migrations.ts';
import { registerHealthRoute } from '../../platform/http/health.ts';

export const trackingMigrations: ModuleMigrations = { module: 'tracking', migrations: {} };

export async function createTrackingModule(ctx: ModuleContext): Promise<ServiceModule> {
  return {
    name: 'tracking',
    registerRoutes(app) {
      registerHealthRoute(app, '/api/tracking/health', 'tracking', ctx.database, 'tracking');
    },
  };
}
