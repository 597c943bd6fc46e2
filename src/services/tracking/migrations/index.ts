import type { ModuleMigrations } from '../../../platform/db/migrations.ts';
import * as tracking from './0001-tracking.ts';
import * as geofencePoints from './0002-geofence-points.ts';
import * as commands from './0003-commands.ts';
import * as timePartitions from './0004-time-partitions.ts';
import * as reports from './0005-reports.ts';
import * as motionCheckpoints from './0006-motion-checkpoints.ts';

export const trackingMigrations: ModuleMigrations = {
  module: 'tracking',
  migrations: {
    '0001-tracking': tracking,
    '0002-geofence-points': geofencePoints,
    '0003-commands': commands,
    '0004-time-partitions': timePartitions,
    '0005-reports': reports,
    '0006-motion-checkpoints': motionCheckpoints,
  },
};
