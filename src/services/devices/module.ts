import type { ModuleContext, ServiceModule } from '../../platform/module.ts';
import type { ModuleMigrations } from '../../platform/db/migrations.ts';
import { registerHealthRoute } from '../../platform/http/health.ts';

export const devicesMigrations: ModuleMigrations = { module: 'devices', migrations: {} };

export async function createDevicesModule(ctx: ModuleContext): Promise<ServiceModule> {
  return {
    name: 'devices',
    registerRoutes(app) {
      registerHealthRoute(app, '/api/devices/health', 'device', ctx.database, 'devices');
    },
  };
}
