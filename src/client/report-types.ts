/** The report routes' rows (DESIGN §5.9, docs/reports.md): times ISO 8601 UTC, distances metres, speeds knots, durations ms. */

export type ReportKind = 'trips' | 'stops' | 'summary' | 'route' | 'events' | 'geofences';
export type ReportFormat = 'csv' | 'xlsx';

export interface ReportQuery {
  /** None: every device you may see (at most REPORT_MAX_DEVICES). */
  deviceIds?: number[];
  from: Date;
  to: Date;
}

export interface SummaryReportQuery extends ReportQuery {
  /** One row per device and day, cut at local midnight of your account's timezone. */
  daily?: boolean;
}

export interface TripReport {
  deviceId: number;
  deviceName: string;
  startTime: string;
  endTime: string;
  duration: number;
  distance: number;
  averageSpeed: number;
  maxSpeed: number;
  startOdometer: number;
  endOdometer: number;
  startPositionId: number;
  endPositionId: number;
  startLat: number;
  startLon: number;
  endLat: number;
  endLon: number;
  startAddress: string | null;
  endAddress: string | null;
  spentFuel: number | null;
  driverUniqueId: string | null;
  /** Still in progress: endTime is its latest position. */
  ongoing: boolean;
}

export interface StopReport {
  deviceId: number;
  deviceName: string;
  startTime: string;
  endTime: string;
  duration: number;
  positionId: number;
  lat: number;
  lon: number;
  address: string | null;
  engineHours: number | null;
  spentFuel: number | null;
  ongoing: boolean;
}

export interface SummaryReport {
  deviceId: number;
  deviceName: string;
  startTime: string;
  endTime: string;
  distance: number;
  averageSpeed: number;
  maxSpeed: number;
  engineHours: number;
  spentFuel: number;
  startOdometer: number;
  endOdometer: number;
}

export interface GeofenceVisit {
  deviceId: number;
  geofenceId: number;
  geofenceName: string | null;
  enterTime: string;
  /** Null while the device is still inside. */
  exitTime: string | null;
  duration: number | null;
}
