import type { ModuleMigrations } from '../../../platform/db/migrations.ts';
import * as devices from './0001-devices.ts';

export const devicesMigrations: ModuleMigrations = {
  module: 'devices',
  migrations: { '0001-devices': devices },
};
