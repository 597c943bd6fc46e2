import type { ModuleMigrations } from '../../../platform/db/migrations.ts';
import * as billing from './0001-billing.ts';
import * as planOverrides from './0002-plan-overrides.ts';

export const billingMigrations: ModuleMigrations = {
  module: 'billing',
  migrations: { '0001-billing': billing, '0002-plan-overrides': planOverrides },
};
