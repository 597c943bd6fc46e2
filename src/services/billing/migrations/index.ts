import type { ModuleMigrations } from '../../../platform/db/migrations.ts';
import * as billing from './0001-billing.ts';

export const billingMigrations: ModuleMigrations = {
  module: 'billing',
  migrations: { '0001-billing': billing },
};
