import type { EventRow } from '../events/repository.ts';
import { toEventView } from '../events/service.ts';
import { isoTime, positionJson } from '../positions/formats.ts';
import type { PositionRow } from '../positions/repository.ts';
import type { Column } from './downloads/table.ts';
import { fieldColumns } from './downloads/table.ts';
import type { GeofenceVisitRow, StopReportRow, SummaryReportRow, TripReportRow } from './service.ts';

/**
 * Each report's rows as JSON (the API's shapes, times ISO 8601 UTC) and as the columns of a download
 * (the same fields, units in the headers, times in the caller's zone).
 */
export interface ReportView<Row> {
  json(row: Row): string;
  columns: readonly Column<Row>[];
}

function withIsoTimes<Row extends object>(fields: readonly (keyof Row & string)[]): (row: Row) => string {
  return (row) => {
    const copy: Record<string, unknown> = { ...(row as Record<string, unknown>) };
    for (const field of fields) if (typeof copy[field] === 'number') copy[field] = isoTime(copy[field]);
    return JSON.stringify(copy);
  };
}

export const TRIP_VIEW: ReportView<TripReportRow> = {
  json: withIsoTimes<TripReportRow>(['startTime', 'endTime']),
  columns: fieldColumns<TripReportRow>([
    ['deviceId', 'number'], ['deviceName', 'text'], ['startTime', 'time'], ['endTime', 'time'], ['duration', 'number', 'ms'],
    ['distance', 'number', 'm'], ['averageSpeed', 'number', 'kn'], ['maxSpeed', 'number', 'kn'], ['startOdometer', 'number', 'm'],
    ['endOdometer', 'number', 'm'], ['startPositionId', 'number'], ['endPositionId', 'number'], ['startLat', 'number', '°'],
    ['startLon', 'number', '°'], ['endLat', 'number', '°'], ['endLon', 'number', '°'], ['startAddress', 'text'], ['endAddress', 'text'],
    ['spentFuel', 'number'], ['driverUniqueId', 'text'], ['ongoing', 'boolean'],
  ]),
};

export const STOP_VIEW: ReportView<StopReportRow> = {
  json: withIsoTimes<StopReportRow>(['startTime', 'endTime']),
  columns: fieldColumns<StopReportRow>([
    ['deviceId', 'number'], ['deviceName', 'text'], ['startTime', 'time'], ['endTime', 'time'], ['duration', 'number', 'ms'],
    ['positionId', 'number'], ['lat', 'number', '°'], ['lon', 'number', '°'], ['address', 'text'], ['engineHours', 'number', 'ms'],
    ['spentFuel', 'number'], ['ongoing', 'boolean'],
  ]),
};

export const SUMMARY_VIEW: ReportView<SummaryReportRow> = {
  json: withIsoTimes<SummaryReportRow>(['startTime', 'endTime']),
  columns: fieldColumns<SummaryReportRow>([
    ['deviceId', 'number'], ['deviceName', 'text'], ['startTime', 'time'], ['endTime', 'time'], ['distance', 'number', 'm'],
    ['averageSpeed', 'number', 'kn'], ['maxSpeed', 'number', 'kn'], ['engineHours', 'number', 'ms'], ['spentFuel', 'number'],
    ['startOdometer', 'number', 'm'], ['endOdometer', 'number', 'm'],
  ]),
};

export const GEOFENCE_VISIT_VIEW: ReportView<GeofenceVisitRow> = {
  json: withIsoTimes<GeofenceVisitRow>(['enterTime', 'exitTime']),
  columns: fieldColumns<GeofenceVisitRow>([
    ['deviceId', 'number'], ['geofenceId', 'number'], ['geofenceName', 'text'], ['enterTime', 'time'], ['exitTime', 'time'], ['duration', 'number', 'ms'],
  ]),
};

/** The route: positions in the API's Position shape (spec §2.4). */
export const ROUTE_VIEW: ReportView<PositionRow> = {
  json: positionJson,
  columns: [
    ...fieldColumns<PositionRow>([['id', 'number']]),
    { field: 'deviceId', kind: 'number', value: (row) => row.device_id },
    { field: 'protocol', kind: 'text', value: (row) => row.protocol },
    { field: 'serverTime', kind: 'time', value: (row) => row.server_time },
    { field: 'deviceTime', kind: 'time', value: (row) => row.device_time },
    { field: 'fixTime', kind: 'time', value: (row) => row.fix_time },
    { field: 'valid', kind: 'boolean', value: (row) => row.valid === 1 },
    ...fieldColumns<PositionRow>([
      ['latitude', 'number', '°'], ['longitude', 'number', '°'], ['altitude', 'number', 'm'], ['speed', 'number', 'kn'],
      ['course', 'number', '°'], ['accuracy', 'number', 'm'], ['address', 'text'], ['attributes', 'text'],
    ]),
  ],
};

/** Events in the API's Event shape (spec §2.5). */
export const EVENT_VIEW: ReportView<EventRow> = {
  json: (row) => JSON.stringify(toEventView(row)),
  columns: [
    ...fieldColumns<EventRow>([['id', 'number'], ['type', 'text']]),
    { field: 'eventTime', kind: 'time', value: (row) => row.event_time },
    { field: 'deviceId', kind: 'number', value: (row) => row.device_id },
    { field: 'positionId', kind: 'number', value: (row) => row.position_id },
    { field: 'geofenceId', kind: 'number', value: (row) => row.geofence_id },
    { field: 'maintenanceId', kind: 'number', value: (row) => row.maintenance_id },
    ...fieldColumns<EventRow>([['attributes', 'text']]),
  ],
};
