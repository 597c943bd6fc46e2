import type { ModuleMigrations } from '../../../platform/db/migrations.ts';
import * as tracking from './0001-tracking.ts';

export const trackingMigrations: ModuleMigrations = {
  module: 'tracking',
  migrations: { '0001-tracking': tracking },
};
