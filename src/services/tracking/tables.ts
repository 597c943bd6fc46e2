import type { Generated } from 'kysely';

/** The tables the tracking module owns; no other module reads them. Times are epoch milliseconds. */
export interface TrackingTables {
  positions: PositionsTable;
  events: EventsTable;
  latest_positions: LatestPositionsTable;
  geofences: GeofencesTable;
  commands: CommandsTable;
  saved_commands: SavedCommandsTable;
  device_protocols: DeviceProtocolsTable;
  motion_states: MotionStatesTable;
  motion_checkpoints: MotionCheckpointsTable;
  trips: TripsTable;
  stops: StopsTable;
  summary_hours: SummaryHoursTable;
}

export interface CommandsTable {
  id: Generated<number>;
  device_id: number;
  /** Who sent it. */
  user_id: number;
  type: string;
  /** JSON object. */
  attributes: string;
  /** queued, sent, delivered, expired, failed. */
  status: string;
  created_at: number;
  sent_at: number | null;
  delivered_at: number | null;
}

export interface SavedCommandsTable {
  id: Generated<number>;
  user_id: number;
  /** 0/1. */
  by_administrator: number;
  description: string;
  type: string;
  /** JSON object. */
  attributes: string;
  created_at: number;
}

export interface DeviceProtocolsTable {
  device_id: number;
  protocol: string;
  updated_at: number;
}

export interface PositionsTable {
  id: Generated<number>;
  /** A device of the devices module (no foreign key: devices may live in another database). */
  device_id: number;
  protocol: string | null;
  server_time: number;
  device_time: number | null;
  fix_time: number;
  /** 0/1. */
  valid: number;
  latitude: number;
  longitude: number;
  altitude: number;
  /** Knots. */
  speed: number;
  course: number;
  accuracy: number;
  address: string | null;
  /** JSON object, always written by this module with JSON.stringify. */
  attributes: string;
}

export interface EventsTable {
  id: Generated<number>;
  type: string;
  event_time: number;
  device_id: number;
  position_id: number | null;
  geofence_id: number | null;
  maintenance_id: number | null;
  /** JSON object. */
  attributes: string;
}

export interface LatestPositionsTable {
  device_id: number;
  position_id: number;
  fix_time: number;
}

export interface GeofencesTable {
  id: Generated<number>;
  /** The user who created it (auth module); the geofence applies to every device this user owns. */
  owner_id: number;
  name: string;
  description: string | null;
  /** Normalised area text (formatArea). */
  area: string;
  /** Points of the area (a circle counts 1): what MAX_GEOFENCE_POINTS_PER_USER adds up. */
  points: number;
  calendar_id: number | null;
  /** JSON object. */
  attributes: string;
  created_at: number;
  updated_at: number;
}

/** Where a device's segmentation stands (docs/reports.md). */
export interface MotionStatesTable {
  device_id: number;
  /** The fix time and id of the last position the machine took. */
  fix_time: number;
  position_id: number;
  /** JSON: the motion machine's state after that position. */
  state: string;
  updated_at: number;
}

/** The motion machine's state before the first position (fix time, id) of each UTC hour of a device. */
export interface MotionCheckpointsTable {
  device_id: number;
  fix_time: number;
  position_id: number;
  /** JSON, as motion_states.state. */
  state: string;
}

/** Distances in metres, speeds in knots, durations in milliseconds. */
export interface TripsTable {
  id: Generated<number>;
  device_id: number;
  start_time: number;
  end_time: number;
  start_position_id: number;
  end_position_id: number;
  start_lat: number;
  start_lon: number;
  end_lat: number;
  end_lon: number;
  distance: number;
  average_speed: number;
  max_speed: number;
  start_odometer: number;
  end_odometer: number;
  spent_fuel: number | null;
  driver_unique_id: string | null;
  start_address: string | null;
  end_address: string | null;
  /** 0/1: still in progress, ending at the latest position. */
  ongoing: number;
}

export interface StopsTable {
  id: Generated<number>;
  device_id: number;
  start_time: number;
  end_time: number;
  position_id: number;
  lat: number;
  lon: number;
  engine_hours: number | null;
  spent_fuel: number | null;
  address: string | null;
  /** 0/1. */
  ongoing: number;
}

/** One device's positions within one UTC hour, summed. */
export interface SummaryHoursTable {
  device_id: number;
  hour_start: number;
  first_time: number;
  last_time: number;
  positions: number;
  distance: number;
  max_speed: number;
  speed_sum: number;
  start_odometer: number;
  end_odometer: number;
  engine_hours: number;
  spent_fuel: number;
}
