import type { ModuleMigrations } from '../../../platform/db/migrations.ts';
import * as sessions from './0001-sessions.ts';

export const authMigrations: ModuleMigrations = {
  module: 'auth',
  migrations: { '0001-sessions': sessions },
};
