import type { ModuleMigrations } from '../../../platform/db/migrations.ts';
import * as tracking from './0001-tracking.ts';
import * as geofencePoints from './0002-geofence-points.ts';

export const trackingMigrations: ModuleMigrations = {
  module: 'tracking',
  migrations: { '0001-tracking': tracking, '0002-geofence-points': geofencePoints },
};
