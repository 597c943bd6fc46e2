import type { ModuleMigrations } from '../../../platform/db/migrations.ts';
import * as sessions from './0001-sessions.ts';
import * as users from './0002-users.ts';

export const authMigrations: ModuleMigrations = {
  module: 'auth',
  migrations: { '0001-sessions': sessions, '0002-users': users },
};
