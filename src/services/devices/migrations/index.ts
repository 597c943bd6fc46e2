import type { ModuleMigrations } from '../../../platform/db/migrations.ts';
import * as devices from './0001-devices.ts';
import * as shareInvitations from './0002-share-invitations.ts';

export const devicesMigrations: ModuleMigrations = {
  module: 'devices',
  migrations: { '0001-devices': devices, '0002-share-invitations': shareInvitations },
};
