import type { ModuleMigrations } from '../../../platform/db/migrations.ts';
import * as notifications from './0001-notifications.ts';
import * as targetAddresses from './0002-target-addresses.ts';
import * as deliveryRecipients from './0003-delivery-recipients.ts';
import * as deliveryLeases from './0004-delivery-leases.ts';

export const notificationsMigrations: ModuleMigrations = {
  module: 'notifications',
  migrations: {
    '0001-notifications': notifications,
    '0002-target-addresses': targetAddresses,
    '0003-delivery-recipients': deliveryRecipients,
    '0004-delivery-leases': deliveryLeases,
  },
};
