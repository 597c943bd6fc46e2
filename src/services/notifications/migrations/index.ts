import type { ModuleMigrations } from '../../../platform/db/migrations.ts';
import * as notifications from './0001-notifications.ts';

export const notificationsMigrations: ModuleMigrations = {
  module: 'notifications',
  migrations: { '0001-notifications': notifications },
};
